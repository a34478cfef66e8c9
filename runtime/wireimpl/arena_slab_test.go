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
// Reset rewinds the slab to its first chunk.
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
				if batch > 0 && !mem.Checked && p != first {
					t.Fatalf("batch %d: the first value is not the first chunk's first", batch)
				}
				first = p
			}
			p.p, p.v = &x, [3]uint64{1, 2, 3}
		}
		// The first value of the epoch and each new chunk take the slow path.
		if batch == 0 && slow < 2 || slow > 16 {
			t.Fatalf("batch %d: %d slow paths", batch, slow)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if p := slabTestType.TryNew(a); mem.Checked && p != nil {
			t.Fatalf("batch %d: the checked build served old memory right after Reset", batch)
		} else if !mem.Checked && p != first {
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
