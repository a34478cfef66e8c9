package cf_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// bulkValues are list values of every kind: small, empty, at the default
// threshold's edge and above it.
func bulkValues() [][]byte {
	return [][]byte{
		[]byte("first"), nil, bytes.Repeat([]byte{7}, 40), bytes.Repeat([]byte{8}, wire.DefaultThreshold-1),
		bytes.Repeat([]byte{9}, wire.DefaultThreshold), []byte("x"), bytes.Repeat([]byte{10}, 700),
	}
}

// registeredInput serializes a ListBuffers of vals (each in registered
// memory) and returns the bytes in registered memory.
func registeredInput(t *testing.T, pool *mem.Pool, vals [][]byte) mem.Buf {
	t.Helper()
	a := wire.NewArena()
	defer resetArena(t, a)
	m := cf.NewListBuffers(a)
	l := m.InitMessages(len(vals))
	for _, v := range vals {
		l.Append(v)
	}
	flat, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return memtest.Alloc(t, pool, flat)
}

// TestAppendBorrowedFromDecoded sets a list of a message in another arena
// from a decoded list in one AppendBorrowedFrom, within the list's reserved
// room and beyond it, at three thresholds: the message serializes as the
// one built with Append from the decoded values in the decoding arena (the
// same head, the same zero-copy windows of the input), AppendValues
// returns At's values, and after the decoding arena's
// Reset AppendBorrowedFrom reports ErrArenaReset and leaves the list as it
// was.
//
// It runs on the list of bulkValues and on a list of each one of them
// alone (the calls' one-element case).
func TestAppendBorrowedFromDecoded(t *testing.T) {
	pool := memtest.NewPool(t)
	all := bulkValues()
	checkAppendBorrowedFromDecoded(t, pool, all)
	for _, v := range all {
		checkAppendBorrowedFromDecoded(t, pool, [][]byte{v})
	}
}

func checkAppendBorrowedFromDecoded(t *testing.T, pool *mem.Pool, vals [][]byte) {
	t.Helper()
	in := registeredInput(t, pool, vals)
	defer memtest.Release(t, in)
	for _, thr := range []int{wire.DefaultThreshold, wire.CopyAll, 0} {
		for _, room := range []int{0, 2, len(vals), 2 * len(vals)} {
			ad := wire.NewArena()
			ad.Threshold = thr
			dm, err := cf.DecodeListBuffers(ad, in)
			if err != nil {
				t.Fatal(err)
			}
			dl, err := dm.GetMessages()
			if err != nil {
				t.Fatal(err)
			}
			// Into a slice without room and into one with room.
			for _, dst := range [][][]byte{{[]byte("before")}, append(make([][]byte, 0, 9), []byte("before"))} {
				got := dl.AppendValues(dst)
				if len(got) != 1+dl.Len() || string(got[0]) != "before" {
					t.Fatalf("AppendValues: %d values, want %d after the first", len(got), 1+dl.Len())
				}
				for i := range dl.Len() {
					if !bytes.Equal(got[1+i], dl.At(i)) || (got[1+i] == nil) != (dl.At(i) == nil) {
						t.Fatalf("AppendValues[%d] = %q, At = %q", i, got[1+i], dl.At(i))
					}
				}
			}
			// What an echo server built before: Append of each decoded value.
			wm := cf.NewListBuffers(ad)
			wl := wm.InitMessages(len(vals))
			for i := range dl.Len() {
				wl.Append(dl.At(i))
			}
			want := unfused(t, wm)

			ak := wire.NewArena()
			ak.Threshold = thr
			km := cf.NewListBuffers(ak)
			kl := km.InitMessages(room)
			if err := kl.AppendBorrowedFrom(dl); err != nil {
				t.Fatalf("thr %d room %d: AppendBorrowedFrom: %v", thr, room, err)
			}
			var g wire.SGA
			if err := km.SerializeSGA(&g); err != nil {
				t.Fatalf("thr %d room %d: SerializeSGA: %v", thr, room, err)
			}
			sameSGA(t, "AppendBorrowedFrom, fused", &g, want)
			sameSGA(t, "AppendBorrowedFrom, unfused", unfused(t, km), want)
			for i := range kl.Len() {
				if zc := kl.IsZeroCopy(i); zc != (len(vals[i]) >= thr && len(vals[i]) > 0) {
					t.Fatalf("thr %d room %d: element %d zero-copy %v", thr, room, i, zc)
				}
			}
			// SetBorrowedFrom into a list holding other elements, twice
			// (the totals start again): the same message.
			sm := cf.NewListBuffers(ak)
			sl := sm.InitMessages(room)
			sl.Append([]byte("old"))
			sl.Append(bytes.Repeat([]byte{1}, 600))
			for range 2 {
				if err := sl.SetBorrowedFrom(dl); err != nil {
					t.Fatalf("thr %d room %d: SetBorrowedFrom: %v", thr, room, err)
				}
				var g wire.SGA
				if err := sm.SerializeSGA(&g); err != nil {
					t.Fatalf("thr %d room %d: SerializeSGA: %v", thr, room, err)
				}
				sameSGA(t, "SetBorrowedFrom, fused", &g, want)
				sameSGA(t, "SetBorrowedFrom, unfused", unfused(t, sm), want)
			}
			// After the decoding arena's Reset, the decoded list is refused.
			resetArena(t, ad)
			if err := sl.SetBorrowedFrom(dl); !errors.Is(err, wire.ErrArenaReset) {
				t.Fatalf("thr %d room %d: SetBorrowedFrom after Reset = %v, want ErrArenaReset", thr, room, err)
			}
			if sl.Len() != len(vals) || !bytes.Equal(sl.At(0), vals[0]) {
				t.Fatalf("thr %d room %d: the refused list changed: %d elements", thr, room, sl.Len())
			}
			kl.Truncate(1)
			if err := kl.AppendBorrowedFrom(dl); !errors.Is(err, wire.ErrArenaReset) {
				t.Fatalf("thr %d room %d: AppendBorrowedFrom after Reset = %v, want ErrArenaReset", thr, room, err)
			}
			if kl.Len() != 1 || !bytes.Equal(kl.At(0), vals[0]) {
				t.Fatalf("thr %d room %d: the refused list changed: %d elements", thr, room, kl.Len())
			}
			resetArena(t, ak)
		}
	}
}

// TestAppendBorrowedFromBuilt appends a built list, of another arena and
// the list itself: the result serializes as the list built with
// AppendBorrowed from the same values (a registered value at or above the
// threshold zero-copy on its reference, the rest copied once).
func TestAppendBorrowedFromBuilt(t *testing.T) {
	pool := memtest.NewPool(t)
	vals := bulkValues()
	reg := make([][]byte, len(vals))
	for i, v := range vals {
		if len(v) == 0 {
			continue
		}
		b := memtest.Alloc(t, pool, v)
		defer memtest.Release(t, b)
		reg[i] = b.Bytes()
	}
	for _, thr := range []int{wire.DefaultThreshold, wire.CopyAll, 0} {
		a := wire.NewArena()
		a.Threshold = thr
		src := cf.NewListBuffers(a)
		sl := src.InitMessages(2)
		for _, v := range reg {
			sl.AppendBorrowed(v)
		}
		wm := cf.NewListBuffers(a)
		wl := wm.InitMessages(0)
		for range 2 {
			for _, v := range reg {
				wl.AppendBorrowed(v)
			}
		}
		want := unfused(t, wm)

		m := cf.NewListBuffers(a)
		l := m.InitMessages(1)
		if err := l.AppendBorrowedFrom(sl); err != nil {
			t.Fatal(err)
		}
		if err := l.AppendBorrowedFrom(l); err != nil { // itself: its elements twice
			t.Fatal(err)
		}
		var g wire.SGA
		if err := m.SerializeSGA(&g); err != nil {
			t.Fatal(err)
		}
		sameSGA(t, "AppendBorrowedFrom (built)", &g, want)
		// SetBorrowedFrom of a built list into a list holding other
		// elements, then of the list itself (unchanged).
		sm := cf.NewListBuffers(a)
		ss := sm.InitMessages(1)
		ss.Append([]byte("old"))
		if err := ss.SetBorrowedFrom(l); err != nil {
			t.Fatal(err)
		}
		if err := ss.SetBorrowedFrom(ss); err != nil {
			t.Fatal(err)
		}
		var gs wire.SGA
		if err := sm.SerializeSGA(&gs); err != nil {
			t.Fatal(err)
		}
		sameSGA(t, "SetBorrowedFrom (built)", &gs, want)
		if got := l.AppendValues(nil); len(got) != 2*len(vals) || !bytes.Equal(got[len(vals)+6], vals[6]) {
			t.Fatalf("thr %d: AppendValues of the built list: %d values", thr, len(got))
		}
		resetArena(t, a)
	}
}

// TestAppendBorrowedAll holds lists set with AppendBorrowedAll (within
// the reserved room, beyond it, after other elements, with a registered
// value at or above the threshold among small ones) to the lists set with
// AppendBorrowed one value at a time, at three thresholds.
func TestAppendBorrowedAll(t *testing.T) {
	pool := memtest.NewPool(t)
	big := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, big)
	small := [][]byte{[]byte("a"), nil, bytes.Repeat([]byte{3}, 33), []byte("tail")}
	mixed := [][]byte{[]byte("a"), big.Bytes(), nil, []byte("after")}
	for _, thr := range []int{wire.DefaultThreshold, wire.CopyAll, 0} {
		for _, vals := range [][][]byte{small, mixed} {
			for _, room := range []int{0, 1, len(vals) + 1} {
				a := wire.NewArena()
				a.Threshold = thr
				wm := cf.NewListBuffers(a)
				wl := wm.InitMessages(room)
				m := cf.NewListBuffers(a)
				l := m.InitMessages(room)
				wl.AppendBorrowed([]byte("first"))
				l.AppendBorrowed([]byte("first"))
				for _, v := range vals {
					wl.AppendBorrowed(v)
				}
				l.AppendBorrowedAll(vals)
				want := unfused(t, wm)
				var g wire.SGA
				if err := m.SerializeSGA(&g); err != nil {
					t.Fatal(err)
				}
				sameSGA(t, "AppendBorrowedAll, fused", &g, want)
				sameSGA(t, "AppendBorrowedAll, unfused", unfused(t, m), want)
				// Reused: Truncate(0) and the same values again, no growth.
				l.Truncate(0)
				l.AppendBorrowed([]byte("first"))
				l.AppendBorrowedAll(vals)
				if err := m.SerializeSGA(&g); err != nil {
					t.Fatal(err)
				}
				sameSGA(t, "AppendBorrowedAll, reused", &g, want)
				// SetBorrowedAll over the elements there: the list of the
				// values alone (twice: the totals start again), and of one
				// value.
				om := cf.NewListBuffers(a)
				ol := om.InitMessages(0)
				for _, v := range vals {
					ol.AppendBorrowed(v)
				}
				wantSet := unfused(t, om)
				for range 2 {
					l.SetBorrowedAll(vals)
					if err := m.SerializeSGA(&g); err != nil {
						t.Fatal(err)
					}
					sameSGA(t, "SetBorrowedAll", &g, wantSet)
					sameSGA(t, "SetBorrowedAll, unfused", unfused(t, m), wantSet)
				}
				for _, v := range vals {
					ol.Truncate(0)
					ol.AppendBorrowed(v)
					l.SetBorrowedAll([][]byte{v})
					if err := m.SerializeSGA(&g); err != nil {
						t.Fatal(err)
					}
					sameSGA(t, "SetBorrowedAll, one value", &g, unfused(t, om))
				}
				resetArena(t, a)
			}
		}
	}
}

// TestAppendBorrowedAllModified: a value set with AppendBorrowedAll and
// changed before the arena's Reset fails the checked build's serialization
// with ErrBorrowedModified, as AppendBorrowed's does.
func TestAppendBorrowedAllModified(t *testing.T) {
	a := wire.NewArena()
	v := []byte("borrowed")
	m := cf.NewListBuffers(a)
	m.InitMessages(2).AppendBorrowedAll([][]byte{[]byte("x"), v})
	var g wire.SGA
	if err := m.SerializeSGA(&g); err != nil {
		t.Fatal(err)
	}
	v[0] = 'B'
	err := m.SerializeSGA(&g)
	rerr := a.Reset()
	if !mem.Checked {
		if err != nil || rerr != nil {
			t.Fatalf("unchecked build: %v, Reset %v", err, rerr)
		}
		return
	}
	if !errors.Is(err, wire.ErrBorrowedModified) || !errors.Is(rerr, wire.ErrBorrowedModified) {
		t.Fatalf("after a change: SerializeSGA %v, Reset %v, want ErrBorrowedModified", err, rerr)
	}
}
