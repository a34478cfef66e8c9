package alltypes_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
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
