package alltypes_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// sgaBytes flattens an SGA (head, then each zero-copy entry).
func sgaBytes(s *wire.SGA) []byte {
	out := append([]byte(nil), s.Head...)
	for _, e := range s.Entries {
		out = append(out, e.Bytes()...)
	}
	return out
}

var short = []byte("0123456789abcdefghijklmnopqrstuvwxyz")

// buildTree makes a tree of the given depth whose leaves alternate between
// copied values and zero-copy ones (zc, registered memory).
func buildTree(a *wire.Arena, depth int, zc mem.Buf, i *int) *alltypes.Tree {
	t := alltypes.NewTree(a)
	if depth == 0 {
		*i++
		if *i%2 == 0 {
			t.SetLeafBuf(zc)
		} else {
			t.SetLeaf(short[:*i%len(short)+1])
		}
		return t
	}
	t.SetLeft(buildTree(a, depth-1, zc, i))
	if depth%2 == 0 {
		t.SetRight(buildTree(a, depth-1, zc, i))
	}
	return t
}

// TestDirectSerialize checks the direct Serialize (an *SGA sink after
// Sizes) against the Encoder path (Flatten, and Serialize to another sink):
// the same bytes, the entries appended after those already in the SGA.
func TestDirectSerialize(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	defer reset(t, a)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xab}, 2048))
	defer memtest.Release(t, zc)

	n := 0
	msgs := []wire.Object{buildTree(a, 4, zc, &n), alltypes.NewTree(a), alltypes.NewEmpty(a)}
	s := alltypes.NewScalars(a)
	fillScalars(s)
	msgs = append(msgs, s)
	o := alltypes.NewOptionals(a)
	o.SetI32(0)
	o.SetData(nil)
	msgs = append(msgs, o)

	for i, m := range msgs {
		want := flatten(t, m)
		var sga wire.SGA
		if err := wire.SerializeSGA(m, &sga); err != nil {
			t.Fatalf("msg %d: SerializeSGA: %v", i, err)
		}
		if got := sgaBytes(&sga); !bytes.Equal(got, want) {
			t.Fatalf("msg %d: direct bytes differ from Flatten", i)
		}
		// Entries already in the SGA are kept; the message's follow.
		sz := m.Sizes()
		pre := wire.SGA{Head: make([]byte, sz.Head()), Entries: []mem.Buf{zc}}
		if err := m.Serialize(pre.Head, &pre); err != nil {
			t.Fatalf("msg %d: Serialize into a non-empty SGA: %v", i, err)
		}
		if len(pre.Entries) != 1+sz.Entries || !bytes.Equal(pre.Head, sga.Head) {
			t.Fatalf("msg %d: %d entries after 1, want 1+%d", i, len(pre.Entries), sz.Entries)
		}
	}
}

func left(x *alltypes.Tree) *alltypes.Tree  { v, _ := x.GetLeft(); return v }
func right(x *alltypes.Tree) *alltypes.Tree { v, _ := x.GetRight(); return v }

// TestDirectModified checks that the direct Serialize detects a message
// changed since its Sizes (ErrModified) and writes nothing out of place,
// whatever part of the layout the change moves.
func TestDirectModified(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	defer reset(t, a)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{1}, 1024))
	defer memtest.Release(t, zc)

	cases := []struct {
		name   string
		change func(*alltypes.Tree)
	}{
		{"leaf added", func(x *alltypes.Tree) { left(x).SetLeaf([]byte("new")) }},
		{"leaf cleared", func(x *alltypes.Tree) { left(left(x)).ClearLeaf() }},
		{"leaf longer", func(x *alltypes.Tree) { left(left(x)).SetLeaf([]byte("longer value")) }},
		{"copied to zero-copy", func(x *alltypes.Tree) { left(left(x)).SetLeafBuf(zc) }},
		{"zero-copy to copied", func(x *alltypes.Tree) { right(x).SetLeaf(make([]byte, 1024)) }},
		{"subtree added", func(x *alltypes.Tree) { right(x).InitLeft() }},
		{"subtree removed", func(x *alltypes.Tree) { x.ClearLeft() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := alltypes.NewTree(a)
			x.InitLeft().InitLeft().SetLeaf([]byte("short"))
			x.InitRight().SetLeafBuf(zc)
			sz := x.Sizes()
			c.change(x)
			sga := wire.SGA{Head: make([]byte, sz.Head())}
			if err := x.Serialize(sga.Head, &sga); !errors.Is(err, wire.ErrModified) {
				t.Fatalf("Serialize after the change: %v, want ErrModified", err)
			}
			// Sized again, it serializes.
			if err := wire.SerializeSGA(x, &sga); err != nil {
				t.Fatalf("SerializeSGA: %v", err)
			}
			if !bytes.Equal(sgaBytes(&sga), flatten(t, x)) {
				t.Fatal("bytes differ from Flatten")
			}
		})
	}
}

// TestDirectErrors: the direct path's refusals and errors.
func TestDirectErrors(t *testing.T) {
	a := wire.NewArena()
	x := alltypes.NewTree(a)
	x.InitLeft().SetLeaf([]byte("v"))
	sz := x.Sizes()
	if err := x.Serialize(make([]byte, sz.Head()+1), &wire.SGA{}); !errors.Is(err, wire.ErrDstSize) {
		t.Errorf("wrong dst size: %v", err)
	}
	// Serialize without a Sizes of x (another message sized since): the
	// sizes are computed.
	_ = alltypes.NewTree(a).Sizes()
	if err := x.Serialize(make([]byte, sz.Head()), &wire.SGA{}); err != nil {
		t.Errorf("Serialize after another message's Sizes: %v", err)
	}
	reset(t, a)
	// A message used after its arena's Reset.
	if err := wire.SerializeSGA(x, &wire.SGA{}); !errors.Is(err, wire.ErrArenaReset) {
		t.Errorf("after Reset: %v", err)
	}
	// A stale nested message reached from a fresh one.
	b := wire.NewArena()
	y := alltypes.NewTree(b)
	y.SetLeft(x)
	if err := wire.SerializeSGA(y, &wire.SGA{}); !errors.Is(err, wire.ErrArenaReset) {
		t.Errorf("stale nested message: %v", err)
	}
	reset(t, b)
}

// TestDirectAllocs: building, sizing and serializing a tree on the direct
// path allocates nothing once the arena and the SGA are warm.
func TestDirectAllocs(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	defer reset(t, a)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{1}, 1024))
	defer memtest.Release(t, zc)
	var sga wire.SGA
	run := func() {
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := wire.SerializeSGA(buildTree(a, 5, zc, &n), &sga); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if allocs := testing.AllocsPerRun(100, run); allocs != 0 {
		t.Errorf("%v allocs per run, want 0", allocs)
	}
}
