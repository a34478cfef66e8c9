package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRESPFlags: bad subcommands and flags are usage errors (exit 2), and
// the bench flags are checked before anything starts.
func TestRESPFlags(t *testing.T) {
	for _, args := range [][]string{
		{"resp"},
		{"resp", "nosuch"},
		{"resp", "serve", "extra"},
		{"resp", "serve", "--threshold", "-5"},
		{"resp", "serve", "--nosuch"},
		{"resp", "serve", "--user", "x"},
		{"resp", "serve", "--user", "x:y:rw"},
		{"resp", "serve", "--maxmemory", "12q"},
		{"resp", "serve", "--maxmemory-policy", "volatile-ttl", "--addr", "127.0.0.1:0"},
		{"resp", "bench", "--sizes", "64,x"},
		{"resp", "bench", "--sizes", "0"},
		{"resp", "bench", "--pipelines", "2000"},
		{"resp", "bench", "-c", "0"},
		{"resp", "bench", "--bytes", "0"},
		{"resp", "bench", "--bytes", "12q"},
		{"resp", "bench", "extra"},
		{"resp", "bench", "--procs", "0"},
		{"resp", "bench", "--threads", "-1"},
		{"resp", "bench", "--rounds", "-1"},
		{"resp", "bench", "--client", "nosuch"},
		{"resp", "bench", "--tests", "get"},
		{"resp", "bench", "--tests", "set,nosuch"},
		{"resp", "load", "-P", "0"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2; stderr:\n%s", args, code, errb.String())
		}
		if errb.Len() == 0 {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
	if v, err := intList(" 64, 4096", 1, 1<<20); err != nil || len(v) != 2 || v[1] != 4096 {
		t.Errorf("intList: %v %v", v, err)
	}
}

// TestRESPServe runs `cornflakes resp serve` on a free port, talks RESP to
// it and stops it as SIGINT would.
func TestRESPServe(t *testing.T) {
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	respServeReady = func(addr string) { ready <- addr }
	oldCtx := respServeContext
	respServeContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer func() { respServeReady, respServeContext = nil, oldCtx }()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"resp", "serve", "--addr", "127.0.0.1:0", "--pool-mb", "64", "--threshold", "0"}, &out, &errb)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exit %d before serving: %s", code, errb.String())
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("SET k hello\r\nGET k\r\nQUIT\r\n")); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	_, _ = got.ReadFrom(c)
	_ = c.Close()
	if got.String() != "+OK\r\n$5\r\nhello\r\n+OK\r\n" {
		t.Fatalf("replies %q", got.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "listening on "+addr+" (zero-copy threshold 1 B)") {
		t.Errorf("stdout: %q", out.String())
	}
	if !strings.Contains(errb.String(), "3 commands, 0 errors, 1 values (5 bytes) sent zero-copy") {
		t.Errorf("stderr: %q", errb.String())
	}
}

// TestRESPBenchTiny runs `cornflakes resp bench --json` for one small
// variant against our server and a real redis-server, when both redis
// binaries are installed, and checks the records and files.
func TestRESPBenchTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, b := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed (apt-get install redis-server redis-tools); CI installs it", b)
		}
	}
	before := redisPIDs()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"resp", "bench", "--json", "--sizes", "64", "--pipelines", "4", "-n", "500", "-c", "2", "--rounds", "2", "--out", dir,
		"--client", "redis-benchmark"}, &out, &errb) // native runs this executable: a test binary here (respbench tests it)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("stdout is not one JSON array: %v\n%s", err, out.String())
	}
	// Per test: rps, server and client CPU per request and CPUs busy of
	// both servers, the ratio, and the CPU ratio when both servers' CPU
	// times were measurable.
	if len(recs) < 4*11 || len(recs) > 4*12 {
		t.Fatalf("%d records, want 44-48: %v", len(recs), recs)
	}
	servers := map[string]int{}
	for _, r := range recs {
		for _, k := range []string{"test", "variant", "server", "value", "unit", "min", "max", "rounds", "client"} {
			if _, ok := r[k]; !ok {
				t.Errorf("record lacks %q: %v", k, r)
			}
		}
		v := r["value"].(float64)
		lo, hi, n := r["min"].(float64), r["max"].(float64), r["rounds"].(float64)
		if r["variant"] != "d64/P4" || !(v > 0 || v == 0 && strings.HasSuffix(r["unit"].(string), "_per_req")) ||
			!(lo <= v && v <= hi) || n != 2 {
			t.Errorf("record %v", r)
		}
		servers[r["server"].(string)+"/"+r["unit"].(string)]++
	}
	if servers["cornflakes/rps"] != 4 || servers["redis/rps"] != 4 || servers["cornflakes/redis/ratio"] != 4 ||
		servers["cornflakes/server_us_per_req"] != 4 || servers["redis/client_us_per_req"] != 4 {
		t.Errorf("records per server: %v", servers)
	}
	for _, name := range []string{"resp-bench.json", "resp-bench.csv", "resp-bench.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !strings.Contains(errb.String(), "respbench: redis ") {
		t.Errorf("no progress lines on stderr:\n%s", errb.String())
	}
	for pid := range redisPIDs() {
		if !before[pid] {
			t.Errorf("redis-server %s started by the bench is still running", pid)
		}
	}
}

// redisPIDs returns the process ids of the running redis-servers.
func redisPIDs() map[string]bool {
	out, _ := exec.Command("pgrep", "-x", "redis-server").Output()
	pids := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		pids[f] = true
	}
	return pids
}
