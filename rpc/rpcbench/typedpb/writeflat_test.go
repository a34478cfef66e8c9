package typedpb

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestWriteRequestFlat: the service stubs' in-place writers of Blob
// (_Echo_Echo_WriteRequest, _Echo_Echo_WriteResponse:
// wireimpl.WriteFlatBytes1) write exactly what Blob's WireWriteFlat writes
// and decline (-1) exactly when it does — every value length around the
// word-copy cases, every destination length around the fit, a zero-copy
// value, a stale message, a request of another type — and what they write
// decodes to the value.
func TestWriteRequestFlat(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "writeflat"})
	a := wire.NewArena()
	defer func() {
		if err := a.Reset(); err != nil {
			t.Error(err)
		}
	}()
	src := make([]byte, 700)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	check := func(name string, x *Blob, dlen int) {
		t.Helper()
		want := bytes.Repeat([]byte{0xee}, dlen)
		wn := x.WireWriteFlat(want)
		for _, w := range []struct {
			fn   func([]byte) int
			what string
		}{
			{func(d []byte) int { return _Echo_Echo_WriteRequest(x, d) }, "WriteRequest"},
			{func(d []byte) int { return _Echo_Echo_WriteResponse(x, d) }, "WriteResponse"},
		} {
			got := bytes.Repeat([]byte{0xee}, dlen)
			gn := w.fn(got)
			if gn != wn || gn >= 0 && !bytes.Equal(got[:gn], want[:wn]) {
				t.Fatalf("%s, dst %d: %s wrote %d %x, WireWriteFlat %d %x", name, dlen, w.what, gn, got[:max(gn, 0)], wn, want[:max(wn, 0)])
			}
		}
		if wn < 0 {
			return
		}
		b := NewBlob(a)
		if err := b.DecodeBytes(want[:wn]); err != nil || !bytes.Equal(b.GetData(), x.GetData()) {
			t.Fatalf("%s, dst %d: decodes to %q, %v; want %q", name, dlen, b.GetData(), err, x.GetData())
		}
	}
	lens := []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 64, 511, 512, 700}
	for _, n := range lens {
		x := NewBlob(a)
		x.SetData(src[:n])
		for _, dlen := range []int{0, 3, 4, 15, 16, n + 15, n + 16, n + 17, n + 64} {
			check("len "+strconv.Itoa(n), x, dlen)
		}
	}
	// A zero-copy value: both decline.
	big := memtest.Alloc(t, p, bytes.Repeat([]byte("zc"), 1024))
	x := NewBlob(a)
	x.SetDataBuf(big)
	memtest.Release(t, big)
	if !x.xData.IsZeroCopy() {
		t.Fatal("the registered value is not zero-copy")
	}
	check("zero-copy", x, 4096)
	// Not a Blob: declined.
	if n := _Echo_Echo_WriteRequest(nil, make([]byte, 64)); n != -1 {
		t.Fatalf("a nil request wrote %d", n)
	}
	// A stale message (its arena reset since): both decline.
	y := NewBlob(a)
	y.SetData(src[:20])
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	check("stale", y, 64)
	// The word copies do not read or write past the value.
	z := NewBlob(a)
	z.SetData(src[3 : 3+20 : 3+20])
	d := make([]byte, 16+20+8)
	if n := _Echo_Echo_WriteRequest(z, d[:36]); n != 36 || !bytes.Equal(d[16:36], src[3:23]) || !bytes.Equal(d[36:], make([]byte, 8)) {
		t.Fatalf("wrote %d: %x", n, d)
	}
	if !mem.Checked {
		allocs := testing.AllocsPerRun(100, func() {
			if _Echo_Echo_WriteRequest(z, d) < 0 {
				t.Fatal("declined")
			}
		})
		if allocs != 0 {
			t.Fatalf("WriteRequest allocates %v times", allocs)
		}
	}
}
