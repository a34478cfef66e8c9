package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// testServer is a server on a loopback port over a pool the test checks:
// when the test ends the server is closed (which frees every value) and
// memtest fails the test if any reference is still held.
type testServer struct {
	srv  *Server
	pool *mem.Pool
	addr string
}

func newTestServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	// Unlocked, like the server's own pool (newOwnPool).
	sp, err := mem.NewSpace(mem.SpaceConfig{Size: 256 << 20, Hugepages: mem.HugepagesNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close() }) // after the pool's check (cleanups run last first)
	p := memtest.NewPool(t, mem.PoolConfig{Name: "resp-test", Concurrent: true, MaxBytes: 256 << 20, Space: sp})
	cfg.Pool = p
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return &testServer{srv: srv, pool: p, addr: ln.Addr().String()}
}

// client is a go-redis client with its default protocol (3: HELLO 3).
func (ts *testServer) client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitInUse waits for the pool's references to come down to want: a reply
// can reach the client just before the server's goroutine releases the
// references of its write.
func (ts *testServer) waitInUse(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.pool.InUse() != want {
		if time.Now().After(deadline) {
			t.Fatalf("pool in use: %d references, want %d", ts.pool.InUse(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// rawConn is a plain RESP connection: commands as arrays of bulk strings,
// replies as their exact bytes.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{c: c, r: bufio.NewReader(c)}
}

func encodeCommand(args []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// do sends one command and returns its reply's bytes.
func (rc *rawConn) do(args ...string) (string, error) {
	_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(encodeCommand(args)); err != nil {
		return "", err
	}
	return readReply(rc.r)
}

// readReply reads one RESP2 or RESP3 reply and returns its bytes.
func readReply(r *bufio.Reader) (string, error) {
	var b strings.Builder
	if err := readInto(r, &b, 0); err != nil {
		return b.String(), err
	}
	return b.String(), nil
}

func readInto(r *bufio.Reader, b *strings.Builder, depth int) error {
	if depth > 16 {
		return errors.New("reply nested too deep")
	}
	line, err := r.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		b.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readInto(r, b, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("bad reply type %q", line)
}

// redisServer is a real redis-server on a free loopback port, stopped when
// the test ends.
type redisServer struct {
	addr string
	pid  int
}

func startRedis(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server); .ci/run installs it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_ = ln.Close()
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return &redisServer{addr: addr, pid: cmd.Process.Pid}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not start: %v\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
