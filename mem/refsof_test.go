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
