package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// The benchmarks run a server on loopback TCP and a minimal client on one
// connection: it writes pre-encoded commands (one per round trip, or 16 in
// one write) and reads and counts the replies. One op is one command;
// allocs/op are the whole process's (the client allocates nothing), so
// they are the server's allocations per command.
//
//	go test -run '^$' -bench . -benchmem ./resp

// benchServer is a server over a memtest pool on a loopback port.
func benchServer(b *testing.B) (addr string, st *kv.Store) {
	b.Helper()
	p := memtest.NewPool(b, mem.PoolConfig{Name: "resp-bench", Concurrent: true, MaxBytes: 64 << 20})
	st = kv.NewStore(p, 8)
	srv, err := NewServer(Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	b.Cleanup(func() {
		if err := srv.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			b.Errorf("Serve returned %v", err)
		}
		st.Clear()
	})
	return ln.Addr().String(), st
}

// encode returns the RESP array of bulk strings that clients send.
func encode(args ...[]byte) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// rawClient writes pre-encoded batches and reads the replies, counting
// them (simple strings, errors, integers, bulk strings; no arrays).
type rawClient struct {
	c   net.Conn
	r   *bufio.Reader
	err int // error replies seen
}

func dialRaw(b *testing.B, addr string) *rawClient {
	b.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Minute))
	return &rawClient{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// roundTrip writes batch (n commands) and reads n replies.
func (rc *rawClient) roundTrip(batch []byte, n int) error {
	if _, err := rc.c.Write(batch); err != nil {
		return err
	}
	for ; n > 0; n-- {
		line, err := rc.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) < 3 {
			return fmt.Errorf("short reply line %q", line)
		}
		switch line[0] {
		case '+', ':':
		case '-':
			rc.err++
		case '$':
			l, ok := parseInt(line[1 : len(line)-2])
			if !ok {
				return fmt.Errorf("bad bulk header %q", line)
			}
			if l >= 0 {
				if _, err := rc.r.Discard(int(l) + 2); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("unexpected reply %q", line)
		}
	}
	return nil
}

func BenchmarkGetSet(b *testing.B) {
	for _, op := range []string{"GET", "SET"} {
		for _, size := range []int{64, 4096} {
			for _, pipe := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/d%d/P%d", op, size, pipe), func(b *testing.B) {
					benchCommand(b, op, size, pipe)
				})
			}
		}
	}
}

func benchCommand(b *testing.B, op string, size, pipe int) {
	addr, _ := benchServer(b)
	rc := dialRaw(b, addr)
	key, val := []byte("key:000000000042"), bytes.Repeat([]byte{'x'}, size)
	set := encode([]byte("SET"), key, val)
	cmd := set
	if op == "GET" {
		cmd = encode([]byte("GET"), key)
	}
	if err := rc.roundTrip(set, 1); err != nil {
		b.Fatal(err)
	}
	batch := bytes.Repeat(cmd, pipe)
	// Warm up: buffers reach their steady size.
	for i := 0; i < 100; i++ {
		if err := rc.roundTrip(batch, pipe); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += pipe {
		if err := rc.roundTrip(batch, pipe); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if rc.err != 0 {
		b.Fatalf("%d error replies", rc.err)
	}
}
