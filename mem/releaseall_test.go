package mem_test

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// ReleaseAll drops a batch of references (an arena's, at the end of a
// batch) and zeroes the handles.
func ExampleReleaseAll() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "batch"})
	if err != nil {
		panic(err)
	}
	b, err := p.Alloc(64)
	if err != nil {
		panic(err)
	}
	held := []mem.Buf{b.Clone(), b.Clone(), b.Slice(0, 8).Clone()}
	fmt.Println(b.Refs(), mem.ReleaseAll(held), b.Refs(), held[0].IsZero())
	fmt.Println(b.Release(), p.InUse(), p.Close())
	// Output:
	// 4 <nil> 1 true
	// <nil> 0 <nil>
}

// TestReleaseAll: every reference dropped (the last one frees the item),
// errors of bad handles reported after the others are released, for
// single-goroutine and Concurrent pools.
func TestReleaseAll(t *testing.T) {
	for _, conc := range []bool{false, true} {
		t.Run(fmt.Sprint("concurrent=", conc), func(t *testing.T) {
			p := memtest.NewPool(t, mem.PoolConfig{Concurrent: conc})
			x, err := p.Alloc(100)
			if err != nil {
				t.Fatal(err)
			}
			y, err := p.Alloc(3000)
			if err != nil {
				t.Fatal(err)
			}
			// x: three references, all dropped (the last frees it); y: one
			// of two dropped.
			bufs := []mem.Buf{x.Clone(), y.Clone(), x.Clone(), {}, x}
			if err := mem.ReleaseAll(bufs); err != nil {
				t.Fatal(err)
			}
			for i, b := range bufs {
				if !b.IsZero() {
					t.Fatalf("bufs[%d] not zeroed", i)
				}
			}
			if y.Refs() != 1 || p.InUse() != 1 {
				t.Fatalf("y refs %d, in use %d; want 1, 1", y.Refs(), p.InUse())
			}
			// A double release is reported, and the later handles are still
			// released.
			z := y.Clone()
			err = mem.ReleaseAll([]mem.Buf{x, z, y})
			if !errors.Is(err, mem.ErrDoubleRelease) && !errors.Is(err, mem.ErrUseAfterRelease) {
				t.Fatalf("err %v, want a double release or use-after-release error", err)
			}
			if p.InUse() != 0 {
				t.Fatalf("in use %d after ReleaseAll", p.InUse())
			}
			if err := mem.ReleaseAll(nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecoverInline: Recover's inline case (the default space) and its
// slow path agree on windows, refusals and counts.
func TestRecoverInline(t *testing.T) {
	p := memtest.NewPool(t)
	b, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	all := b.Bytes()
	r, ok := mem.Recover(all[100:300])
	if !ok || r.Len() != 200 || &r.Bytes()[0] != &all[100] || b.Refs() != 2 {
		t.Fatalf("Recover: ok %v len %d refs %d", ok, r.Len(), b.Refs())
	}
	if _, ok := mem.Recover(all[:0]); ok {
		t.Fatal("Recover of an empty slice succeeded")
	}
	if _, ok := mem.Recover(make([]byte, 10)); ok {
		t.Fatal("Recover of heap memory succeeded")
	}
	// A range straddling this item and the next one of the class.
	next, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	if nb := next.Bytes(); uintptr(unsafe.Pointer(&nb[0])) == uintptr(unsafe.Pointer(&all[0]))+4096 {
		if _, ok := mem.Recover(unsafe.Slice(&all[4000], 200)); ok {
			t.Fatal("Recover of a range straddling two items succeeded")
		}
	} else {
		t.Log("items not adjacent: straddling case not checked")
	}
	if err := mem.ReleaseAll([]mem.Buf{r, next}); err != nil {
		t.Fatal(err)
	}
	// A free item is refused.
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if _, ok := mem.Recover(all[:10]); ok {
		t.Fatal("Recover of a free item succeeded")
	}
}

// TestReleaseAllLast: ReleaseAll frees the item whose last reference it
// drops and goes on with the next references (of freed and live items);
// a handle of an item it freed earlier in the same call is reported, not
// released twice.
func TestReleaseAllLast(t *testing.T) {
	p := memtest.NewPool(t)
	a, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	keep := c.Clone()
	if err := mem.ReleaseAll([]mem.Buf{a.Clone(), a, b, c}); err != nil {
		t.Fatal(err)
	}
	if p.InUse() != 1 || keep.Refs() != 1 || a.Check() == nil || b.Check() == nil {
		t.Fatalf("in use %d, c refs %d, a %v, b %v: want 1, 1 and a and b freed", p.InUse(), keep.Refs(), a.Check(), b.Check())
	}
	d, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	err = mem.ReleaseAll([]mem.Buf{d, d, keep})
	if !errors.Is(err, mem.ErrDoubleRelease) && !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Fatalf("err %v, want a double release or use-after-release error", err)
	}
	if p.InUse() != 0 {
		t.Fatalf("in use %d after ReleaseAll", p.InUse())
	}
}
