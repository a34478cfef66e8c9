package driver_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

func TestCollectAndGather(t *testing.T) {
	pool := memtest.NewPool(t)
	var entries []mem.Buf
	for _, n := range []int{300, 5, 700, 1, 2, 900} {
		b := memtest.Alloc(t, pool, bytes.Repeat([]byte{byte(n)}, n))
		entries = append(entries, b)
	}
	defer func() {
		for _, b := range entries {
			memtest.Release(t, b)
		}
	}()
	obj := &dptest.Object{Header: []byte("HDR"), Copied: []byte("copied")}
	obj.Entries = entries
	want := obj.WireBytes()
	for _, maxSeg := range []int{1, 2, 3, 4, 5, 7, 8, 32} {
		sz := obj.Sizes()
		tx := make([]byte, sz.Head()+sz.ZeroCopy)
		var c driver.EntryCollector
		if err := c.Collect(obj, sz, tx[:sz.Head()]); err != nil {
			t.Fatal(err)
		}
		if c.Len() != len(entries) || entries[0].Refs() != 2 {
			t.Fatalf("collector holds %d entries, refs %d", c.Len(), entries[0].Refs())
		}
		sel := driver.NewSelector(maxSeg)
		sg, txLen, ce, cb, err := c.Gather(sel, tx, sz.Head(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(sg) > maxSeg {
			t.Errorf("maxSeg %d: %d segments", maxSeg, len(sg))
		}
		if c.Len()+ce != len(entries) || c.Bytes+cb != sz.ZeroCopy || txLen != sz.Head()+cb {
			t.Errorf("maxSeg %d: kept %d + copied %d entries, %d + %d bytes, txLen %d", maxSeg, c.Len(), ce, c.Bytes, cb, txLen)
		}
		got := bytes.Join(sg, nil)
		if !bytes.Equal(got, want) {
			t.Errorf("maxSeg %d: gathered bytes differ", maxSeg)
		}
		if err := c.Release(); err != nil {
			t.Fatal(err)
		}
		for i, b := range entries {
			if b.Refs() != 1 {
				t.Fatalf("maxSeg %d: entry %d has %d refs after Release", maxSeg, i, b.Refs())
			}
		}
	}
}

func TestCollectErrors(t *testing.T) {
	pool := memtest.NewPool(t)
	e := memtest.Alloc(t, pool, []byte("entry"))
	defer memtest.Release(t, e)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		obj  *dptest.Object
		dst  int // head length passed (-1: correct)
		want error
	}{
		{"extra", &dptest.Object{Entries: []mem.Buf{e}, ExtraEntries: 2}, -1, datapath.ErrBadObject},
		{"missing", &dptest.Object{Entries: []mem.Buf{e, e}, MissingEntries: 1}, -1, datapath.ErrBadObject},
		{"serializeError", &dptest.Object{Entries: []mem.Buf{e, e}, Err: boom, FailAfter: 1}, -1, boom},
		{"wrongHead", &dptest.Object{Header: []byte("x"), Entries: []mem.Buf{e}}, 5, datapath.ErrBadObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sz := tc.obj.Sizes()
			n := sz.Head()
			if tc.dst >= 0 {
				n = tc.dst
			}
			var c driver.EntryCollector
			err := c.Collect(tc.obj, sz, make([]byte, n))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Collect = %v, want %v", err, tc.want)
			}
			if c.Len() != 0 || e.Refs() != 1 {
				t.Fatalf("after a failed Collect: %d entries held, refs %d", c.Len(), e.Refs())
			}
		})
	}
	// Sizes that lie about bytes.
	var c driver.EntryCollector
	sz := wire.Sizes{Entries: 1, ZeroCopy: 2}
	if err := c.Collect(&dptest.Object{Entries: []mem.Buf{e}}, sz, nil); !errors.Is(err, datapath.ErrBadObject) {
		t.Fatalf("Collect with too few declared bytes = %v", err)
	}
}

func TestCollectGatherAllocs(t *testing.T) {
	pool := memtest.NewPool(t)
	var entries []mem.Buf
	for i := range 20 {
		entries = append(entries, memtest.Alloc(t, pool, bytes.Repeat([]byte{1}, 100+i*30)))
	}
	defer func() {
		for _, b := range entries {
			memtest.Release(t, b)
		}
	}()
	obj := &dptest.Object{Header: []byte("H"), Entries: entries}
	sz := obj.Sizes()
	tx := make([]byte, sz.Head()+sz.ZeroCopy)
	sel := driver.NewSelector(8)
	var c driver.EntryCollector
	sg := make([][]byte, 0, 64)
	run := func() {
		if err := c.Collect(obj, sz, tx[:sz.Head()]); err != nil {
			t.Fatal(err)
		}
		var err error
		sg, _, _, _, err = c.Gather(sel, tx, sz.Head(), sg[:0])
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Fatalf("Collect+Gather+Release allocates %v times", a)
	}
}

func TestGuard(t *testing.T) {
	var g driver.Guard
	if err := g.Enter(); err != nil {
		t.Fatal(err)
	}
	if err := g.Enter(); !errors.Is(err, datapath.ErrConcurrentUse) {
		t.Fatalf("overlapping Enter = %v", err)
	}
	g.Exit()
	if err := g.Enter(); err != nil {
		t.Fatal(err)
	}
	g.ExitClosed()
	if err := g.Enter(); !errors.Is(err, datapath.ErrClosed) || !g.Closed() {
		t.Fatalf("Enter after close = %v", err)
	}
}

// BenchmarkGuard measures the cost an endpoint pays per call for
// ErrConcurrentUse detection (one CAS + one store).
func BenchmarkGuard(b *testing.B) {
	var g driver.Guard
	for b.Loop() {
		if g.Enter() != nil {
			b.Fatal("busy")
		}
		g.Exit()
	}
}
