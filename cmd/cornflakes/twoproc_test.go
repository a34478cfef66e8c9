package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// child is a cornflakes command running in another process (this test
// binary, see childArgsEnv).
type child struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	lines  chan string // stdout, line by line
}

// startChild runs `cornflakes args...` in a new process.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{lines: make(chan string, 16)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\n"))
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// waitLine returns the first stdout line matching re (its submatches).
func (c *child) waitLine(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited before printing %v; stderr:\n%s", re, c.stderr.String())
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("no line matching %v within %v; stderr:\n%s", re, timeout, c.stderr.String())
		}
	}
}

// interrupt stops the child as Ctrl-C does and waits for it to exit
// (killing it after timeout).
func (c *child) interrupt(t *testing.T, timeout time.Duration) error {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("child did not exit within %v of SIGINT", timeout)
	}
}

var listeningRE = regexp.MustCompile(`kv serve: listening on (\S+) \((\w+),`)

// `cornflakes kv serve --datapath X` and `cornflakes bench --server ...
// --datapath X` in two processes: the load generator preloads the workload
// into the server, checks every response of the warm-up, and measures
// every serializer; the server counts the requests and exits cleanly.
func TestKVServeBenchTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, dp := range []string{"udp", "shm"} {
		t.Run(dp, func(t *testing.T) {
			if !slices.Contains(datapath.Kinds(), dp) {
				t.Skipf("datapath %s not linked in", dp)
			}
			srv := startChild(t, "kv", "serve", "--datapath", dp, "--addr", "127.0.0.1:0", "--duration", "2m")
			m := srv.waitLine(t, listeningRE, 30*time.Second)
			addr := m[1]
			if m[2] != dp {
				t.Fatalf("server runs %s, want %s", m[2], dp)
			}
			var out, errb bytes.Buffer
			code := run([]string{"bench", "--json", "--quick", "--datapath", dp, "--server", addr, "--local", "127.0.0.1",
				"--workload", "ycsb:records=200,shape=2x2048,layout=multi", "--duration", "100ms", "--budget", "3s",
				"--serializers", "cornflakes,protobuf,vtprotobuf,flatbuffers,capnp", "--busy-poll=false", "--out", t.TempDir()}, &out, &errb)
			if code != 0 {
				t.Fatalf("bench: exit %d, stderr:\n%s\nserver stderr:\n%s", code, errb.String(), srv.stderr.String())
			}
			var recs []map[string]any
			if err := json.Unmarshal(out.Bytes(), &recs); err != nil || len(recs) != 5 {
				t.Fatalf("%d records (%v), want 5 (cornflakes, protobuf, vtprotobuf, flatbuffers, capnp):\n%s", len(recs), err, out.String())
			}
			for _, r := range recs {
				if r["datapath"] != dp || r["max_rps_saturated"].(float64) <= 0 {
					t.Errorf("record %v: datapath %v, saturated %v", r["serializer"], r["datapath"], r["max_rps_saturated"])
				}
			}
			if err := srv.interrupt(t, 20*time.Second); err != nil {
				t.Fatalf("server: %v; stderr:\n%s", err, srv.stderr.String())
			}
			st := regexp.MustCompile(`kv serve: (\d+) requests, (\d+) errors`).FindStringSubmatch(srv.stderr.String())
			if st == nil || st[1] == "0" || st[2] != "0" {
				t.Fatalf("server's counts %v; stderr:\n%s", st, srv.stderr.String())
			}
		})
	}
}
