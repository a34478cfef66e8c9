package resp

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/workload"
)

// fakeConn is a net.Conn that delivers input in reads of at most chunk
// bytes (then io.EOF) and discards what is written.
type fakeConn struct {
	net.Conn // nil: only Read and Write are called
	in       []byte
	chunk    int
	written  int
}

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

// allocTestServer returns the allocation tests' server (not started), on a
// store of its own; it skips the builds where allocations are not the
// normal build's: the checked build tracks references, and -race
// randomizes sync.Pool.
func allocTestServer(t *testing.T) *Server {
	t.Helper()
	if mem.Checked {
		t.Skip("the checked build allocates to track references")
	}
	if raceEnabled {
		t.Skip("allocation counts differ under -race (sync.Pool is randomized)")
	}
	p := memtest.NewPool(t, mem.PoolConfig{Name: "resp-allocs", Concurrent: true, MaxBytes: 64 << 20})
	st := kv.NewStore(p, 8)
	t.Cleanup(st.Clear)
	srv, err := NewServer(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestCommandAllocs: once a connection's buffers have grown, reading,
// parsing, executing and answering GET, SET, MGET, LRANGE and DEL, with
// values on both sides of the threshold, pipelined or not, allocates
// nothing.
func TestCommandAllocs(t *testing.T) {
	srv := allocTestServer(t)
	st := srv.Store()
	k := []byte("k")
	for _, size := range []int{64, 4096} {
		v := bytes.Repeat([]byte{'v'}, size)
		list := make([][]byte, 100)
		for i := range list {
			list[i] = v
		}
		cmds := map[string][]byte{
			"GET":    encode([]byte("GET"), k),
			"SET":    encode([]byte("SET"), k, v),
			"MGET":   encode([]byte("MGET"), k, k, k, []byte("absent"), k, k, k, k, k, k),
			"LRANGE": encode([]byte("LRANGE"), []byte("l"), []byte("0"), []byte("99")),
			"DEL":    encode([]byte("DEL"), []byte("absent")),
			"PING":   encode([]byte("PING")),
		}
		for name, cmd := range cmds {
			for _, pipe := range []int{1, 16} {
				in := bytes.Repeat(cmd, pipe)
				for _, chunk := range []int{len(in), 1000} {
					st.Clear()
					if _, err := st.Push([]byte("l"), list, false); err != nil {
						t.Fatal(err)
					}
					if err := st.Exec(&kv.Query{Op: workload.OpPut, Keys: [][]byte{k}, Vals: [][]byte{v}}, &kv.Result{}, 1<<20); err != nil {
						t.Fatal(err)
					}
					fc := &fakeConn{chunk: chunk}
					cn := &conn{srv: srv, c: fc, in: make([]byte, readChunk)}
					run := func() {
						for i := 0; i < 8; i++ { // 8 batches, then EOF
							fc.in = in
							cn.serve()
						}
					}
					run() // warm up
					allocs := testing.AllocsPerRun(20, run)
					cn.res.Release()
					cn.out.release()
					if allocs != 0 {
						t.Errorf("%s d%d P%d in reads of %d B: %.1f allocations per %d commands", name, size, pipe, chunk, allocs, 8*pipe)
					}
				}
			}
		}
	}
}

// TestLargeCommandAllocs: a command larger than the kept read buffer (an
// MSET of 10 values of 64 KiB, 640 KiB) grows the buffer for itself, but
// once warm the larger buffers come from the server's pool instead of
// being allocated (and zeroed) for every command, and the connection goes
// back to its kept buffer when drained.
func TestLargeCommandAllocs(t *testing.T) {
	srv := allocTestServer(t)
	v := bytes.Repeat([]byte{'v'}, 64<<10)
	args := [][]byte{[]byte("MSET")}
	for i := 0; i < 10; i++ {
		args = append(args, []byte{'k', byte('0' + i)}, v)
	}
	in := encode(args...)
	fc := &fakeConn{chunk: 64 << 10}
	cn := &conn{srv: srv, c: fc, in: make([]byte, readChunk)}
	run := func() {
		for i := 0; i < 8; i++ { // 8 commands, each alone in its batch
			fc.in = in
			cn.serve()
			if len(cn.in) > keepBuf {
				t.Fatalf("read buffer of %d bytes kept after the command", len(cn.in))
			}
		}
	}
	run()
	allocs := testing.AllocsPerRun(10, run)
	cn.res.Release()
	cn.out.release()
	// A garbage collection may empty the pool; one allocation per 8
	// commands at most (it was 6 per command: 16 KiB doubling to 1 MiB).
	if allocs > 1 {
		t.Errorf("%.1f allocations per 8 commands of %d bytes", allocs, len(in))
	}
}
