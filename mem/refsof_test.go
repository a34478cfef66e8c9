package mem_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestRefsOf checks that RefsOf reads the count Recover would raise, takes
// no reference, and answers 0 wherever Recover would fail, in both kinds
// of pool.
func TestRefsOf(t *testing.T) {
	for _, conc := range []bool{false, true} {
		p := memtest.NewPool(t, mem.PoolConfig{Name: "refsof", Concurrent: conc})
		b := mustAlloc(t, p, 256)
		v := b.Bytes()
		if n := mem.RefsOf(v); n != 1 {
			t.Fatalf("concurrent=%v: RefsOf of a new item = %d, want 1", conc, n)
		}
		c := b.Clone()
		if n := mem.RefsOf(v[10:20]); n != 2 || b.Refs() != 2 {
			t.Fatalf("concurrent=%v: RefsOf after Clone = %d (Refs %d), want 2", conc, n, b.Refs())
		}
		release(t, c)
		if n := mem.RefsOf(v); n != 1 || b.Refs() != 1 {
			t.Fatalf("concurrent=%v: RefsOf took a reference: %d (Refs %d)", conc, n, b.Refs())
		}
		// Where Recover fails: empty, heap, straddling two items, free.
		b2 := mustAlloc(t, p, 256)
		for name, q := range map[string][]byte{
			"empty": v[:0], "nil": nil, "heap": make([]byte, 16),
		} {
			if n := mem.RefsOf(q); n != 0 {
				t.Errorf("concurrent=%v: RefsOf(%s) = %d, want 0", conc, name, n)
			}
		}
		if n := mem.RefsOf(v[:cap(v)]); cap(v) > 256 && n != 0 {
			t.Errorf("concurrent=%v: RefsOf past the item = %d, want 0", conc, n)
		}
		release(t, b)
		if n := mem.RefsOf(v); n != 0 {
			t.Errorf("concurrent=%v: RefsOf of a free item = %d, want 0", conc, n)
		}
		if _, ok := mem.Recover(v); ok {
			t.Errorf("concurrent=%v: Recover of a free item succeeded", conc)
		}
		release(t, b2)
	}
}

// TestOwn: Own makes a handle of a reference held as a slice, without
// changing the count; its Release drops that reference.
func TestOwn(t *testing.T) {
	for _, conc := range []bool{false, true} {
		p := memtest.NewPool(t, mem.PoolConfig{Name: "own", Concurrent: conc})
		b := mustAlloc(t, p, 300)
		v := b.Bytes()[:300]
		o, ok := mem.Own(v)
		if !ok || o.Refs() != 1 || o.Len() != 300 || &o.Bytes()[0] != &v[0] {
			t.Fatalf("concurrent=%v: Own = %v (refs %d, len %d)", conc, ok, o.Refs(), o.Len())
		}
		release(t, o) // b's reference
		if _, ok := mem.Own(v); ok {
			t.Errorf("concurrent=%v: Own of a free item succeeded", conc)
		}
		if _, ok := mem.Own(make([]byte, 8)); ok {
			t.Errorf("concurrent=%v: Own of heap memory succeeded", conc)
		}
		if err := b.Check(); err == nil {
			t.Errorf("concurrent=%v: the item is still live after the owned handle's Release", conc)
		}
	}
}

// TestRefsOfAllocs: RefsOf allocates nothing.
func TestRefsOfAllocs(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "refsof", Concurrent: true})
	b := mustAlloc(t, p, 4096)
	defer release(t, b)
	v := b.Bytes()
	if a := testing.AllocsPerRun(100, func() { _ = mem.RefsOf(v) }); a != 0 {
		t.Fatalf("RefsOf allocates %v", a)
	}
}
