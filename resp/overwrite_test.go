package resp

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestSetOverwriteInPlace: SET of a pooled string with a value of the same
// length writes over the stored bytes only while the keyspace holds the
// sole reference to them. A zero-copy GET reply not yet written holds one:
// the SET then stores a new value and the reply still sends the old bytes.
// The used-memory estimate does not change either way.
func TestSetOverwriteInPlace(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "resp-overwrite", Concurrent: true, MaxBytes: 16 << 20})
	srv, err := NewServer(Config{Pool: p, CommandTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, b := srv.newConn(&fakeConn{}), srv.newConn(&fakeConn{})
	v1, v2, v3 := bytes.Repeat([]byte{'1'}, 4096), bytes.Repeat([]byte{'2'}, 4096), bytes.Repeat([]byte{'3'}, 4096)
	k := []byte("k")
	stored := func() []byte {
		srv.kmu.Lock()
		defer srv.kmu.Unlock()
		return srv.ks.dbs[0].keys["k"].str()
	}
	used := func() int64 {
		srv.kmu.Lock()
		defer srv.kmu.Unlock()
		return srv.ks.used
	}

	a.exec([][]byte{[]byte("SET"), k, v1})
	first, u := stored(), used()
	a.exec([][]byte{[]byte("SET"), k, v2})
	if s := stored(); &s[0] != &first[0] || !bytes.Equal(s, v2) {
		t.Fatalf("SET of the same length with no reader: stored at %p (was %p), %.8q", &s[0], &first[0], s)
	}
	if used() != u {
		t.Fatalf("used %d after an overwrite, was %d", used(), u)
	}

	b.exec([][]byte{[]byte("GET"), k}) // a zero-copy reply, held until written
	if len(b.out.zc) != 1 {
		t.Fatalf("GET of 4 KiB: %d zero-copy pieces, want 1", len(b.out.zc))
	}
	a.exec([][]byte{[]byte("SET"), k, v3})
	if s := stored(); &s[0] == &first[0] || !bytes.Equal(s, v3) {
		t.Fatalf("SET while a reply holds the value: stored in place (%p) or wrong: %.8q", &s[0], s)
	}
	if got := b.out.zc[0].Bytes(); !bytes.Equal(got, v2) {
		t.Fatalf("the pending GET reply changed: %.8q, want the value it read", got)
	}
	if used() != u {
		t.Fatalf("used %d after a replacement, was %d", used(), u)
	}
	b.out.release()
	a.out.release()
	srv.FlushAll()
	if used() != 0 {
		t.Fatalf("used %d after FLUSHALL", used())
	}
}

// TestReadBufferRecycled: a connection whose read buffer grew through the
// size classes (a pipeline of 4 KiB SETs) leaves its buffers in the
// server's pools, where the next connection takes them instead of making
// new ones.
func TestReadBufferRecycled(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	srv := allocTestServer(t)
	in := bytes.Repeat(encode([]byte("SET"), []byte("k"), bytes.Repeat([]byte{'v'}, 4096)), 64)
	fc := &fakeConn{in: in, chunk: len(in)}
	cn := srv.newConn(fc)
	cn.serve()
	if len(cn.in) != keepBuf {
		t.Fatalf("read buffer of %d B after a 256 KiB pipeline, want %d", len(cn.in), keepBuf)
	}
	grown := &cn.in[0]
	srv.wg.Add(1) // as Serve does for each connection
	cn.c = nil    // fakeConn has no Close
	srv.dropConn(cn)
	for size := readChunk; size <= keepBuf; size *= 2 {
		b, ok := srv.bigBufs[bufClass(size)].Get().(*[]byte)
		if !ok || len(*b) != size {
			t.Fatalf("no %d B buffer in the pool after the connection closed", size)
		}
		if size == keepBuf && &(*b)[0] != grown {
			t.Errorf("the pool's %d B buffer is not the connection's", size)
		}
		srv.bigBufs[bufClass(size)].Put(b)
	}
	// A new connection grows into the pooled buffers.
	cn2 := srv.newConn(&fakeConn{in: in, chunk: len(in)})
	cn2.serve()
	if &cn2.in[0] != grown {
		t.Errorf("a new connection made its %d B buffer instead of taking the pooled one", len(cn2.in))
	}
	cn.out.release()
	cn2.out.release()
}
