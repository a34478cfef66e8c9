package constructs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

// typedSparse builds a Sparse message in the typed header form, with a
// field 200 that Sparse does not know (a string "zz" of a newer schema):
// a = 7, b = "hi", next = {a: 9}, list = [1, -2]. gap > 0 lays it out
// unusually (values in reverse order, gap bytes between the regions), as
// another writer might.
func typedSparse(t testing.TB, gap int) []byte {
	ent := func(lo, hi int) uint64 { return uint64(uint32(lo)) | uint64(uint32(hi))<<32 }
	// Root fixed part: W = 7 (field 200), P = 5, K = 8: 4 + 28 + 8 + 40.
	const fixed = 80
	nested, _ := wire.AppendTypedHeader(nil, []wire.TypedField{{Num: 1, Kind: wire.KindScalar, Entry: 9}})
	nestedAt := fixed + gap
	listAt := nestedAt + len(nested) + gap
	hdrEnd := listAt + 16
	hiAt, zzAt := hdrEnd, hdrEnd+2
	if gap > 0 {
		zzAt, hiAt = hdrEnd+gap, hdrEnd+gap+2
	}
	p, err := wire.AppendTypedHeader(nil, []wire.TypedField{
		{Num: 1, Kind: wire.KindScalar, Entry: 7},
		{Num: 2, Kind: wire.KindBytes, Entry: ent(2, hiAt)},
		{Num: 3, Kind: wire.KindMessage, Entry: ent(len(nested), nestedAt)},
		{Num: 100, Kind: wire.KindList8, Entry: ent(2, listAt)},
		{Num: 200, Kind: wire.KindBytes, Entry: ent(2, zzAt)},
	})
	if err != nil || len(p) != fixed {
		t.Fatalf("fixed part %d bytes, %v", len(p), err)
	}
	p = append(p, make([]byte, gap)...)
	p = append(p, nested...)
	p = append(p, make([]byte, gap)...)
	p = binary.LittleEndian.AppendUint64(p, 1)
	p = binary.LittleEndian.AppendUint64(p, uint64(1<<64-2)) // -2
	if gap > 0 {
		p = append(p, make([]byte, gap)...)
		p = append(p, "zzhi"...)
	} else {
		p = append(p, "hizz"...)
	}
	return p
}

// TestTypedGolden pins the typed header form (docs/WIRE_FORMAT.md "Typed
// header form"), shows that a reader whose schema lacks a field reads the
// others and ignores it, and that CopyTyped moves every field, the
// unknown one included, into a fresh object in the canonical layout.
func TestTypedGolden(t *testing.T) {
	canon := typedSparse(t, 0)
	if want := readHex(t, "testdata/typed.hex"); !bytes.Equal(canon, want) {
		t.Fatalf("typed bytes\n got %x\nwant %x", canon, want)
	}
	for _, gap := range []int{0, 3, 8} {
		p := typedSparse(t, gap)
		x := constructs.NewSparse(wire.NewArena())
		if err := x.DecodeBytes(p); err != nil {
			t.Fatalf("gap %d: %v", gap, err)
		}
		b, _ := x.GetB()
		next, err := x.GetNext()
		l, lerr := x.GetList()
		if err != nil || lerr != nil || x.GetA() != 7 || b != "hi" || next.GetA() != 9 || l.Len() != 2 || l.At(1) != -2 {
			t.Fatalf("gap %d: decoded %v (%v, %v)", gap, x, err, lerr)
		}
		c, err := wire.CopyTyped(nil, p, 1<<20)
		if err != nil {
			t.Fatalf("gap %d: CopyTyped: %v", gap, err)
		}
		if !bytes.Equal(c, canon) {
			t.Fatalf("gap %d: copy\n got %x\nwant %x", gap, c, canon)
		}
	}
	fs, n, err := wire.ReadTypedHeader(canon, nil)
	if err != nil || n != 80 || len(fs) != 5 || fs[4].Num != 200 || fs[4].Kind != wire.KindBytes {
		t.Fatalf("ReadTypedHeader: %v %d %v", fs, n, err)
	}
	if v := fs[4].Entry; string(canon[v>>32:v>>32+uint64(uint32(v))]) != "zz" {
		t.Fatal("field 200 is not kept")
	}
	// An untyped reader's schema-less header codec refuses the typed form.
	if _, _, err := wire.ReadHeader(canon, nil); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("ReadHeader of a typed header: %v", err)
	}
}

// TestTypedSparseVariant: the sparse variant (a field above 65536) is read
// by the generated reader and copied by CopyTyped.
func TestTypedSparseVariant(t *testing.T) {
	p, err := wire.AppendTypedHeader(nil, []wire.TypedField{
		{Num: 1, Kind: wire.KindScalar, Entry: 5},
		{Num: 65537, Kind: wire.KindBytes, Entry: 3 | uint64(4+8+4+16)<<32},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 4+8+4+16 || binary.LittleEndian.Uint32(p) != wire.SparseFlag|wire.TypedFlag|2 {
		t.Fatalf("sparse typed fixed part %x", p)
	}
	p = append(p, "mid"...)
	x := constructs.NewSparse(wire.NewArena())
	if err := x.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if x.GetA() != 5 || string(x.GetMid()) != "mid" {
		t.Fatalf("decoded %v", x)
	}
	c, err := wire.CopyTyped(nil, p, 1<<20)
	if err != nil || !bytes.Equal(c, p) {
		t.Fatalf("copy %x, %v", c, err)
	}
}

// TestTypedHostile: typed objects no writer produces are refused with
// ErrMalformed (or ErrTooLarge for a copy over the limit) by CopyTyped
// and by the generated reader, without panicking.
func TestTypedHostile(t *testing.T) {
	canon := typedSparse(t, 0)
	put := func(off int, v uint32) []byte {
		p := bytes.Clone(canon)
		binary.LittleEndian.PutUint32(p[off:], v)
		return p
	}
	// Kinds at 32..40, entries at 40 (field k at 40+8k).
	cases := map[string][]byte{
		"kind zero":          func() []byte { p := bytes.Clone(canon); p[32] = 0; return p }(),
		"kind too large":     func() []byte { p := bytes.Clone(canon); p[33] = 9; return p }(),
		"padding non-zero":   func() []byte { p := bytes.Clone(canon); p[39] = 1; return p }(),
		"bytes out of range": put(52, 200),
		"nested overlaps":    put(60, 60),
		"nested too big":     put(56, 100),
		"list past end":      put(64, 1000),
		"list count huge":    put(64, wire.MaxListLen+1),
		"truncated":          canon[:60],
		"words too many":     put(0, wire.TypedFlag|(wire.MaxBitmapWords+1)),
	}
	for name, p := range cases {
		if _, err := wire.CopyTyped(nil, p, 1<<20); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: CopyTyped: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := wire.CopyTyped(nil, canon, len(canon)-1); !errors.Is(err, wire.ErrTooLarge) {
		t.Errorf("limit: %v, want ErrTooLarge", err)
	}
	// Amplification: one 1000-byte value referenced by 1000 list entries
	// would copy to 1 MB; the limit refuses it before allocating.
	p, _ := wire.AppendTypedHeader(nil, []wire.TypedField{{Num: 1, Kind: wire.KindBytesList, Entry: 1000 | 20<<32}})
	val := len(p) + 8000
	for range 1000 {
		p = binary.LittleEndian.AppendUint64(p, 1000|uint64(val)<<32)
	}
	p = append(p, make([]byte, 1000)...)
	if _, err := wire.CopyTyped(nil, p, 1<<16); !errors.Is(err, wire.ErrTooLarge) {
		t.Errorf("amplification: %v, want ErrTooLarge", err)
	}
	if testing.AllocsPerRun(10, func() { _, _ = wire.CopyTyped(nil, p, 1<<16) }) > 2 {
		t.Error("the refused copy allocated its output")
	}
}

// FuzzCopyTyped copies arbitrary bytes as a typed object: a copy is
// canonical (copying it again gives the same bytes) and decodes as Sparse
// exactly when the original does.
func FuzzCopyTyped(f *testing.F) {
	for _, gap := range []int{0, 5} {
		f.Add(typedSparse(f, gap))
	}
	if s, err := os.ReadFile("testdata/typed.hex"); err == nil {
		f.Add(s[:0])
	}
	a := wire.NewArena()
	a.Limit = 1 << 20
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := wire.CopyTyped(nil, p, 1<<20)
		x := constructs.NewSparse(a)
		_ = x.DecodeBytes(p) // the generated reader of the typed form: no panic
		_ = x.String()
		if err == nil {
			c2, err := wire.CopyTyped(nil, c, 1<<20)
			if err != nil || !bytes.Equal(c, c2) {
				t.Fatalf("copy of a copy: %v\n%x\n%x", err, c, c2)
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	})
}
