package constructs_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// f32Bytes is vs in wire order.
func f32Bytes(vs ...float32) []byte {
	var p []byte
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(v))
	}
	return p
}

// goldenArrays is the message of testdata/packed.hex: f32 = [1, 2] from
// registered memory at threshold 8 (out of line, zero-copy) and i32 = [3]
// (in the header).
func goldenArrays(t *testing.T, a *wire.Arena, pool *mem.Pool) (*constructs.Arrays, mem.Buf) {
	t.Helper()
	buf := memtest.Alloc(t, pool, f32Bytes(1, 2))
	x := constructs.NewArrays(a)
	if err := x.InitF32(0).SetBuf(buf); err != nil {
		t.Fatal(err)
	}
	x.InitI32(1).Append(3)
	return x, buf
}

func readHex(t *testing.T, name string) []byte {
	t.Helper()
	s, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := hex.DecodeString(strings.Join(strings.Fields(string(s)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPackedGolden pins the out-of-line list entry {count | PackedFlag,
// offset} (docs/WIRE_FORMAT.md "Hybrid packed lists").
func TestPackedGolden(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	a.Threshold = 8
	x, buf := goldenArrays(t, a, pool)
	if sz := x.Sizes(); sz != (wire.Sizes{Header: 28, ZeroCopy: 8, Entries: 1}) {
		t.Fatalf("sizes %+v", sz)
	}
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); err != nil {
		t.Fatal(err)
	}
	if len(sga.Entries) != 1 || &sga.Entries[0].Bytes()[0] != &buf.Bytes()[0] {
		t.Fatal("f32 is not the registered buffer as its own entry")
	}
	got := sga.AppendTo(nil)
	want := readHex(t, "testdata/packed.hex")
	if !bytes.Equal(got, want) {
		t.Fatalf("bytes\n got %x\nwant %x", got, want)
	}
	// Below the threshold the same list is in the header: the bytes every
	// earlier writer produced.
	b := wire.NewArena()
	b.Threshold = 9
	y, buf2 := goldenArrays(t, b, pool)
	p, err := wire.Flatten(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := readHex(t, "testdata/packed-inline.hex"); !bytes.Equal(p, want) {
		t.Fatalf("in-line bytes\n got %x\nwant %x", p, want)
	}
	for _, ar := range []*wire.Arena{a, b} {
		if err := ar.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	memtest.Release(t, buf)
	memtest.Release(t, buf2)
	memtest.AssertInUse(t, pool, 0)
}

// TestPackedView: a decoded out-of-line list of a registered input is a
// typed view of the input (no copy), zero-copy again when re-sent, and is
// copied before it is modified; the echo allocates nothing.
func TestPackedView(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	a.Threshold = 8
	x, buf := goldenArrays(t, a, pool)
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, buf)
	rx := memtest.Alloc(t, pool, p)
	y := constructs.NewArrays(a)
	var sga wire.SGA
	echo := func() {
		if err := y.Decode(rx); err != nil {
			t.Fatal(err)
		}
		l, err := y.GetF32()
		if err != nil || l.Len() != 2 || l.At(1) != 2 {
			t.Fatal("f32", err)
		}
		if err := wire.SerializeSGA(y, &sga); err != nil {
			t.Fatal(err)
		}
	}
	echo()
	l, _ := y.GetF32()
	in := rx.Bytes()
	if !l.IsZeroCopy() || unsafe.Pointer(&l.Slice()[0]) != unsafe.Pointer(&in[28]) {
		t.Fatal("decoded f32 is not a view of the input")
	}
	if len(sga.Entries) != 1 || &sga.Entries[0].Bytes()[0] != &in[28] {
		t.Fatal("re-sent f32 is not zero-copy from the input")
	}
	if n := testing.AllocsPerRun(100, echo); n != 0 {
		t.Fatalf("echo: %v allocs", n)
	}
	l.SetAt(0, 9)
	if l.IsZeroCopy() || l.At(0) != 9 || !bytes.Equal(in[28:36], f32Bytes(1, 2)) {
		t.Fatal("SetAt wrote to the input")
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, rx)
	memtest.AssertInUse(t, pool, 0)
}

// TestPackedUnaligned: elements that are not aligned in the received
// buffer are copied into the arena (the values are the same).
func TestPackedUnaligned(t *testing.T) {
	want := readHex(t, "testdata/packed.hex")
	store := make([]byte, len(want)+8)
	for _, shift := range []int{0, 1, 2, 3, 4} {
		p := store[shift : shift+len(want)]
		copy(p, want)
		a := wire.NewArena()
		y := constructs.NewArrays(a)
		if err := y.DecodeBytes(p); err != nil {
			t.Fatal(err)
		}
		l, err := y.GetF32()
		if err != nil || l.Len() != 2 || l.At(0) != 1 || l.At(1) != 2 {
			t.Fatalf("shift %d: %v", shift, err)
		}
		aliased := unsafe.Pointer(&l.Slice()[0]) == unsafe.Pointer(&p[28])
		if aligned := uintptr(unsafe.Pointer(&p[28]))%4 == 0; aliased != aligned {
			t.Fatalf("shift %d: aliased %v, aligned %v", shift, aliased, aligned)
		}
		if l.IsZeroCopy() { // an unregistered input is never re-sent zero-copy
			t.Fatal("zero-copy from plain memory")
		}
	}
}

// TestPackedSetBufErrors: buffers that cannot be viewed are refused.
func TestPackedSetBufErrors(t *testing.T) {
	pool := memtest.NewPool(t)
	buf := memtest.Alloc(t, pool, make([]byte, 64))
	defer memtest.Release(t, buf)
	a := wire.NewArena()
	x := constructs.NewArrays(a)
	if err := x.InitF64(0).SetBuf(buf.Slice(4, 16)); !errors.Is(err, wire.ErrPackedBuf) {
		t.Fatalf("misaligned: %v", err)
	}
	if err := x.InitF32(0).SetBuf(buf.Slice(0, 6)); !errors.Is(err, wire.ErrPackedBuf) {
		t.Fatalf("odd length: %v", err)
	}
	if err := x.InitFlags(0).SetBuf(buf.Slice(0, 8)); !errors.Is(err, wire.ErrPackedBuf) {
		t.Fatalf("bools: %v", err)
	}
	if x.HasF64() || x.HasF32() || x.HasFlags() {
		t.Fatal("a refused SetBuf changed the list")
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
}

// TestPackedHostile: out-of-line entries no writer produces.
func TestPackedHostile(t *testing.T) {
	good := readHex(t, "testdata/packed.hex")
	put := func(off int, v uint32) []byte {
		p := bytes.Clone(good)
		binary.LittleEndian.PutUint32(p[off:], v)
		return p
	}
	cases := map[string][]byte{
		"count 0":          put(8, wire.PackedFlag),
		"count too large":  put(8, wire.PackedFlag|(wire.MaxListLen+1)),
		"count past end":   put(8, wire.PackedFlag|3),
		"offset past end":  put(12, 32),
		"offset wraps":     put(12, 0xfffffffc),
		"count huge wraps": put(8, wire.PackedFlag|0x7fffffff),
	}
	for name, p := range cases {
		a := wire.NewArena()
		y := constructs.NewArrays(a)
		err := y.DecodeBytes(p)
		if err == nil {
			_, err = y.GetF32()
		}
		if !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	// An old reader (any list of 4-byte elements) rejects the flag as
	// too many elements; a list of bools accepts and copies it.
	b := put(8, wire.PackedFlag|8)                    // flags: 8 bools, the 8 bytes at 28
	binary.LittleEndian.PutUint32(b[4:], 1<<12|1<<13) // kinds: [3] at 24
	y := constructs.NewArrays(wire.NewArena())
	if err := y.DecodeBytes(b); err != nil {
		t.Fatal(err)
	}
	fl, err := y.GetFlags()
	if err != nil || fl.Len() != 8 || fl.At(0) || !fl.At(2) || fl.IsZeroCopy() {
		t.Fatalf("bools: %v", err)
	}
}

// randArrays fills every list of x with n random elements (n varies per
// list), from registered memory (SetBuf) for about half of the lists.
// It returns how many lists must be zero-copy (registered, and at or
// above thr bytes).
func randArrays(t *testing.T, r *rand.Rand, pool *mem.Pool, x *constructs.Arrays, held *[]mem.Buf, thr int) int {
	zc := 0
	reg := func(p []byte) (mem.Buf, bool) {
		if len(p) == 0 || r.IntN(2) == 0 {
			return mem.Buf{}, false
		}
		b := memtest.Alloc(t, pool, p)
		*held = append(*held, b)
		if len(p) >= thr {
			zc++
		}
		return b, true
	}
	n := func() int { return []int{0, 1, 3, 64, 200}[r.IntN(5)] }
	fill32 := func(l interface {
		Append(uint32)
		SetBuf(mem.Buf) error
	}, k int) {
		var p []byte
		for range k {
			p = binary.LittleEndian.AppendUint32(p, r.Uint32())
		}
		if b, ok := reg(p); ok {
			if err := l.SetBuf(b); err != nil {
				t.Fatal(err)
			}
			return
		}
		for i := range k {
			l.Append(binary.LittleEndian.Uint32(p[4*i:]))
		}
	}
	fill64 := func(l interface {
		Append(uint64)
		SetBuf(mem.Buf) error
	}, k int) {
		var p []byte
		for range k {
			p = binary.LittleEndian.AppendUint64(p, r.Uint64())
		}
		if b, ok := reg(p); ok {
			if err := l.SetBuf(b); err != nil {
				t.Fatal(err)
			}
			return
		}
		for i := range k {
			l.Append(binary.LittleEndian.Uint64(p[8*i:]))
		}
	}
	// Typed lists via SetBuf on their bytes; Append for the rest.
	setF := func(k int) {
		l := x.InitF32(0)
		p := make([]byte, 0, 4*k)
		for range k {
			p = binary.LittleEndian.AppendUint32(p, math.Float32bits(float32(r.NormFloat64())))
		}
		if b, ok := reg(p); ok {
			if err := l.SetBuf(b); err != nil {
				t.Fatal(err)
			}
			return
		}
		for i := range k {
			l.Append(math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:])))
		}
	}
	setD := func(k int) {
		l := x.InitF64(0)
		p := make([]byte, 0, 8*k)
		for range k {
			p = binary.LittleEndian.AppendUint64(p, math.Float64bits(r.NormFloat64()))
		}
		if b, ok := reg(p); ok {
			if err := l.SetBuf(b); err != nil {
				t.Fatal(err)
			}
			return
		}
		for i := range k {
			l.Append(math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:])))
		}
	}
	setF(n())
	setD(n())
	fill32(x.InitU32(0), n())
	fill64(x.InitU64(0), n())
	fill32(x.InitX32(0), n())
	fill64(x.InitX64(0), n())
	li := x.InitI32(0)
	for range n() {
		li.Append(r.Int32())
	}
	l64 := x.InitS64(0)
	for range n() {
		l64.Append(r.Int64())
	}
	lb := x.InitFlags(0)
	for range n() {
		lb.Append(r.IntN(2) == 1)
	}
	return zc
}

// TestPackedRoundTrip: random lists of every numeric kind, from registered
// memory or not, at several thresholds, survive serialize (scatter-gather)
// and decode of the gathered bytes, are zero-copy exactly when registered
// and at or above the threshold, and decode again after a re-send.
func TestPackedRoundTrip(t *testing.T) {
	pool := memtest.NewPool(t)
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 21))
		a := wire.NewArena()
		a.Threshold = []int{0, 8, 64, 512, wire.CopyAll}[r.IntN(5)]
		var held []mem.Buf
		x := constructs.NewArrays(a)
		zc := randArrays(t, r, pool, x, &held, a.Threshold)
		var sga wire.SGA
		if err := wire.SerializeSGA(x, &sga); err != nil {
			t.Fatal(err)
		}
		if sz := x.Sizes(); sz.Entries != len(sga.Entries) || sz.Entries != zc {
			t.Fatalf("seed %d: sizes %+v, %d entries", seed, sz, len(sga.Entries))
		}
		rx := memtest.Alloc(t, pool, sga.AppendTo(nil))
		y := constructs.NewArrays(a)
		if err := y.Decode(rx); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !y.Equal(x) {
			t.Fatalf("seed %d: decoded differs:\n%v\n%v", seed, y, x)
		}
		// Re-send the decoded message and decode that.
		p, err := wire.Flatten(y, nil)
		if err != nil {
			t.Fatal(err)
		}
		z := constructs.NewArrays(a)
		if err := z.DecodeBytes(p); err != nil || !z.Equal(x) {
			t.Fatalf("seed %d: re-sent differs: %v", seed, err)
		}
		// Through Item (nested) and Clone into plain memory.
		it := constructs.NewItem(a)
		it.SetArrays(x)
		c, err := it.Clone(nil)
		if err != nil || !c.Equal(it) {
			t.Fatalf("seed %d: clone: %v", seed, err)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		memtest.Release(t, rx)
		for _, b := range held {
			memtest.Release(t, b)
		}
		memtest.AssertInUse(t, pool, 0)
	}
}

// FuzzDecodeArrays decodes arbitrary bytes as Arrays (out-of-line and
// in-header lists of every numeric kind), at arbitrary alignments.
func FuzzDecodeArrays(f *testing.F) {
	f.Add(uint8(0), []byte(nil))
	for _, name := range []string{"testdata/packed.hex", "testdata/packed-inline.hex"} {
		s, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		p, _ := hex.DecodeString(strings.Join(strings.Fields(string(s)), ""))
		f.Add(uint8(0), p)
		f.Add(uint8(1), p)
	}
	a := wire.NewArena()
	a.Limit = 1 << 20
	store := make([]byte, 1<<16+8)
	f.Fuzz(func(t *testing.T, shift uint8, p []byte) {
		if len(p) > 1<<16 {
			return
		}
		q := store[shift%8 : int(shift%8)+len(p)]
		copy(q, p)
		y := constructs.NewArrays(a)
		if err := y.DecodeBytes(q); err == nil {
			exercise(t, a, y, constructs.NewArrays)
			if l, err := y.GetF64(); err == nil && l.Len() > 0 {
				l.SetAt(0, 1) // never writes the input
			}
		}
		if !bytes.Equal(q, p) {
			t.Fatal("decoding modified the input")
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkPackedEcho decodes an Arrays holding 2048 float32 (8 KiB) from
// a registered input, reads one element and serializes it again: zero-copy
// (the list is viewed in place and re-sent as one entry) versus copied
// (threshold CopyAll: the list is a header region, copied twice).
func BenchmarkPackedEcho(b *testing.B) {
	for _, mode := range []string{"zerocopy", "copied"} {
		b.Run(mode, func(b *testing.B) {
			pool := memtest.NewPool(b)
			vals := make([]float32, 2048)
			for i := range vals {
				vals[i] = float32(i)
			}
			buf := memtest.Alloc(b, pool, f32Bytes(vals...))
			a := wire.NewArena()
			if mode == "copied" {
				a.Threshold = wire.CopyAll
			}
			x := constructs.NewArrays(a)
			if err := x.InitF32(0).SetBuf(buf); err != nil {
				b.Fatal(err)
			}
			p, err := wire.Flatten(x, nil)
			if err != nil {
				b.Fatal(err)
			}
			rx := memtest.Alloc(b, pool, p)
			var sga wire.SGA
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%1024 == 0 {
					if err := a.Reset(); err != nil {
						b.Fatal(err)
					}
				}
				y := constructs.NewArrays(a)
				if err := y.Decode(rx); err != nil {
					b.Fatal(err)
				}
				l, err := y.GetF32()
				if err != nil || l.At(7) != 7 {
					b.Fatal("f32")
				}
				if err := wire.SerializeSGA(y, &sga); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := a.Reset(); err != nil {
				b.Fatal(err)
			}
			memtest.Release(b, rx)
			memtest.Release(b, buf)
		})
	}
}
