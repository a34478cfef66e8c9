package alltypes_test

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestDecodeInputsOfABatch: BeginDecode's common case (the batch's first
// registered input, recorded in the arena itself) and its other cases (a
// second registered input, a heap input) in one batch keep every message
// reading its own input, hold one reference per registered input, give
// them all back at Reset, and start over cleanly in the next batch.
func TestDecodeInputsOfABatch(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	a.Threshold = 4
	enc := func(leaf string) []byte {
		m := alltypes.NewTree(a)
		m.SetLeaf([]byte(leaf))
		return flatten(t, m)
	}
	pa, pb, ph := enc("first input"), enc("second input"), enc("heap input")
	reset(t, a)
	ba := memtest.Alloc(t, pool, pa)
	bb := memtest.Alloc(t, pool, pb)
	defer func() { memtest.Release(t, ba); memtest.Release(t, bb) }()

	for batch := range 3 {
		ma, mh, mb := alltypes.NewTree(a), alltypes.NewTree(a), alltypes.NewTree(a)
		if err := ma.Decode(ba); err != nil {
			t.Fatal(err)
		}
		if err := mh.DecodeBytes(ph); err != nil {
			t.Fatal(err)
		}
		if err := mb.Decode(bb); err != nil {
			t.Fatal(err)
		}
		if got := a.Held(); got != 2 {
			t.Errorf("batch %d: arena holds %d references, want 2 (one per registered input)", batch, got)
		}
		for _, c := range []struct {
			m    *alltypes.Tree
			want string
			zc   bool
		}{{ma, "first input", true}, {mh, "heap input", false}, {mb, "second input", true}} {
			if got := string(c.m.GetLeaf()); got != c.want {
				t.Fatalf("batch %d: leaf %q, want %q", batch, got, c.want)
			}
			out := alltypes.NewTree(a)
			out.SetLeaf(c.m.GetLeaf())
			if sz := out.Sizes(); (sz.Entries == 1) != c.zc {
				t.Errorf("batch %d, %q: %+v, zero-copy want %v", batch, c.want, sz, c.zc)
			}
		}
		memtest.AssertInUse(t, pool, 2)
		reset(t, a)
		if got := a.Held(); got != 0 {
			t.Fatalf("after Reset the arena holds %d references", got)
		}
		if ba.Refs() != 1 || bb.Refs() != 1 {
			t.Fatalf("after Reset: refs %d, %d; want 1, 1 (the test's own)", ba.Refs(), bb.Refs())
		}
	}
}

// TestDecodeBeginInlined holds the generated Decode's inlined start
// (DecodeArena, TryHoldInput, Input0) to BeginDecode's rules: a Threshold
// changed between batches decides the next batch's values (the arena's
// embedded record is set up again), with and without BorrowInput; a
// message made before a Reset is refused with ErrArenaReset; every
// reference taken returns at Reset.
func TestDecodeBeginInlined(t *testing.T) {
	for _, borrow := range []bool{false, true} {
		pool := memtest.NewPool(t)
		a := wire.NewArena()
		a.BorrowInput = borrow
		m := alltypes.NewTree(a)
		m.SetLeaf([]byte("a leaf of 22 bytes ..."))
		b := memtest.Alloc(t, pool, flatten(t, m))
		reset(t, a)
		for batch, thr := range []int{4, 4, 1 << 20, 1 << 20, 0, 4} {
			a.Threshold = thr
			d := alltypes.NewTree(a)
			if err := d.Decode(b); err != nil {
				t.Fatal(err)
			}
			if got := string(d.GetLeaf()); got != "a leaf of 22 bytes ..." {
				t.Fatalf("borrow %v, batch %d: leaf %q", borrow, batch, got)
			}
			// The decoded value, then a value set from it, are zero-copy
			// exactly when the batch's threshold says so.
			if sz, zc := d.Sizes(), thr <= 22; (sz.Entries == 1) != zc {
				t.Errorf("borrow %v, batch %d, threshold %d: decoded %+v, zero-copy want %v", borrow, batch, thr, sz, zc)
			}
			out := alltypes.NewTree(a)
			out.SetLeaf(d.GetLeaf())
			if sz, zc := out.Sizes(), thr <= 22; (sz.Entries == 1) != zc {
				t.Errorf("borrow %v, batch %d, threshold %d: set %+v, zero-copy want %v", borrow, batch, thr, sz, zc)
			}
			held := 1
			if borrow {
				held = 0
			}
			if got := a.Held(); got != held {
				t.Errorf("borrow %v, batch %d: arena holds %d references, want %d", borrow, batch, got, held)
			}
			reset(t, a)
			if err := d.Decode(b); !errors.Is(err, wire.ErrArenaReset) {
				t.Errorf("borrow %v, batch %d: Decode of a message made before Reset = %v, want ErrArenaReset", borrow, batch, err)
			}
			if got := a.Held(); got != 0 || b.Refs() != 1 {
				t.Fatalf("borrow %v, batch %d: after Reset the arena holds %d, the input has %d references", borrow, batch, got, b.Refs())
			}
		}
		memtest.Release(t, b)
	}
}
