package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

func TestArenaCopyReuse(t *testing.T) {
	a := wire.NewArena()
	for range 3 {
		for i := range 100 {
			p := a.Copy(bytes.Repeat([]byte{byte(i)}, 1000+i))
			if len(p) != 1000+i || cap(p) != len(p) || p[0] != byte(i) {
				t.Fatalf("Copy returned len %d cap %d", len(p), cap(p))
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	grown := a.Grown()
	src := make([]byte, 1100)
	allocs := testing.AllocsPerRun(20, func() {
		for i := range 100 {
			a.Copy(src[:1000+i])
			a.CopyString("small")
		}
		_ = a.Reset()
	})
	if allocs != 0 || a.Grown() != grown {
		t.Errorf("steady state: %v allocs/run, arena grew %d -> %d", allocs, grown, a.Grown())
	}
	// A value larger than any chunk gets its own chunk.
	big := a.Copy(make([]byte, 3<<20))
	if len(big) != 3<<20 {
		t.Fatal("big copy")
	}
}

func TestArenaMessagesSteadyState(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	a := wire.NewArena()
	data, x := []byte("data"), []byte("x")
	build := func() {
		m := testmsg.NewAllTypes(a)
		m.SetI32(1)
		m.SetData(data)
		l := m.InitBlobs(4)
		for range 6 { // grows beyond the reserved 4
			l.Append(x)
		}
		k := m.InitKids(1)
		k.Append(testmsg.NewInner(a))
		m.InitRI64(0).Append(5)
		_ = a.Reset()
	}
	for range 3 {
		build()
	}
	if allocs := testing.AllocsPerRun(100, build); allocs != 0 {
		t.Errorf("building a message allocates %v times in steady state", allocs)
	}
	// New returns zeroed messages after Reset.
	m := testmsg.NewAllTypes(a)
	if m.HasI32() || m.HasData() || m.HasBlobs() || m.HasKids() {
		t.Errorf("a new message after Reset is not empty: %v", m)
	}
}

func TestArenaResetReleases(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	v := memtest.Alloc(t, pool, make([]byte, 1024))
	m := testmsg.NewAllTypes(a)
	m.SetData(v.Bytes())        // Recover: +1
	m.SetDataBuf(v)             // Clone: +1
	m.InitBlobs(1).AppendBuf(v) // Clone: +1
	a.Hold(v.Clone())           // +1
	if v.Refs() != 5 || a.Held() != 4 {
		t.Fatalf("refs %d held %d", v.Refs(), a.Held())
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if v.Refs() != 1 || a.Held() != 0 {
		t.Fatalf("after Reset refs %d held %d", v.Refs(), a.Held())
	}
	// A reference released behind the arena's back is reported.
	c := v.Clone()
	a.Hold(c)
	memtest.Release(t, c)
	memtest.Release(t, v) // the item is free now
	if err := a.Reset(); err == nil {
		t.Error("Reset after a foreign release: no error")
	}
	memtest.AssertInUse(t, pool, 0)
}

func TestSerializeErrors(t *testing.T) {
	a := wire.NewArena()
	m := testmsg.NewAllTypes(a)
	m.SetI32(5)
	sz := m.Sizes()
	if err := m.Serialize(make([]byte, sz.Head()+1), nil); !errors.Is(err, wire.ErrDstSize) {
		t.Errorf("wrong dst size: %v", err)
	}
	// Modified after Sizes: a new field changes the layout.
	m.SetI64(9)
	if err := m.Serialize(make([]byte, sz.Head()), nil); !errors.Is(err, wire.ErrModified) {
		t.Errorf("modified: %v", err)
	}
	sz = m.Sizes()
	if err := m.Serialize(make([]byte, sz.Head()), nil); err != nil {
		t.Errorf("after Sizes again: %v", err)
	}
	// A cycle of nested messages is an error, not a stack overflow.
	x := testmsg.NewInner(a)
	y := testmsg.NewInner(a)
	x.SetChild(y)
	y.SetChild(x)
	if _, err := wire.Flatten(x, nil); !errors.Is(err, wire.ErrTooDeep) {
		t.Errorf("cycle: %v", err)
	}
	// A sink error aborts Serialize.
	p := memtest.NewPool(t)
	v := memtest.Alloc(t, p, make([]byte, 600))
	defer memtest.Release(t, v)
	m2 := testmsg.NewAllTypes(a)
	m2.SetData(v.Bytes())
	sz = m2.Sizes()
	boom := errors.New("boom")
	if err := m2.Serialize(make([]byte, sz.Head()), sinkFunc(func(mem.Buf) error { return boom })); !errors.Is(err, boom) {
		t.Errorf("sink error: %v", err)
	}
	_ = a.Reset()
}

type sinkFunc func(mem.Buf) error

func (f sinkFunc) ZeroCopyEntry(b mem.Buf) error { return f(b) }

func TestDecodeErrorType(t *testing.T) {
	a := wire.NewArena()
	m := testmsg.NewAllTypes(a)
	err := m.DecodeBytes([]byte{1, 0})
	var de *wire.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, wire.ErrMalformed) || de.Off != 0 {
		t.Fatalf("%v", err)
	}
	var zero testmsg.AllTypes
	if err := zero.DecodeBytes([]byte{0, 0, 0, 0}); !errors.Is(err, wire.ErrNoArena) {
		t.Errorf("message without arena: %v", err)
	}
}

func TestHeaderCodec(t *testing.T) {
	fields := []wire.HeaderField{{Num: 1, Entry: 7}, {Num: 33, Entry: 1<<32 | 2}, {Num: 1000, Entry: 3}}
	p, err := wire.AppendHeader(nil, fields)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 + 4*32 + 3*8; len(p) != want {
		t.Fatalf("len %d want %d", len(p), want)
	}
	got, size, err := wire.ReadHeader(p, nil)
	if err != nil || size != len(p) || len(got) != 3 || got[1].Hi() != 1 || got[1].Lo() != 2 || got[2].Num != 1000 {
		t.Fatalf("%v %d %v", got, size, err)
	}
	for _, bad := range [][]wire.HeaderField{{{Num: 0}}, {{Num: 2}, {Num: 1}}, {{Num: wire.MaxSparseFieldNumber + 1}}} {
		if _, err := wire.AppendHeader(nil, bad); err == nil {
			t.Errorf("AppendHeader(%v) accepted", bad)
		}
	}
}

// TestSetBufBelowThreshold: a registered value below the threshold is a
// copied field (no zero-copy entry, its bytes in the serialized head),
// held by reference from RefCopyMin bytes until Reset so that it is copied
// once, at serialization; shorter values are copied into the arena at once.
func TestSetBufBelowThreshold(t *testing.T) {
	pool := memtest.NewPool(t)
	for _, n := range []int{wire.RefCopyMin - 1, wire.RefCopyMin, 4000} {
		a := wire.NewArena()
		a.Threshold = wire.CopyAll
		v := memtest.Alloc(t, pool, bytes.Repeat([]byte{byte(n)}, n))
		m := testmsg.NewAllTypes(a)
		m.SetDataBuf(v)
		wantRefs := 2
		if n < wire.RefCopyMin {
			wantRefs = 1
		}
		if v.Refs() != wantRefs {
			t.Errorf("%d bytes: refs %d after SetDataBuf, want %d", n, v.Refs(), wantRefs)
		}
		sz := m.Sizes()
		if sz.Entries != 0 || sz.ZeroCopy != 0 {
			t.Errorf("%d bytes below the threshold: sizes %+v, want no zero-copy entry", n, sz)
		}
		flat, err := wire.Flatten(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := testmsg.NewAllTypes(wire.NewArena())
		if err := d.DecodeBytes(flat); err != nil || !bytes.Equal(d.GetData(), v.Bytes()) {
			t.Fatalf("%d bytes: round trip %v", n, err)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if v.Refs() != 1 {
			t.Errorf("%d bytes: refs %d after Reset, want 1", n, v.Refs())
		}
		memtest.Release(t, v)
	}
	memtest.AssertInUse(t, pool, 0)
}
