package wireimpl

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// reuseFields is a built message's fields, re-set each cycle with the
// borrowed setters (docs/CODEGEN.md, "Reusing a built message").
type reuseFields struct {
	small, zc, zcBuf Bytes
	list             BytesList
}

// set re-sets every field to variant v: a small heap value (SetBorrowed),
// a registered value at the threshold (SetBorrowed, zero-copy), a window
// of a registered reference (SetBufBorrowed), and the list by Truncate(0)
// and AppendBorrowed / AppendBufBorrowed.
func (f *reuseFields) set(a *Arena, small [][]byte, reg []mem.Buf, v int) {
	f.small.SetBorrowed(a, small[v])
	f.zc.SetBorrowed(a, reg[v].Bytes())
	f.zcBuf.SetBufBorrowed(a, reg[1-v])
	f.list.Truncate(0)
	f.list.AppendBorrowed(small[1-v])
	f.list.AppendBorrowed(reg[v].Bytes())
	f.list.AppendBufBorrowed(reg[1-v])
	f.list.AppendBorrowed(nil)
}

// TestReuseBorrowedBounded re-sets a built message's fields 100,000 times
// with the borrowed setters, checking the direct path's sizes each time
// (the borrowed values' check in the checked build), and requires that
// nothing grows: no Go allocation, no arena memory, no reference held by
// the arena or taken on the values' items, the list's storage kept, and
// (checked build) one borrowed record per field at most. Then a value
// modified after it was set is still reported, and one modified after its
// field was re-set is not (the field no longer borrows it).
func TestReuseBorrowedBounded(t *testing.T) {
	pool := memtest.NewPool(t, mem.PoolConfig{})
	var reg []mem.Buf
	for v := range 2 {
		b := memtest.Alloc(t, pool, make([]byte, DefaultThreshold+100*v))
		defer memtest.Release(t, b)
		reg = append(reg, b)
	}
	small := [][]byte{[]byte("a small value"), []byte("another small one")}
	a := NewArena()
	var c Core
	c.Init(a)
	var f reuseFields
	f.list.Init(a, 4)
	storage := &f.list.items[:1][0]
	cycle := func(v int) {
		f.set(a, small, reg, v)
		var s DirectSizer
		if !c.StartDirectSizes(&s) || s.err != nil {
			t.Fatalf("StartDirectSizes: %v", s.err)
		}
		if mem.Checked && len(a.lent) > 8 {
			t.Fatalf("the checked build keeps %d borrowed records for 8 borrowed fields", len(a.lent))
		}
	}
	cycle(0)
	cycle(1)
	off, grown, held := a.off, a.Grown(), a.Held()
	refs := []int{reg[0].Refs(), reg[1].Refs()}
	for i := range 100_000 {
		cycle(i & 1)
	}
	if allocs := testing.AllocsPerRun(100, func() { cycle(0); cycle(1) }); allocs != 0 {
		t.Errorf("a re-set cycle allocates %v times", allocs)
	}
	if a.off != off || a.Grown() != grown || a.Held() != held || len(a.refs) != 0 {
		t.Errorf("the arena grew: copied bytes %d → %d, grown %d → %d, held %d → %d (refs %d)",
			off, a.off, grown, a.Grown(), held, a.Held(), len(a.refs))
	}
	for v := range reg {
		if reg[v].Refs() != refs[v] {
			t.Errorf("value %d: references %d → %d", v, refs[v], reg[v].Refs())
		}
	}
	if &f.list.items[:1][0] != storage || f.list.Len() != 4 {
		t.Errorf("Truncate(0) and Append did not keep the list's storage (len %d)", f.list.Len())
	}
	checkTotals(t, "reused list", &f.list, true)
	if !f.zc.IsZeroCopy() || !f.zcBuf.IsZeroCopy() || !f.list.IsZeroCopy(1) || f.small.IsZeroCopy() {
		t.Error("re-set values lost their zero-copy decision")
	}

	// A borrowed value modified while its field holds it is reported ...
	small[0][0] ^= 1
	var s DirectSizer
	c.StartDirectSizes(&s)
	if mem.Checked != errors.Is(s.err, ErrBorrowedModified) {
		t.Errorf("a modified borrowed value: %v (checked build %v)", s.err, mem.Checked)
	}
	// ... and not once no field borrows it (the field and the list element
	// re-set to another value).
	other := []byte("a third value")
	f.small.SetBorrowed(a, other)
	f.list.Truncate(0)
	f.list.AppendBorrowed(other)
	small[1][0] ^= 1
	s = DirectSizer{}
	if !c.StartDirectSizes(&s) || s.err != nil {
		t.Errorf("values modified after their fields were re-set: %v", s.err)
	}
	if err := a.Reset(); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if len(a.lent) != 0 || len(a.lentAt) != 0 {
		t.Errorf("Reset kept %d borrowed records (%d indexed)", len(a.lent), len(a.lentAt))
	}
	for v := range reg {
		if reg[v].Refs() != refs[v] {
			t.Errorf("value %d: Reset changed its references %d → %d", v, refs[v], reg[v].Refs())
		}
	}
}
