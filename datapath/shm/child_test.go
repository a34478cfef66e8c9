package shm_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Helper processes: the test binary re-executed with SHM_TEST_CHILD set
// runs one of these instead of the tests (TestMain), talking to the parent
// test over shm. They print "ready" once listening and exit within
// childLife.
const childLife = 60 * time.Second

func runChild() bool {
	mode := os.Getenv("SHM_TEST_CHILD")
	if mode == "" {
		return false
	}
	var err error
	switch mode {
	case "echo":
		err = childEcho()
	case "hold":
		err = childHold()
	default:
		err = fmt.Errorf("unknown child mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func childEndpoint(local netip.AddrPort) (*shm.Endpoint, *mem.Pool, error) {
	space, err := mem.NewSpace(mem.SpaceConfig{Size: 256 << 20, Shared: true})
	if err != nil {
		return nil, nil, err
	}
	app, err := mem.NewPool(mem.PoolConfig{Name: "child app", Space: space})
	if err != nil {
		return nil, nil, err
	}
	ep, err := shm.Open(datapath.Config{Local: local, Options: shm.Options{Namespace: os.Getenv("SHM_TEST_NS"), Spaces: []*mem.Space{space}}})
	return ep, app, err
}

// childEcho serves at $SHM_TEST_ADDR: a packet starting with 'R' comes
// back as it is (copied); one starting with 'O' holds a ListBuffers after
// that byte, decoded in place and answered with the same values sent
// zero-copy from the child's own shared space; 'Q' ends it.
func childEcho() error {
	local, err := netip.ParseAddrPort(os.Getenv("SHM_TEST_ADDR"))
	if err != nil {
		return err
	}
	ep, app, err := childEndpoint(local)
	if err != nil {
		return err
	}
	defer ep.Close()
	fmt.Println("ready")
	a := wire.NewArena()
	a.Threshold = 512
	pk := make([]datapath.Segmented, 16)
	deadline := time.Now().Add(childLife)
	for time.Now().Before(deadline) {
		n, err := ep.RecvSegments(pk)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := ep.Wait(10 * time.Millisecond); err != nil {
				return err
			}
			continue
		}
		for _, p := range pk[:n] {
			head := p.Segs[0]
			switch {
			case len(head) > 0 && head[0] == 'Q':
				_ = p.Hold.Release()
				return ep.Flush()
			case len(head) > 0 && head[0] == 'O':
				m := cf.NewListBuffers(a)
				if err := wire.DecodeSegments(m, p.Segs, 1, p.Hold); err != nil {
					return err
				}
				l, err := m.GetMessages()
				if err != nil {
					return err
				}
				out := cf.NewListBuffers(a)
				ol := out.InitMessages(l.Len())
				var bufs []mem.Buf
				for i := range l.Len() {
					b, err := app.AllocCopy(l.At(i))
					if err != nil {
						return err
					}
					ol.AppendBuf(b)
					bufs = append(bufs, b)
				}
				if err := ep.SendObject(p.From, []byte{'O'}, out); err != nil {
					return err
				}
				for _, b := range bufs {
					_ = b.Release()
				}
			default:
				if err := ep.Send(p.From, p.AppendTo(nil)); err != nil {
					return err
				}
			}
			_ = p.Hold.Release()
		}
		if err := ep.Flush(); err != nil {
			return err
		}
		_ = a.Reset()
	}
	return errors.New("echo child: lifetime over")
}

// childHold sends 'G' requests to $SHM_TEST_ADDR and keeps every response
// received (segmented, never released), printing "held N" after each; it
// never exits on its own before childLife: the parent kills it.
func childHold() error {
	server, err := netip.ParseAddrPort(os.Getenv("SHM_TEST_ADDR"))
	if err != nil {
		return err
	}
	ep, _, err := childEndpoint(netip.AddrPort{})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	pk := make([]datapath.Segmented, 16)
	held := 0
	deadline := time.Now().Add(childLife)
	for sent := 0; time.Now().Before(deadline); {
		if sent < 8 {
			if err := ep.Send(server, []byte{'G'}); err != nil {
				return err
			}
			sent++
			if err := ep.Flush(); err != nil {
				return err
			}
		}
		n, err := ep.RecvSegments(pk)
		if err != nil {
			return err
		}
		if n > 0 {
			held += n
			fmt.Println("held", held) // never released
		}
		if err := ep.Wait(10 * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// child starts the test binary as a helper process in mode and waits for
// its "ready". The process is killed at the test's end.
func child(t testing.TB, mode, addr string) (*exec.Cmd, *chanLines) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SHM_TEST_CHILD="+mode, "SHM_TEST_ADDR="+addr, "SHM_TEST_NS="+testNS)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("child stderr: %s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	lines := make(chan string, 4096)
	go func() {
		defer close(done)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads that far
			}
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	select {
	case l, ok := <-lines:
		if !ok || l != "ready" {
			t.Fatalf("child %s: first line %q, want ready (stderr: %s)", mode, l, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("child %s not ready within 30s", mode)
	}
	return cmd, &chanLines{lines: lines}
}

// chanLines hands the child's later stdout lines to the test.
type chanLines struct{ lines chan string }

// next returns the child's next line, or false after timeout or EOF.
func (c *chanLines) next(timeout time.Duration) (string, bool) {
	select {
	case l, ok := <-c.lines:
		return l, ok
	case <-time.After(timeout):
		return "", false
	}
}
