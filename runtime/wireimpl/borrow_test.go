package wireimpl

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestSetBorrowedDecidesAsSet checks SetBorrowed and AppendBorrowed
// against Set, value by value, at four thresholds, with and without a
// decoded input: the same bytes, the same zero-copy decision and window,
// the same silent copies noted; no reference taken (a zero-copy value
// is held on the caller's reference, as SetBufBorrowed holds it, where
// Set takes one); where Set copies into the arena, the borrowed value
// aliases p instead (and uses no arena memory). AppendBorrowed (its first case and its slow path beyond the
// reserved room) keeps the list's totals.
func TestSetBorrowedDecidesAsSet(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	all := item.Bytes()
	for i := range all {
		all[i] = byte(i)
	}
	in := item.Slice(1024, 2048)
	for _, thr := range []int{DefaultThreshold, 0, 64, CopyAll} {
		for _, decoded := range []bool{false, true} {
			t.Run(fmt.Sprintf("thr=%d/decoded=%v", thr, decoded), func(t *testing.T) {
				a := NewArena()
				a.Threshold = thr
				var c Core
				c.Init(a)
				if decoded {
					if _, err := c.BeginDecode(in); err != nil {
						t.Fatal(err)
					}
				}
				cases := setCases(all)
				var l BytesList
				l.Init(a, 3) // the rest through appendBorrowedSlow
				for _, tc := range cases {
					var b1, b2 Bytes
					held, refs, silent := a.Held(), item.Refs(), a.silentN
					b1.Set(a, tc.p)
					dHeld, dRefs, dSilent := a.Held()-held, item.Refs()-refs, a.silentN-silent
					want := stateOf(&b1, tc.p)
					if !want.zc && len(tc.p) != 0 {
						want.aliases = true // borrowed where Set copied
					}
					off0 := a.off
					held, refs, silent = a.Held(), item.Refs(), a.silentN
					b2.SetBorrowed(a, tc.p)
					if got := stateOf(&b2, tc.p); got != want {
						t.Errorf("%s: SetBorrowed gives %+v, want %+v", tc.name, got, want)
					}
					if h, r, s := a.Held()-held, item.Refs()-refs, a.silentN-silent; h != 0 || r != 0 || s != dSilent {
						t.Errorf("%s: SetBorrowed took %d held/%d refs/%d silent, want 0/0/%d (Set took %d/%d)", tc.name, h, r, s, dSilent, dHeld, dRefs)
					}
					if a.off != off0 {
						t.Errorf("%s: SetBorrowed used %d bytes of arena memory", tc.name, a.off-off0)
					}
					held, refs = a.Held(), item.Refs()
					l.AppendBorrowed(tc.p)
					if got := stateOf(&l.items[len(l.items)-1], tc.p); got != want {
						t.Errorf("%s: AppendBorrowed gives %+v, want %+v", tc.name, got, want)
					}
					if h, r := a.Held()-held, item.Refs()-refs; h != 0 || r != 0 {
						t.Errorf("%s: AppendBorrowed took %d held/%d refs, want 0/0", tc.name, h, r)
					}
					checkTotals(t, "AppendBorrowed "+tc.name, &l, true)
				}
				l.AppendStringBorrowed("a small string")
				checkTotals(t, "AppendStringBorrowed", &l, true)
				var s String
				s.SetBorrowed(a, "\xff")
				if s.Valid() {
					t.Error("String.SetBorrowed: invalid UTF-8 reported valid")
				}
				s.SetBytesBorrowed(a, []byte("ok"))
				if v, err := s.Get(); err != nil || v != "ok" {
					t.Errorf("String.SetBytesBorrowed: %q, %v", v, err)
				}
				var sl StringList
				sl.Init(a, 1)
				sl.AppendBorrowed("one")
				sl.AppendBytesBorrowed([]byte("two"))
				if v, err := sl.At(1); err != nil || v != "two" || sl.Len() != 2 {
					t.Errorf("StringList borrowed: %q, %v, len %d", v, err, sl.Len())
				}
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestBorrowedModifiedChecked checks the checked build's verification of
// the borrowed values: a value modified after SetBorrowed makes the
// direct path's sizes fail with ErrBorrowedModified and Reset return an
// error wrapping it; an unmodified batch passes, and Reset forgets the
// values. Outside the checked build nothing is verified.
func TestBorrowedModifiedChecked(t *testing.T) {
	a := NewArena()
	var c Core
	c.Init(a)
	p := []byte("borrowed value")
	var b Bytes
	b.SetBorrowed(a, p)
	var l BytesList
	l.Init(a, 1)
	l.AppendBorrowed(p[:4])
	if a.lentModified() {
		t.Fatal("unmodified borrowed values reported modified")
	}
	var s DirectSizer
	if !c.StartDirectSizes(&s) || s.err != nil {
		t.Fatalf("StartDirectSizes: %v", s.err)
	}
	if err := a.Reset(); err != nil {
		t.Fatalf("Reset of an unmodified batch: %v", err)
	}
	c.Init(a)
	b.SetBorrowed(a, p)
	p[0] = 'B'
	s = DirectSizer{}
	ok := c.StartDirectSizes(&s)
	direct := c.DirectOK()
	err := a.Reset()
	if !mem.Checked {
		if !ok || s.err != nil || !direct || err != nil {
			t.Fatalf("unchecked build: StartDirectSizes %v %v, DirectOK %v, Reset %v", ok, s.err, direct, err)
		}
		return
	}
	if !ok || !errors.Is(s.err, ErrBorrowedModified) {
		t.Fatalf("StartDirectSizes after a modification: %v %v, want ErrBorrowedModified", ok, s.err)
	}
	if direct {
		t.Fatal("DirectOK after a modification")
	}
	if !errors.Is(err, ErrBorrowedModified) {
		t.Fatalf("Reset after a modification: %v, want ErrBorrowedModified", err)
	}
	if len(a.lent) != 0 {
		t.Fatalf("Reset kept %d borrowed values", len(a.lent))
	}
	if err := a.Reset(); err != nil {
		t.Fatalf("second Reset: %v", err)
	}
}

// TestSetBufBorrowed checks SetBufBorrowed and AppendBufBorrowed: a window
// below the threshold is aliased (not copied into the arena, not
// zero-copy), one at or above it is zero-copy on the caller's reference;
// neither takes a reference (the item's count and the arena's held
// references are unchanged, before and after Reset); the list's totals
// hold, within and beyond its reserved room. In the checked build, a
// reference released before Reset makes Reset fail with
// ErrBorrowedModified.
func TestSetBufBorrowed(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	for i, all := 0, item.Bytes(); i < len(all); i++ {
		all[i] = byte(i)
	}
	for _, thr := range []int{DefaultThreshold, 0, CopyAll} {
		a := NewArena()
		a.Threshold = thr
		var l BytesList
		l.Init(a, 2) // the rest beyond the reserved room
		refs, held := item.Refs(), a.Held()
		for _, w := range []mem.Buf{item.Slice(0, 100), item.Slice(100, 600), item.Slice(1000, 0), item.Slice(2000, 1024), item.Slice(3100, 7)} {
			var b Bytes
			off0 := a.off
			b.SetBufBorrowed(a, w)
			l.AppendBufBorrowed(w)
			e := &l.items[len(l.items)-1]
			for _, x := range []*Bytes{&b, e} {
				wantZC := w.Len() != 0 && w.Len() >= thr
				if string(x.data) != string(w.Bytes()) || x.IsZeroCopy() != wantZC {
					t.Fatalf("thr %d, window of %d: %d bytes, zero-copy %v, want %v", thr, w.Len(), len(x.data), x.IsZeroCopy(), wantZC)
				}
				if len(x.data) != 0 && &x.data[0] != &w.Bytes()[0] {
					t.Fatalf("thr %d, window of %d: not aliased", thr, w.Len())
				}
				if wantZC && x.buf != w {
					t.Fatalf("thr %d, window of %d: zero-copy on another reference", thr, w.Len())
				}
			}
			if a.off != off0 {
				t.Fatalf("thr %d: %d bytes of arena memory used", thr, a.off-off0)
			}
			checkTotals(t, "AppendBufBorrowed", &l, true)
		}
		if item.Refs() != refs || a.Held() != held {
			t.Fatalf("thr %d: references taken: item %d → %d, held %d → %d", thr, refs, item.Refs(), held, a.Held())
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if item.Refs() != refs {
			t.Fatalf("thr %d: Reset released the caller's reference (%d → %d)", thr, refs, item.Refs())
		}
	}
	// A borrowed reference released before Reset.
	w, err := p.Alloc(700)
	if err != nil {
		t.Fatal(err)
	}
	a := NewArena()
	var b Bytes
	b.SetBufBorrowed(a, w)
	if err := w.Release(); err != nil {
		t.Fatal(err)
	}
	err = a.Reset()
	if mem.Checked != errors.Is(err, ErrBorrowedModified) {
		t.Fatalf("Reset after the borrowed reference was released: %v (checked build %v)", err, mem.Checked)
	}
}
