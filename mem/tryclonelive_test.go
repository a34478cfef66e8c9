package mem

import "testing"

// TestTryCloneLive checks the inlinable clone-if-live: it adds a reference
// exactly as Clone does when it reports true, and changes nothing when it
// declines: the zero Buf, a released reference, a stale handle whose item
// was allocated again (where TryClone, which checks only the count,
// accepts), a Concurrent pool, and every handle in the checked build.
func TestTryCloneLive(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if (Buf{}).TryCloneLive() {
		t.Fatal("the zero Buf: TryCloneLive reported true")
	}
	b, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.TryCloneLive(); got == checked {
		t.Fatalf("TryCloneLive of a live reference = %v (checked build %v)", got, checked)
	}
	if !checked {
		if b.Refs() != 2 {
			t.Fatalf("after TryCloneLive: refs %d, want 2", b.Refs())
		}
		if err := b.Release(); err != nil {
			t.Fatal(err)
		}
	}
	stale := b
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if stale.TryCloneLive() || stale.Refs() != 0 {
		t.Fatalf("a released reference: TryCloneLive reported true (refs %d)", stale.Refs())
	}
	// Allocate until the released item is handed out again.
	var again Buf
	var others []Buf
	for range 4096 {
		n, err := p.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		if n.r == stale.r && n.item == stale.item {
			again = n
			break
		}
		others = append(others, n)
	}
	if again.IsZero() {
		t.Fatal("the released item was not allocated again")
	}
	if stale.TryCloneLive() || again.Refs() != 1 {
		t.Fatalf("a stale handle of a reallocated item: TryCloneLive reported true (refs %d)", again.Refs())
	}
	if stale.SameItem(again) || !again.SameItem(again.Slice(1, 2)) {
		t.Fatal("SameItem: a stale generation matched, or a window of the same reference did not")
	}
	for _, o := range append(others, again) {
		if err := o.Release(); err != nil {
			t.Fatal(err)
		}
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
	if c.TryCloneLive() || c.Refs() != 1 {
		t.Fatal("a Concurrent pool: TryCloneLive reported true")
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestSameItem: handles on one item in one generation are the same item
// whatever their windows; other items, other pools and the zero Buf are
// not (two zero Bufs are).
func TestSameItem(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	q, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a, _ := p.Alloc(100)
	b, _ := p.Alloc(100)
	c, _ := q.Alloc(100)
	ac := a.Clone()
	for _, tc := range []struct {
		x, y Buf
		want bool
	}{
		{a, a, true},
		{a, a.Slice(10, 20), true},
		{a.Slice(0, 5), a.Slice(50, 50), true},
		{a, ac, true},
		{a, b, false},
		{a, c, false},
		{a, Buf{}, false},
		{Buf{}, Buf{}, true},
	} {
		if got := tc.x.SameItem(tc.y); got != tc.want || tc.y.SameItem(tc.x) != got {
			t.Errorf("SameItem(%+v, %+v) = %v, want %v (both ways)", tc.x, tc.y, got, tc.want)
		}
	}
	for _, r := range []Buf{a, ac, b, c} {
		if err := r.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFollows: a window follows another when it starts where the other
// ends on the same item in the same generation; not the other way round,
// not with a gap or an overlap, not across items, generations or pools,
// and never for the zero Buf.
func TestFollows(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a, _ := p.Alloc(100)
	b, _ := p.Alloc(100)
	ac := a.Clone()
	for _, tc := range []struct {
		x, y Buf // does x follow y?
		want bool
	}{
		{a.Slice(10, 5), a.Slice(0, 10), true},
		{ac.Slice(10, 90), a.Slice(0, 10), true},
		{a.Slice(10, 0), a.Slice(0, 10), true},
		{a.Slice(0, 10), a.Slice(10, 5), false},
		{a.Slice(11, 5), a.Slice(0, 10), false},
		{a.Slice(9, 5), a.Slice(0, 10), false},
		{b.Slice(10, 5), a.Slice(0, 10), false},
		{a.Slice(0, 10), Buf{}, false},
		{Buf{}, Buf{}, false},
	} {
		if got := tc.x.Follows(tc.y); got != tc.want {
			t.Errorf("%+v.Follows(%+v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
	old := b.Slice(0, 10)
	for _, r := range []Buf{a, ac, b} {
		if err := r.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// A new generation of the same item (the last one freed): adjacent
	// windows, but not the same memory's owner any more.
	n, _ := p.Alloc(100)
	if n.r != old.r || n.item != old.item {
		t.Fatal("the pool did not reuse the item")
	}
	if n.Slice(10, 5).Follows(old) {
		t.Error("a window of a new generation follows one of the old")
	}
	if err := n.Release(); err != nil {
		t.Fatal(err)
	}
}
