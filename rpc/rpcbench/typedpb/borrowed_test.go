package typedpb

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// borrowedPre is the framing word of the inputs below (the service's OK
// response header in use; any word here).
const borrowedPre = 0x1122334455667788

// decodeBorrowed runs wireimpl.DecodeBorrowedBytes1 on pre+msg into *kept
// (bound to ka) and checks it against NewBlob then Decode of msg under
// BorrowInput in fa: when it decodes, Decode succeeds with the same value,
// the value aliases d (not zero-copy) and both serialize alike; when it
// declines, *kept is unchanged. It returns whether it decoded.
func decodeBorrowed(t testing.TB, fa, ka *wire.Arena, kept *Blob, pre uint64, msg []byte) bool {
	t.Helper()
	d := binary.LittleEndian.AppendUint64(nil, pre)
	d = append(d, msg...)
	before := *kept
	ok := wireimpl.DecodeBorrowedBytes1(&kept.cf, &kept.xData, 0x1, (*wireimpl.Arena)(ka), d, borrowedPre)
	if !ok {
		if !reflect.DeepEqual(before, *kept) {
			t.Fatalf("declined %x but changed the message", d)
		}
		return false
	}
	if pre != borrowedPre {
		t.Fatalf("decoded %x under another framing word", d)
	}
	fa.BorrowInput = true
	fresh := NewBlob(fa)
	ferr := fresh.DecodeBytes(msg)
	fa.BorrowInput = false
	if ferr != nil {
		t.Fatalf("decoded %x, which Decode rejects: %v", msg, ferr)
	}
	v := kept.GetData()
	if !bytes.Equal(v, fresh.GetData()) || len(v) == 0 || kept.xData.IsZeroCopy() {
		t.Fatalf("decoded %q (zero-copy %v), Decode %q", v, kept.xData.IsZeroCopy(), fresh.GetData())
	}
	if p0, pv := uintptr(unsafe.Pointer(unsafe.SliceData(d))), uintptr(unsafe.Pointer(&v[0])); pv < p0 || pv+uintptr(len(v)) > p0+uintptr(len(d)) {
		t.Fatalf("the value does not alias the input")
	}
	fb, ferr2 := wire.Flatten(fresh, nil)
	kb, kerr2 := wire.Flatten(kept, nil)
	if ferr2 != nil || kerr2 != nil || !bytes.Equal(fb, kb) {
		t.Fatalf("re-serialized: Decode's %x (%v), DecodeBorrowedBytes1's %x (%v)", fb, ferr2, kb, kerr2)
	}
	if ka.Held() != 0 {
		t.Fatalf("the arena holds %d references", ka.Held())
	}
	return true
}

// TestDecodeBorrowed: the service continuation's borrowing decode of a Blob
// response decodes exactly what Decode decodes, for every value shorter
// than the arena's threshold, around the word cases and the threshold
// (a lower one too); it declines a zero-copy value, an empty one, another
// framing word and hostile inputs, changing nothing; it allocates nothing.
func TestDecodeBorrowed(t *testing.T) {
	fa, ka, ba := wire.NewArena(), wire.NewArena(), wire.NewArena()
	defer func() { _, _, _ = fa.Reset(), ka.Reset(), ba.Reset() }()
	kept := _Echo_Blob_Reuse(nil, ka)
	src := bytes.Repeat([]byte("0123456789abcdef"), 64)
	for _, thr := range []int{wireimpl.DefaultThreshold, 20} {
		fa.Threshold, ka.Threshold = thr, thr
		for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 19, 20, 21, 31, 32, 33, 511, 512, 513, 1000} {
			m := NewBlob(ba)
			m.SetData(src[:n])
			msg, err := wire.Flatten(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			name := "threshold " + strconv.Itoa(thr) + " len " + strconv.Itoa(n)
			got := decodeBorrowed(t, fa, ka, kept, borrowedPre, msg)
			if want := n > 0 && n < thr && !mem.Checked; got != want {
				t.Fatalf("%s: decoded %v, want %v", name, got, want)
			}
			if decodeBorrowed(t, fa, ka, kept, borrowedPre^1, msg) {
				t.Fatalf("%s: decoded under another framing word", name)
			}
			if got && !bytes.Equal(kept.GetData(), src[:n]) {
				t.Fatalf("%s: %q", name, kept.GetData())
			}
			for _, a := range []*wire.Arena{fa, ka, ba} {
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	fa.Threshold, ka.Threshold = wireimpl.DefaultThreshold, wireimpl.DefaultThreshold
	bad := [][]byte{
		nil,
		{1, 0, 0, 0},
		{1, 0, 0, 0, 1, 0, 0, 0},
		{1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0}, // entry beyond the input
		{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0, 'h', 'e'},  // value cut short
		{1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'},
		{2, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'},
		{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff, 'h', 'e', 'l', 'l', 'o'}, // offset near 2^32
	}
	for i, b := range bad {
		if decodeBorrowed(t, fa, ka, kept, borrowedPre, b) {
			t.Fatalf("bad input %d (%x) decoded", i, b)
		}
	}
	good := []byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'}
	if !mem.Checked && (!decodeBorrowed(t, fa, ka, kept, borrowedPre, good) || string(kept.GetData()) != "hello") {
		t.Fatalf("after the bad inputs: %q", kept.GetData())
	}
	_, _ = fa.Reset(), ka.Reset()
	if mem.Checked {
		return
	}
	d := binary.LittleEndian.AppendUint64(nil, borrowedPre)
	d = append(d, good...)
	allocs := testing.AllocsPerRun(100, func() {
		if !wireimpl.DecodeBorrowedBytes1(&kept.cf, &kept.xData, 0x1, (*wireimpl.Arena)(ka), d, borrowedPre) {
			t.Fatal("declined")
		}
		_ = ka.Reset()
	})
	if allocs != 0 {
		t.Fatalf("DecodeBorrowedBytes1 allocates %v times", allocs)
	}
}

// FuzzDecodeBorrowed: on any input the borrowing decode either declines,
// changing nothing, or decodes what Decode decodes (decodeBorrowed), and
// never panics.
func FuzzDecodeBorrowed(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'}, true)
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 17, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'}, true)
	f.Add([]byte{0, 0, 0, 0}, false)
	fa, ka := wire.NewArena(), wire.NewArena()
	kept := _Echo_Blob_Reuse(nil, ka)
	f.Fuzz(func(t *testing.T, msg []byte, framed bool) {
		if len(msg) > 1<<16 {
			return
		}
		pre := uint64(borrowedPre)
		if !framed {
			pre++
		}
		decodeBorrowed(t, fa, ka, kept, pre, msg)
		if err := fa.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := ka.Reset(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFlatBytes1Head: the pieces the service's request writer uses instead
// of wireimpl.WriteFlatBytes1 (FlatBytes1, then PutFlatBytes1Head and the
// value) write what Blob's WireWriteFlat writes, and FlatBytes1 declines
// exactly when WireWriteFlat does for a lack of the direct path or a
// zero-copy value.
func TestFlatBytes1Head(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "flathead"})
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	src := make([]byte, 100)
	for i := range src {
		src[i] = byte(i*5 + 1)
	}
	check := func(name string, x *Blob) {
		t.Helper()
		want := make([]byte, 256)
		wn := x.WireWriteFlat(want)
		v, ok := wireimpl.FlatBytes1(&x.cf, &x.xData)
		if ok != (wn >= 0) {
			t.Fatalf("%s: FlatBytes1 %v, WireWriteFlat %d", name, ok, wn)
		}
		if !ok || len(v) == 0 {
			return
		}
		got := make([]byte, wireimpl.FlatBytes1Size, 256)
		wireimpl.PutFlatBytes1Head((*[wireimpl.FlatBytes1Size]byte)(got), 0x1, len(v))
		got = append(got, v...)
		if !bytes.Equal(got, want[:wn]) {
			t.Fatalf("%s: wrote %x, WireWriteFlat %x", name, got, want[:wn])
		}
	}
	for n := 0; n <= 100; n++ {
		x := NewBlob(a)
		x.SetData(src[:n])
		check("len "+strconv.Itoa(n), x)
	}
	big := memtest.Alloc(t, p, bytes.Repeat([]byte("zc"), 1024))
	x := NewBlob(a)
	x.SetDataBuf(big)
	memtest.Release(t, big)
	check("zero-copy", x)
	y := NewBlob(a)
	y.SetData(src[:20])
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	check("stale", y)
}
