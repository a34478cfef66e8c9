package mem

import "testing"

// TestSliceTrustedMatchesSlice checks that SliceTrusted gives Slice's
// window for every in-range (off, n) of windows at several starts, nested
// twice.
func TestSliceTrustedMatchesSlice(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	for _, w := range [][2]int{{0, 64}, {3, 40}, {63, 1}, {64, 0}} {
		outer := b.Slice(w[0], w[1])
		for off := 0; off <= w[1]; off++ {
			for n := 0; off+n <= w[1]; n++ {
				got, want := outer.SliceTrusted(off, n), outer.Slice(off, n)
				if got != want {
					t.Fatalf("window %v: SliceTrusted(%d, %d) = %+v, Slice %+v", w, off, n, got, want)
				}
				if n > 0 && (got.SliceTrusted(0, 1) != want.Slice(0, 1) || got.SliceTrusted(n-1, 1) != want.Slice(n-1, 1)) {
					t.Fatalf("window %v (%d, %d): nested windows differ", w, off, n)
				}
			}
		}
	}
}

// TestTryCloneTryRelease checks the inlinable fast paths: they change the
// count exactly as Clone and Release do when they report true, and change
// nothing when they decline (the zero Buf, the last reference, a released
// reference, a Concurrent pool).
func TestTryCloneTryRelease(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if (Buf{}).TryClone() || (Buf{}).TryRelease() {
		t.Fatal("the zero Buf: TryClone or TryRelease reported true")
	}
	b, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if b.TryRelease() {
		t.Fatal("TryRelease dropped the last reference")
	}
	if got := b.TryClone(); got == checked {
		t.Fatalf("TryClone of a live reference = %v (checked build %v)", got, checked)
	}
	if !checked {
		if b.Refs() != 2 {
			t.Fatalf("after TryClone: refs %d, want 2", b.Refs())
		}
		if !b.TryRelease() || b.Refs() != 1 {
			t.Fatalf("TryRelease of one of two: refs %d, want 1", b.Refs())
		}
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if b.TryClone() || b.TryRelease() {
		t.Fatal("a released reference: TryClone or TryRelease reported true")
	}
	if p.InUse() != 0 {
		t.Fatalf("in use %d", p.InUse())
	}
	cp, err := NewPool(PoolConfig{Concurrent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	c, err := cp.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	c2 := c.Clone()
	if c.TryClone() || c.TryRelease() {
		t.Fatal("a Concurrent pool: TryClone or TryRelease reported true")
	}
	c2.Release()
	c.Release()
}
