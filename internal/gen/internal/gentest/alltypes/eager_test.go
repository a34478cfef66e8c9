package alltypes_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// treeChain returns the bytes of a Tree whose left child is nested `levels`
// deep, the innermost an empty message (depth `levels`).
func treeChain(levels int) []byte {
	total := 16*levels + 4
	var p []byte
	for i := range levels {
		p = binary.LittleEndian.AppendUint32(p, 1)   // W = 1
		p = binary.LittleEndian.AppendUint32(p, 0x1) // field 1 (left)
		p = binary.LittleEndian.AppendUint32(p, uint32(total-16*(i+1)))
		p = binary.LittleEndian.AppendUint32(p, uint32(16*(i+1)))
	}
	return binary.LittleEndian.AppendUint32(p, 0) // W = 0: empty
}

// TestEagerNested: a plain nested message is decoded with its parent (its
// errors are the parent's decode errors), at every depth up to MaxDepth.
func TestEagerNested(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	m := alltypes.NewTree(a)
	if err := m.DecodeBytes(treeChain(wire.MaxDepth)); err != nil {
		t.Fatalf("depth MaxDepth: %v", err)
	}
	depth := 0
	for x := m; ; depth++ {
		l, err := x.GetLeft()
		if err != nil {
			t.Fatal(err)
		}
		if l == nil {
			break
		}
		x = l
	}
	if depth != wire.MaxDepth {
		t.Errorf("decoded depth %d, want %d", depth, wire.MaxDepth)
	}

	cases := []struct {
		name   string
		p      []byte
		limit  int
		cause  error
		reason string
	}{
		{"deeper than MaxDepth", treeChain(wire.MaxDepth + 1), 0, wire.ErrTooDeep, "nesting"},
		{"region out of range", func() []byte {
			p := treeChain(2)
			binary.LittleEndian.PutUint32(p[8:], 1000) // the outer entry's size
			return p
		}(), 0, wire.ErrMalformed, "nested message out of range"},
		{"region before the dynamic part", func() []byte {
			p := treeChain(2)
			binary.LittleEndian.PutUint32(p[12:], 4) // points into the entries
			return p
		}(), 0, wire.ErrMalformed, "nested message out of range"},
		{"truncated nested header", func() []byte {
			p := treeChain(1)
			binary.LittleEndian.PutUint32(p[16:], 1) // W = 1 in a 4-byte message
			return p
		}(), 0, wire.ErrMalformed, "truncated bitmap"},
		{"over the arena limit", treeChain(40), 1, wire.ErrArenaLimit, "materializing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := wire.NewArena()
			defer reset(t, a)
			a.Limit = c.limit
			m := alltypes.NewTree(a)
			err := m.DecodeBytes(c.p)
			if !errors.Is(err, c.cause) {
				t.Fatalf("decode: %v, want %v", err, c.cause)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) || !strings.Contains(de.Reason, c.reason) {
				t.Errorf("decode: %v, want a *wire.DecodeError with reason %q", err, c.reason)
			}
		})
	}
}

// TestEagerNestedRoundTrip: a tree decoded in place serializes to the same
// bytes, and an absent child stays absent.
func TestEagerNestedRoundTrip(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	m := alltypes.NewTree(a)
	m.InitLeft().SetLeaf([]byte("l"))
	r := m.InitRight()
	r.InitRight().SetLeaf([]byte("rr"))
	p := flatten(t, m)
	d := alltypes.NewTree(a)
	if err := d.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if !d.Equal(m) {
		t.Fatalf("decoded %v, want %v", d, m)
	}
	if got := flatten(t, d); string(got) != string(p) {
		t.Errorf("re-serialized bytes differ")
	}
	dr, _ := d.GetRight()
	if l, err := dr.GetLeft(); l != nil || err != nil {
		t.Errorf("absent child: %v, %v", l, err)
	}
}

// TestDecodeOneReferencePerBatch: messages decoded in one batch from a
// registered input the arena already holds (the same buffer again, or
// bytes inside it) share the arena's reference on it (one held reference),
// stay readable after the caller releases its own, and every reference is
// returned at Reset.
func TestDecodeOneReferencePerBatch(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	a.Threshold = 4
	inner := alltypes.NewTree(a)
	inner.SetLeaf([]byte("inner leaf"))
	p1 := flatten(t, inner)
	outer := alltypes.NewTree(a)
	outer.InitLeft().SetLeaf(p1) // a serialized message carried as bytes
	p2 := flatten(t, outer)
	reset(t, a)

	b := memtest.Alloc(t, pool, p2)
	m1, m2, m3 := alltypes.NewTree(a), alltypes.NewTree(a), alltypes.NewTree(a)
	if err := m1.Decode(b); err != nil {
		t.Fatal(err)
	}
	if err := m2.Decode(b); err != nil { // the same input again
		t.Fatal(err)
	}
	l, err := m1.GetLeft()
	if err != nil || l == nil {
		t.Fatalf("left %v, %v", l, err)
	}
	if err := m3.DecodeBytes(l.GetLeaf()); err != nil { // bytes inside the input
		t.Fatal(err)
	}
	if got := a.Held(); got != 1 {
		t.Errorf("arena holds %d references, want 1 (the input's, shared)", got)
	}
	memtest.Release(t, b) // the caller's reference; the arena keeps the input alive
	if !m1.Equal(m2) {
		t.Errorf("decoded twice: %v and %v", m1, m2)
	}
	if string(m3.GetLeaf()) != "inner leaf" {
		t.Errorf("inner leaf %q", m3.GetLeaf())
	}
	out := alltypes.NewTree(a)
	out.SetLeaf(m3.GetLeaf())
	if sz := out.Sizes(); sz.Entries != 1 {
		t.Errorf("a value of the shared input above the threshold: %+v, want one zero-copy entry", sz)
	}
	memtest.AssertInUse(t, pool, 1)
	reset(t, a)
	memtest.AssertInUse(t, pool, 0)
}
