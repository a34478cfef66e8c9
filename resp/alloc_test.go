package resp

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// fakeConn is a net.Conn that delivers input in reads of at most chunk
// bytes (then io.EOF) and discards what is written.
type fakeConn struct {
	net.Conn // nil: only Read, Write and the addresses are called
	in       []byte
	chunk    int
	written  int
}

func (f *fakeConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (f *fakeConn) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }

func (f *fakeConn) Read(p []byte) (int, error) {
	if len(f.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), f.chunk)], f.in)
	f.in = f.in[n:]
	return n, nil
}

func (f *fakeConn) Write(p []byte) (int, error) {
	f.written += len(p)
	return len(p), nil
}

func encode(args ...[]byte) []byte {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = string(a)
	}
	return encodeCommand(s)
}

// allocTestServer returns the allocation tests' server (not started); it
// skips the builds where allocations are not the normal build's: the
// checked build tracks references, and -race randomizes sync.Pool.
func allocTestServer(t *testing.T) *Server {
	t.Helper()
	if mem.Checked {
		t.Skip("the checked build allocates to track references")
	}
	if raceEnabled {
		t.Skip("allocation counts differ under -race (sync.Pool is randomized)")
	}
	p := memtest.NewPool(t, mem.PoolConfig{Name: "resp-allocs", Concurrent: true, MaxBytes: 64 << 20})
	srv, err := NewServer(Config{Pool: p, CommandTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// TestCommandAllocs: once a connection's buffers have grown, reading,
// parsing, executing and answering the read commands (GET, MGET, LRANGE,
// HGET, EXISTS, DEL of an absent key, PING), with values on both sides of
// the threshold, pipelined or not, allocates nothing; nor does SET of a
// string key that exists. (Other writes allocate the key and value they
// store.)
func TestCommandAllocs(t *testing.T) {
	srv := allocTestServer(t)
	k := []byte("k")
	for _, size := range []int{64, 4096} {
		v := bytes.Repeat([]byte{'v'}, size)
		setup := [][][]byte{{[]byte("SET"), k, v}, {[]byte("HSET"), []byte("h"), []byte("f"), v}}
		push := [][]byte{[]byte("RPUSH"), []byte("l")}
		for i := 0; i < 100; i++ {
			push = append(push, v)
		}
		setup = append(setup, push)
		cmds := map[string][]byte{
			"GET":    encode([]byte("GET"), k),
			"MGET":   encode([]byte("MGET"), k, k, k, []byte("absent"), k, k, k, k, k, k),
			"LRANGE": encode([]byte("LRANGE"), []byte("l"), []byte("0"), []byte("99")),
			"HGET":   encode([]byte("HGET"), []byte("h"), []byte("f")),
			"EXISTS": encode([]byte("EXISTS"), k, []byte("absent")),
			"DEL":    encode([]byte("DEL"), []byte("absent")),
			"PING":   encode([]byte("PING")),
			// SET of a string key that exists: the entry stays; a value
			// below the threshold of the same size is overwritten in place,
			// a pooled one too while no reply holds it.
			"SET": encode([]byte("SET"), k, v),
		}
		for name, cmd := range cmds {
			for _, pipe := range []int{1, 16} {
				in := bytes.Repeat(cmd, pipe)
				for _, chunk := range []int{len(in), 1000} {
					srv.FlushAll()
					fc := &fakeConn{chunk: 1 << 20}
					cn := srv.newConn(fc)
					for _, c := range setup {
						fc.in = encode(c...)
						cn.serve()
					}
					fc.chunk = chunk
					run := func() {
						for i := 0; i < 8; i++ { // 8 batches, then EOF
							fc.in = in
							cn.serve()
						}
					}
					run() // warm up
					allocs := testing.AllocsPerRun(20, run)
					cn.out.release()
					if allocs != 0 {
						t.Errorf("%s d%d P%d in reads of %d B: %.1f allocations per %d commands", name, size, pipe, chunk, allocs, 8*pipe)
					}
				}
			}
		}
	}
	srv.FlushAll()
}
