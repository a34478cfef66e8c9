package wireimpl

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// walkTotals is what a size pass counts for l's elements by walking them.
func walkTotals(l *BytesList) (cp, zc, ents int) { return sizeItems(l.items, 0, 0, 0) }

// checkTotals fails unless l's kept totals hold (want) and equal a walk,
// and SizeFlat and SizeDirect report the walk's totals either way.
func checkTotals(t *testing.T, what string, l *BytesList, want bool) {
	t.Helper()
	cp, zc, ents := walkTotals(l)
	if l.tok != want {
		t.Fatalf("%s: kept totals hold = %v, want %v", what, l.tok, want)
	}
	if l.tok && (l.tot.cp != cp || l.tot.zc != zc || int(l.tot.nz) != ents) {
		t.Fatalf("%s: kept totals %d/%d/%d, walk %d/%d/%d", what, l.tot.cp, l.tot.zc, l.tot.nz, cp, zc, ents)
	}
	h, c, z, e, ok := l.SizeFlat(l.a, 0, 0, 0, 0)
	if !ok || h != EntrySize*len(l.items) || c != cp || z != zc || e != ents {
		t.Fatalf("%s: SizeFlat %d/%d/%d/%d %v, want %d/%d/%d/%d", what, h, c, z, e, ok, EntrySize*len(l.items), cp, zc, ents)
	}
	var s DirectSizer
	s.a = l.a
	h, c, z, e, present := l.SizeDirect(&s, 0, 0, 0, 0)
	if present != (len(l.items) != 0) || h != EntrySize*len(l.items) || c != cp || z != zc || e != ents {
		t.Fatalf("%s: SizeDirect %d/%d/%d/%d %v, want %d/%d/%d/%d", what, h, c, z, e, present, EntrySize*len(l.items), cp, zc, ents)
	}
}

// TestBytesListKeptTotals checks the totals a list built with Init keeps
// for the size passes, through every writer: Append (its first cases and
// appendSlow, beyond the reserved capacity: copied, zero-copy from
// registered memory and from the decoded input, silent copies, empty
// values), AppendString, AppendBuf and Truncate keep them equal to a walk;
// Field and a decoded list (materialized) make the size passes walk.
func TestBytesListKeptTotals(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	all := item.Bytes()
	in := item.Slice(1024, 2048)
	for _, thr := range []int{DefaultThreshold, 0, 64, CopyAll} {
		for _, decoded := range []bool{false, true} {
			t.Run(fmt.Sprintf("thr=%d/decoded=%v", thr, decoded), func(t *testing.T) {
				a := NewArena()
				defer a.Reset()
				a.Threshold = thr
				var c Core
				c.Init(a)
				if decoded {
					if _, err := c.BeginDecode(in); err != nil {
						t.Fatal(err)
					}
				}
				var l BytesList
				l.Init(a, 3) // the rest through appendSlow's growth
				checkTotals(t, "empty", &l, true)
				for i, tc := range setCases(all) {
					l.Append(tc.p)
					checkTotals(t, fmt.Sprintf("append %d %s", i, tc.name), &l, true)
				}
				l.AppendString("a small string")
				checkTotals(t, "AppendString", &l, true)
				l.AppendBuf(item.Slice(0, 700))
				checkTotals(t, "AppendBuf", &l, true)
				l.Truncate(len(l.items) - 3)
				checkTotals(t, "Truncate", &l, true)
				l.Truncate(len(l.items))
				checkTotals(t, "Truncate to its length", &l, true)
				if !l.IsZeroCopy(0) && thr != CopyAll && (!decoded || thr <= 600) {
					t.Fatalf("element 0 (600 registered bytes) not zero-copy")
				}
				checkTotals(t, "IsZeroCopy", &l, true)
				f := l.Field(0)
				checkTotals(t, "Field", &l, false)
				f.Set(a, []byte("now a short copied value"))
				checkTotals(t, "Set through Field", &l, false)
				l.Append(all[:700])
				checkTotals(t, "Append after Field", &l, false)
				l.Truncate(0)
				checkTotals(t, "Truncate(0) after Field", &l, false)
				l.Init(a, 1)
				l.Append(all[:700])
				checkTotals(t, "Init again", &l, true)
				l.Truncate(0)
				checkTotals(t, "Truncate(0)", &l, true)
			})
		}
	}
}
