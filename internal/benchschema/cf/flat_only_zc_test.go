package cf_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestSerializeOnlyZeroCopyMatchesUnfused holds the flat path of a list
// whose every value is zero-copy (BytesList.SerializeOnlyOr's loop without
// copies) to the unfused path: built lists of one to many values (windows
// of one buffer back to back, of several buffers, the same window twice;
// and one empty window among them, which makes the list mixed), and the echo server's response (a decoded request's
// values borrowed into a new list with AppendBorrowedFrom), each into a
// clean SGA and a dirty one (a longer head, stale entries).
func TestSerializeOnlyZeroCopyMatchesUnfused(t *testing.T) {
	pool := memtest.NewPool(t)
	big := make([]byte, 3000)
	for i := range big {
		big[i] = byte(i*7 + 1)
	}
	b1 := memtest.Alloc(t, pool, big)
	defer memtest.Release(t, b1)
	b2 := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, b2)
	a := wire.NewArena()
	a.Threshold = 0 // every non-empty window zero-copy
	defer resetArena(t, a)

	// An empty window is copied (a mixed list: the general loop).
	lists := map[string][]mem.Buf{
		"one":          {b1.Slice(0, 600)},
		"two adjacent": {b1.Slice(0, 1000), b1.Slice(1000, 2000)},
		"two buffers":  {b2, b1},
		"empty window": {b1.Slice(0, 600), b1.Slice(600, 0), b2},
		"same twice":   {b2, b2, b1.Slice(100, 900), b2},
		"many": func() []mem.Buf {
			var v []mem.Buf
			for i := range 40 {
				v = append(v, b1.Slice(i*70, 70+i%3))
			}
			return v
		}(),
	}
	dirty := &wire.SGA{Head: bytes.Repeat([]byte{0xee}, 1<<12), Entries: []mem.Buf{b2, b2, b2}}
	for name, bufs := range lists {
		m := cf.NewListBuffers(a)
		l := m.InitMessages(len(bufs))
		for _, b := range bufs {
			l.AppendBuf(b)
		}
		checkFused(t, m, &wire.SGA{})
		checkFused(t, m, dirty)
		if name == "empty window" { // checkFused compared the entries
			continue
		}
		if len(dirty.Entries) != len(bufs) {
			t.Fatalf("%s: %d entries, want one per value (%d)", name, len(dirty.Entries), len(bufs))
		}
		for i, e := range dirty.Entries {
			if e != bufs[i] {
				t.Fatalf("%s: entry %d is not the value's handle", name, i)
			}
		}
		if t.Failed() {
			t.Fatalf("%s", name)
		}
	}

	// The echo's response: a request of large values decoded from
	// registered memory, its values borrowed into the response.
	for _, vals := range [][]int{{2048}, {2048, 2048}, {600, 0, 900}, {513, 514, 515, 516, 517}} {
		src := cf.NewListBuffers(a)
		ml := src.InitMessages(len(vals))
		for i, n := range vals {
			ml.Append(bytes.Repeat([]byte{byte(i + 1)}, n))
		}
		in, err := wire.Flatten(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		rx := memtest.Alloc(t, pool, in)
		b := wire.NewArena()
		b.Threshold = 512
		b.BorrowInput = true
		req, err := cf.DecodeListBuffers(b, rx)
		if err != nil {
			t.Fatal(err)
		}
		rl, err := req.GetMessages()
		if err != nil {
			t.Fatal(err)
		}
		resp := cf.NewListBuffers(b)
		if err := resp.InitMessages(rl.Len()).AppendBorrowedFrom(rl); err != nil {
			t.Fatal(err)
		}
		checkFused(t, resp, &wire.SGA{})
		checkFused(t, resp, dirty)
		e := cf.NewListBuffers(a)
		if err := e.DecodeBytes(dirty.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		if !e.Equal(src) {
			t.Fatalf("%v: the response decodes as %v, want %v", vals, e, src)
		}
		resetArena(t, b)
		memtest.Release(t, rx)
	}
}

// TestSerializeOnlyZeroCopyAllocs: an all-zero-copy list is written into a
// reused SGA without allocating.
func TestSerializeOnlyZeroCopyAllocs(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 4096))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	a.Threshold = 512
	defer resetArena(t, a)
	m := cf.NewListBuffers(a)
	l := m.InitMessages(2)
	l.AppendBuf(zc.Slice(0, 2048))
	l.AppendBuf(zc.Slice(2048, 2048))
	var sga wire.SGA
	if err := m.SerializeSGA(&sga); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := m.SerializeSGA(&sga); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%d allocations per SerializeSGA", int(n))
	}
}
