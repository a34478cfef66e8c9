package wireimpl

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

type slabTestValue struct {
	p *int
	v [3]uint64
}

var slabTestType = NewType[slabTestValue]()

// TestTypeTryNew checks New's fast path: nil when the slab is not made or
// its chunk is used up (and, in the checked build, right after Reset), and
// otherwise a zeroed value distinct from every other value of the epoch;
// Reset rewinds the slab to its first chunk. A batch that needed more than
// the first chunk makes the next batch's first New merge the chunks into
// one, so that from then on a like batch takes the fast path throughout.
func TestTypeTryNew(t *testing.T) {
	a := NewArena()
	if p := slabTestType.TryNew(a); p != nil {
		t.Fatal("TryNew served a type whose slab the arena has not made")
	}
	x := 7
	var first *slabTestValue
	for batch := range 3 {
		seen := map[*slabTestValue]bool{}
		slow := 0
		for i := range 3 * maxSlab {
			p := slabTestType.TryNew(a)
			if p == nil {
				p = slabTestType.NewSlow(a)
				slow++
			}
			if p.p != nil || p.v != [3]uint64{} {
				t.Fatalf("batch %d value %d: not zeroed: %+v", batch, i, *p)
			}
			if seen[p] {
				t.Fatalf("batch %d value %d: handed out twice in one epoch", batch, i)
			}
			seen[p] = true
			if i == 0 {
				if batch > 1 && !mem.Checked && p != first {
					t.Fatalf("batch %d: the first value is not the first chunk's first", batch)
				}
				first = p
			}
			p.p, p.v = &x, [3]uint64{1, 2, 3}
		}
		// Batch 0: the first value and each new chunk take the slow path;
		// batch 1: only the merge of batch 0's chunks; then none.
		switch {
		case mem.Checked:
			if slow > 16 {
				t.Fatalf("batch %d: %d slow paths", batch, slow)
			}
		case batch == 0 && (slow < 2 || slow > 16), batch == 1 && slow != 1, batch > 1 && slow != 0:
			t.Fatalf("batch %d: %d slow paths", batch, slow)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		p := slabTestType.TryNew(a)
		switch {
		case mem.Checked && p != nil:
			t.Fatalf("batch %d: the checked build served old memory right after Reset", batch)
		case !mem.Checked && batch == 0 && p != nil:
			t.Fatalf("batch %d: TryNew after a batch of several chunks served a value (the merge is due)", batch)
		case !mem.Checked && batch > 0 && p != first:
			t.Fatalf("batch %d: TryNew after Reset = %p, want the first chunk's first value %p", batch, p, first)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	if mem.Checked {
		return
	}
	// Steady state: the chunks are reused, nothing grows.
	g := a.Grown()
	for range 3 * maxSlab {
		if slabTestType.TryNew(a) == nil {
			slabTestType.NewSlow(a)
		}
	}
	if a.Grown() != g {
		t.Fatalf("Grown %d after a batch like the earlier ones, was %d", a.Grown(), g)
	}
}

func TestTypeTryNewAllocs(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives every epoch new memory")
	}
	a := NewArena()
	slabTestType.New(a)
	n := testing.AllocsPerRun(100, func() {
		_ = a.Reset()
		for range 10 {
			if slabTestType.TryNew(a) == nil {
				slabTestType.NewSlow(a)
			}
		}
	})
	if n != 0 {
		t.Fatalf("%v allocs per batch", n)
	}
}

// TestSlabMergeLimit checks that the merge of a slab's chunks after a batch
// that needed several of them does not count against Limit (it replaces the
// chunks by one of their total size), while a slice beyond that total still
// fails.
func TestSlabMergeLimit(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives every epoch new memory")
	}
	a := NewArena()
	for range 5 * minSlab {
		slabTestType.New(a)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	g := a.Grown()
	a.Limit = g
	s, ok := slabTestType.tryNewSlice(a, 5*minSlab)
	if !ok || len(s) != 5*minSlab {
		t.Fatalf("tryNewSlice of the last batch's count after Reset: ok %v, len %d", ok, len(s))
	}
	if a.Grown() != g {
		t.Fatalf("Grown %d after the merge, was %d", a.Grown(), g)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, ok := slabTestType.tryNewSlice(a, 100*minSlab); ok {
		t.Fatal("tryNewSlice beyond Limit succeeded")
	}
}

// TestSlabNoMergeLarge checks that a slab whose chunks hold more than
// maxMerge values is not merged: after Reset, New's fast path serves the
// first chunk again, and a like batch allocates nothing.
func TestSlabNoMergeLarge(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives every epoch new memory")
	}
	a := NewArena()
	first := slabTestType.New(a)
	for range maxMerge {
		slabTestType.New(a)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if p := slabTestType.TryNew(a); p != first {
		t.Fatalf("TryNew after Reset = %p, want the first chunk's first value %p", p, first)
	}
	g := a.Grown()
	for range maxMerge {
		slabTestType.New(a)
	}
	if a.Grown() != g {
		t.Fatalf("Grown %d after a like batch, was %d", a.Grown(), g)
	}
}
