package alltypes_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestDirectDecodeRegistered decodes a Scalars with a string and a bytes
// field from registered memory, at thresholds around their sizes, with
// the generated direct decode (Decode → WireDecodeAt: BytesRange, then
// SetBytes/SetString) and with the Decoder path (wire.Decode), borrowing
// the input or not: both give the same values and the same zero-copy
// decisions (the entries a re-serialization sends zero-copy).
func TestDirectDecodeRegistered(t *testing.T) {
	pool := memtest.NewPool(t)
	for _, sizes := range [][2]int{{0, 0}, {1, 1}, {15, 16}, {16, 17}, {64, 300}, {300, 64}} {
		a := wire.NewArena()
		a.Threshold = 0
		x := alltypes.NewScalars(a)
		x.SetText(strings.Repeat("t", sizes[0]))
		x.SetData(bytes.Repeat([]byte("d"), sizes[1]))
		x.SetI32(-7)
		var sga wire.SGA
		if err := wire.SerializeSGA(x, &sga); err != nil {
			t.Fatal(err)
		}
		rx := memtest.Alloc(t, pool, sga.AppendTo(nil))
		for _, thr := range []int{0, 1, 16, 17, 64, wire.CopyAll} {
			for _, borrow := range []bool{false, true} {
				a := wire.NewArena()
				a.Threshold, a.BorrowInput = thr, borrow
				d, v := alltypes.NewScalars(a), alltypes.NewScalars(a)
				if err := d.Decode(rx); err != nil {
					t.Fatalf("sizes %v thr %d: direct decode: %v", sizes, thr, err)
				}
				if err := wire.Decode(v, rx); err != nil {
					t.Fatalf("sizes %v thr %d: Decoder path: %v", sizes, thr, err)
				}
				dt, err1 := d.GetText()
				vt, err2 := v.GetText()
				if err1 != nil || err2 != nil || dt != vt || len(dt) != sizes[0] ||
					!bytes.Equal(d.GetData(), v.GetData()) || len(d.GetData()) != sizes[1] || d.GetI32() != -7 {
					t.Errorf("sizes %v thr %d: direct %q/%v %d bytes, Decoder %q/%v %d bytes",
						sizes, thr, dt, err1, len(d.GetData()), vt, err2, len(v.GetData()))
				}
				var ds, vs wire.SGA
				if err := wire.SerializeSGA(d, &ds); err != nil {
					t.Fatal(err)
				}
				if err := wire.SerializeSGA(v, &vs); err != nil {
					t.Fatal(err)
				}
				want := 0
				for _, n := range sizes {
					if n > 0 && n >= thr {
						want++
					}
				}
				if len(ds.Entries) != len(vs.Entries) || len(ds.Entries) != want ||
					!bytes.Equal(ds.AppendTo(nil), vs.AppendTo(nil)) {
					t.Errorf("sizes %v thr %d: direct decode sends %d zero-copy entries, Decoder path %d, want %d",
						sizes, thr, len(ds.Entries), len(vs.Entries), want)
				}
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
			}
		}
		memtest.Release(t, rx)
	}
}
