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
