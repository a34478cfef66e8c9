package wireimpl

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestResetChecksBorrowedAfterReleases checks the order of Reset's work in
// the checked build: the arena's own references are released before the
// borrowed inputs are checked, so an input released before Reset is
// reported even when the arena also held a reference on its item (Hold)
// that kept it live until then. Every reference returns either way.
func TestResetChecksBorrowedAfterReleases(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	a := NewArena()
	a.BorrowInput = true
	in, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	var c Core
	c.Init(a)
	if _, err := c.BeginDecode(in); err != nil {
		t.Fatal(err)
	}
	a.Hold(in.Clone())
	if err := in.Release(); err != nil { // the promise broken; the item stays live through Hold
		t.Fatal(err)
	}
	err = a.Reset()
	var ue *mem.UseAfterReleaseError
	if mem.Checked && !errors.As(err, &ue) {
		t.Errorf("input released before Reset, item held: Reset = %v, want a *mem.UseAfterReleaseError", err)
	}
	if !mem.Checked && err != nil {
		t.Errorf("unchecked build: Reset = %v", err)
	}
	if a.Held() != 0 || p.InUse() != 0 {
		t.Errorf("after Reset: arena holds %d, pool has %d in use", a.Held(), p.InUse())
	}
}

// TestResetRewindsEverySlab checks Reset's two paths (its common case with
// nothing held and every slab on its first chunk, and reset otherwise): a
// batch that moved a slab or the copied bytes past their first chunk is
// rewound (the slab left to be merged), one that did not is rewound in
// place (by the new epoch: no value of the slab counts as handed out),
// and the next batches of the same work allocate nothing more.
func TestResetRewindsEverySlab(t *testing.T) {
	type small struct{ a, b uint64 }
	tt := NewType[small]()
	a := NewArena()
	grown := -1
	for batch := range 6 {
		// Batch 0 moves the slab and the copied bytes past their first
		// chunk, batch 1 the slab only (past its merged chunk), batch 2
		// the copied bytes only; the later batches stay within one chunk
		// (Reset's common case).
		k := 2
		switch batch {
		case 0:
			k = 1 + 3*minSlab
		case 1:
			k = 1 + 30*minSlab
		}
		for range k {
			if p := tt.New(a); *p != (small{}) {
				t.Fatalf("batch %d: New returned a non-zero value %v", batch, *p)
			} else {
				p.a, p.b = 1, 2
			}
		}
		if batch == 0 || batch == 2 {
			a.Copy(make([]byte, 3*minChunk))
		}
		a.Copy([]byte("x"))
		if want := batch < 3; a.moved != want { // the common case's one test covers the copied bytes too
			t.Fatalf("batch %d: before Reset moved %v, want %v (ci %d)", batch, a.moved, want, a.ci)
		}
		if batch == 4 {
			a.Hold(mem.Buf{}) // a zero Buf is not held: still the common case
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if a.ci != 0 || a.off != 0 || a.lastSrc != nil || a.szFor != nil {
			t.Fatalf("batch %d: after Reset ci %d off %d lastSrc %v szFor %v", batch, a.ci, a.off, a.lastSrc, a.szFor)
		}
		if a.moved {
			t.Fatalf("batch %d: after Reset the arena still has a moved slab", batch)
		}
		for _, h := range a.made {
			if h.used(a) != 0 || h.ci != 0 {
				t.Fatalf("batch %d: after Reset a slab has n %d (epoch %d, the arena's %d) ci %d", batch, h.n, h.ep, a.epoch, h.ci)
			}
		}
		if batch == 3 {
			grown = a.Grown()
		} else if batch > 3 && a.Grown() != grown {
			t.Fatalf("batch %d: the arena grew from %d to %d bytes in a steady workload", batch, grown, a.Grown())
		}
	}
}
