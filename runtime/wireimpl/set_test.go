package wireimpl

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// setCase is one value set on a field or appended to a list while the
// arena holds a decoded input.
type setCase struct {
	name string
	p    []byte
}

// setCases are values in and around the decoded input all[1024:3072] of
// one registered item, and outside registered memory.
func setCases(all []byte) []setCase {
	heap := bytes.Repeat([]byte{7}, 600)
	return []setCase{
		{"inside-start", all[1024 : 1024+600]},
		{"inside-end", all[3072-600 : 3072]},
		{"whole-input", all[1024:3072]},
		{"inside-small", all[1100:1200]},
		{"inside-empty", all[1100:1100]},
		{"straddles-end", all[3000:3600]},
		{"straddles-start", all[900:1500]},
		{"before-input", all[100:700]},
		{"after-input", all[3200:3900]},
		{"heap-large", heap},
		{"heap-small", heap[:10]},
		{"nil", nil},
	}
}

// bytesState is what a Set decided: the value's bytes, whether it aliases
// p, whether (and with which window) it is zero-copy.
type bytesState struct {
	val     string
	aliases bool
	zc      bool
	buf     mem.Buf
}

func stateOf(b *Bytes, p []byte) bytesState {
	return bytesState{
		val:     string(b.data),
		aliases: len(p) != 0 && len(b.data) != 0 && unsafe.SliceData(b.data) == unsafe.SliceData(p),
		zc:      b.IsZeroCopy(),
		buf:     b.buf,
	}
}

// TestSetFromDecodedInput checks that Bytes.Set and BytesList.Append
// (whose first cases are a value inside the input the arena decoded last,
// and without a decoded input a registered value or a small copy) decide
// exactly as their general paths (Bytes.set, BytesList.appendSlow) do,
// value by value, with the same references taken (none for a value inside
// the input) and the same silent copies noted, at three thresholds, with
// and without a decoded input; that a zero-copy value inside the input
// shares the input's item and has p as its window; and that every
// reference returns at Reset.
func TestSetFromDecodedInput(t *testing.T) {
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
	for _, thr := range []int{DefaultThreshold, 0, CopyAll} {
		for _, mode := range []string{"decoded", "borrowed", "built"} {
			borrow, decoded := mode == "borrowed", mode != "built"
			t.Run(fmt.Sprintf("thr=%d/%s", thr, mode), func(t *testing.T) {
				a := NewArena()
				a.Threshold = thr
				a.BorrowInput = borrow
				var c Core
				c.Init(a)
				if decoded {
					if _, err := c.BeginDecode(in); err != nil {
						t.Fatal(err)
					}
					if a.lastSrc == nil {
						t.Fatal("no decoded input recorded")
					}
				}
				cases := setCases(all)
				var l1, l2 BytesList
				l1.Init(a, len(cases))
				l2.Init(a, len(cases))
				for _, tc := range cases {
					var b1, b2 Bytes
					held, refs, silent := a.Held(), item.Refs(), a.silentN
					b1.Set(a, tc.p)
					dHeld, dRefs, dSilent := a.Held()-held, item.Refs()-refs, a.silentN-silent
					held, refs, silent = a.Held(), item.Refs(), a.silentN
					b2.set(a, tc.p)
					if d := a.silentN - silent; d != dSilent {
						t.Errorf("%s: Set noted %d silent copies, set %d", tc.name, dSilent, d)
					}
					if s1, s2 := stateOf(&b1, tc.p), stateOf(&b2, tc.p); s1 != s2 {
						t.Errorf("%s: Set gives %+v, set %+v", tc.name, s1, s2)
					}
					if h, r := a.Held()-held, item.Refs()-refs; h != dHeld || r != dRefs {
						t.Errorf("%s: Set took %d held/%d refs, set %d/%d", tc.name, dHeld, dRefs, h, r)
					}
					held, refs, silent = a.Held(), item.Refs(), a.silentN
					l1.Append(tc.p)
					dHeld, dRefs, dSilent = a.Held()-held, item.Refs()-refs, a.silentN-silent
					held, refs, silent = a.Held(), item.Refs(), a.silentN
					l2.appendSlow(tc.p)
					if d := a.silentN - silent; d != dSilent {
						t.Errorf("%s: Append noted %d silent copies, appendSlow %d", tc.name, dSilent, d)
					}
					e1, e2 := &l1.items[len(l1.items)-1], &l2.items[len(l2.items)-1]
					if s1, s2 := stateOf(e1, tc.p), stateOf(e2, tc.p); s1 != s2 {
						t.Errorf("%s: Append gives %+v, appendSlow %+v", tc.name, s1, s2)
					}
					if h, r := a.Held()-held, item.Refs()-refs; h != dHeld || r != dRefs {
						t.Errorf("%s: Append took %d held/%d refs, appendSlow %d/%d", tc.name, dHeld, dRefs, h, r)
					}
					// A value of at least the threshold inside the input:
					// zero-copy on the input's reference, window p.
					if inside := tc.name == "inside-start" || tc.name == "inside-end" || tc.name == "whole-input"; decoded && inside && len(tc.p) >= thr {
						if !b1.IsZeroCopy() || !b1.buf.SameItem(in) || !bytes.Equal(b1.buf.Bytes(), tc.p) ||
							unsafe.SliceData(b1.buf.Bytes()) != unsafe.SliceData(tc.p) {
							t.Errorf("%s: not zero-copy on the input's window", tc.name)
						}
						if dHeld != 0 || dRefs != 0 {
							t.Errorf("%s: took %d held/%d refs, want none", tc.name, dHeld, dRefs)
						}
					}
				}
				if l1.Len() != len(cases) || !l1.Equal(&l2) {
					t.Errorf("lists differ: %d elements", l1.Len())
				}
				// Beyond the list's capacity: the general path grows it.
				var l3 BytesList
				l3.Init(a, 1)
				for range 3 {
					l3.Append(all[1024 : 1024+600])
				}
				if l3.Len() != 3 || !bytes.Equal(l3.At(2), all[1024:1024+600]) {
					t.Errorf("list beyond capacity: %d elements", l3.Len())
				}
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
				if a.Held() != 0 || item.Refs() != 1 {
					t.Errorf("after Reset: arena holds %d, item has %d references", a.Held(), item.Refs())
				}
			})
		}
	}
}
