package keepv2_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/keepv1"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/keepv2"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/proxy.hex")

// typedArena returns an arena whose messages write the typed form.
func typedArena() *wire.Arena {
	a := wire.NewArena()
	a.WriteTyped = true
	return a
}

func str(r *rand.Rand, n int) string {
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

func blob(r *rand.Rand, n int) []byte {
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func fillInner(r *rand.Rand, x *keepv2.Inner, depth int) {
	if r.IntN(2) == 0 {
		x.SetA(int32(r.Uint32()))
	}
	if r.IntN(2) == 0 {
		x.SetS(str(r, 12))
	}
	if depth < 3 && r.IntN(3) == 0 {
		fillInner(r, x.InitDeep(), depth+1)
	}
	if r.IntN(2) == 0 {
		l := x.InitBs(0)
		for range r.IntN(4) {
			l.Append(blob(r, 20))
		}
	}
	if r.IntN(2) == 0 {
		m, _ := x.GetM()
		for range r.IntN(4) {
			m.Set(str(r, 6), int64(r.Uint64()))
		}
	}
}

// fillRec sets a random subset of every field of x (nested Recs to depth 2).
func fillRec(r *rand.Rand, a *wire.Arena, x *keepv2.Rec, depth int) {
	if r.IntN(2) == 0 {
		x.SetId(r.Uint32())
	}
	if r.IntN(2) == 0 {
		x.SetName(str(r, 10))
	}
	if r.IntN(2) == 0 {
		x.SetN(int64(r.Uint64()))
	}
	if r.IntN(2) == 0 {
		x.SetBlob(blob(r, 40))
	}
	if r.IntN(2) == 0 {
		fillInner(r, x.InitInner(), 0)
	}
	if r.IntN(2) == 0 {
		l := x.InitInners(0)
		for range r.IntN(3) {
			v := keepv2.NewInner(a)
			fillInner(r, v, 1)
			l.Append(v)
		}
	}
	if r.IntN(2) == 0 {
		l := x.InitTags(0)
		for range r.IntN(4) {
			l.Append(str(r, 8))
		}
	}
	if r.IntN(2) == 0 {
		l := x.InitVals(0)
		for range r.IntN(5) {
			l.Append(r.Float64())
		}
	}
	if r.IntN(2) == 0 {
		l := x.InitFlags(0)
		for range r.IntN(5) {
			l.Append(r.IntN(2) == 0)
		}
	}
	if r.IntN(2) == 0 {
		l := x.InitSmall(0)
		for range r.IntN(5) {
			l.Append(int32(r.Uint32()))
		}
	}
	if depth < 2 && r.IntN(2) == 0 {
		fillRec(r, a, x.InitChild(), depth+1)
	}
	if depth < 2 && r.IntN(3) == 0 {
		l := x.InitKids(0)
		for range r.IntN(3) {
			v := keepv2.NewRec(a)
			fillRec(r, a, v, depth+1)
			l.Append(v)
		}
	}
	if r.IntN(2) == 0 {
		x.SetRatio(r.Float64())
	}
	if r.IntN(2) == 0 {
		x.SetNote(str(r, 10))
	}
	if r.IntN(3) == 0 {
		x.SetFar(r.Uint64())
	}
}

// proxy decodes p with the v1 schema, applies modify, and re-serializes.
func proxy(t testing.TB, p []byte, modify func(*keepv1.Rec)) []byte {
	t.Helper()
	a := wire.NewArena()
	x := keepv1.NewRec(a)
	if err := x.DecodeBytes(p); err != nil {
		t.Fatalf("v1 proxy decode: %v", err)
	}
	if modify != nil {
		modify(x)
	}
	out, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatalf("v1 proxy serialize: %v", err)
	}
	return out
}

// TestProxyRoundTrip: random v2 messages written typed pass through a v1
// proxy that changes a known field; the v2 reader sees every v2 field.
func TestProxyRoundTrip(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 21))
		a := typedArena()
		x := keepv2.NewRec(a)
		fillRec(r, a, x, 0)
		in, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := r.Uint32()
		out := proxy(t, in, func(y *keepv1.Rec) { y.SetId(id) })
		x.SetId(id)
		z := keepv2.NewRec(wire.NewArena())
		if err := z.DecodeBytes(out); err != nil {
			t.Fatalf("seed %d: v2 decode of the proxied message: %v", seed, err)
		}
		if !x.Equal(z) {
			t.Fatalf("seed %d: v2 fields lost by the proxy\n sent %v\n  got %v", seed, x, z)
		}
		// The proxied message is itself typed: a second proxy keeps
		// everything too, byte for byte.
		if again := proxy(t, out, nil); !bytes.Equal(again, out) {
			t.Fatalf("seed %d: second proxy changed the bytes\n%x\n%x", seed, out, again)
		}
	}
}

// TestProxyReverse: a v1 writer's field that v2 dropped survives a v2 proxy.
func TestProxyReverse(t *testing.T) {
	a := typedArena()
	x := keepv1.NewRec(a)
	x.SetId(5)
	x.SetLegacy("old")
	c := x.InitChild()
	c.SetLegacy("inner-old")
	in, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := wire.NewArena()
	y := keepv2.NewRec(b)
	if err := y.DecodeBytes(in); err != nil {
		t.Fatal(err)
	}
	y.SetNote("added by v2")
	out, err := wire.Flatten(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	z := keepv1.NewRec(wire.NewArena())
	if err := z.DecodeBytes(out); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(z) {
		t.Fatalf("v1 fields lost by the v2 proxy:\n sent %v\n  got %v", x, z)
	}
	// The v2 reader of the v2 proxy's output sees its own field and the
	// kept one is still there for the next hop.
	w := keepv2.NewRec(wire.NewArena())
	if err := w.DecodeBytes(out); err != nil {
		t.Fatal(err)
	}
	if s, _ := w.GetNote(); s != "added by v2" || !w.WireCore().HasUnknown() {
		t.Fatalf("note %q, kept %v", s, w.WireCore().UnknownNums(nil))
	}
}

// TestUntypedDropsUnknown: a message written without the typed form has
// no kinds; a v1 reader skips its unknown fields and writes the bytes of
// an ordinary v1 message.
func TestUntypedDropsUnknown(t *testing.T) {
	a := wire.NewArena()
	x := keepv2.NewRec(a)
	x.SetId(1)
	x.SetNote("lost")
	in, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := proxy(t, in, nil)
	b := wire.NewArena()
	want := keepv1.NewRec(b)
	want.SetId(1)
	wb, _ := wire.Flatten(want, nil)
	if !bytes.Equal(out, wb) {
		t.Fatalf("got %x want %x", out, wb)
	}
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

// goldenIn is the v2 message of docs/WIRE_FORMAT.md's proxy example,
// written typed: id = 7, blob = "hi", inner = {a: 9}, small = [1, 2].
func goldenIn(t *testing.T) []byte {
	a := typedArena()
	x := keepv2.NewRec(a)
	x.SetId(7)
	x.SetBlob([]byte("hi"))
	x.InitInner().SetA(9)
	l := x.InitSmall(0)
	l.Append(1)
	l.Append(2)
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProxyGolden pins the bytes a v1 proxy writes for goldenIn after
// setting id = 8 (docs/WIRE_FORMAT.md "Unknown fields kept").
func TestProxyGolden(t *testing.T) {
	out := proxy(t, goldenIn(t), func(y *keepv1.Rec) { y.SetId(8) })
	if *update {
		if err := os.WriteFile("testdata/proxy.hex", []byte(hex.EncodeToString(out)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readHex(t, "testdata/proxy.hex"); !bytes.Equal(out, want) {
		t.Fatalf("proxy bytes\n got %x\nwant %x", out, want)
	}
	z := keepv2.NewRec(wire.NewArena())
	if err := z.DecodeBytes(out); err != nil {
		t.Fatal(err)
	}
	in := keepv2.NewRec(wire.NewArena())
	if err := in.DecodeBytes(goldenIn(t)); err != nil {
		t.Fatal(err)
	}
	in.SetId(8)
	if !in.Equal(z) {
		t.Fatalf("v2 reads %v, want %v", z, in)
	}
}

// TestCloneKeeps: Clone (into an arena and onto the heap) keeps the kept
// fields of a proxied message.
func TestCloneKeeps(t *testing.T) {
	y := keepv1.NewRec(wire.NewArena())
	if err := y.DecodeBytes(goldenIn(t)); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*wire.Arena{wire.NewArena(), nil} {
		c, err := y.Clone(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(c.WireCore().UnknownNums(nil)); got != "[4 5 10]" {
			t.Fatalf("clone keeps %s", got)
		}
		p, err := wire.Flatten(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := proxy(t, goldenIn(t), nil); !bytes.Equal(p, want) {
			t.Fatalf("clone writes %x, want %x", p, want)
		}
	}
}

// TestKeptZeroCopy: a kept bytes value of a registered input at or above
// the threshold is re-sent as a window of that input (the arena holds the
// input until Reset); below it, it is copied. Pool accounting returns to 0.
func TestKeptZeroCopy(t *testing.T) {
	pool := memtest.NewPool(t)
	a := typedArena()
	x := keepv2.NewRec(a)
	x.SetId(3)
	big := bytes.Repeat([]byte("z"), 300)
	x.SetBlob(big)
	x.InitInner().InitBs(0).Append(bytes.Repeat([]byte("y"), 200))
	x.SetNote("short")
	in, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	rx := memtest.Alloc(t, pool, in)
	b := wire.NewArena()
	b.Threshold = 100
	y := keepv1.NewRec(b)
	if err := y.Decode(rx); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, rx) // the arena holds its own reference
	y.SetId(4)
	var sga wire.SGA
	if err := wire.SerializeSGA(y, &sga); err != nil {
		t.Fatal(err)
	}
	inb := rx.Bytes()
	within := func(p []byte) bool {
		return len(p) > 0 && uintptrOf(p) >= uintptrOf(inb) && uintptrOf(p)+uintptr(len(p)) <= uintptrOf(inb)+uintptr(len(inb))
	}
	if len(sga.Entries) != 2 || !within(sga.Entries[0].Bytes()) || !within(sga.Entries[1].Bytes()) ||
		!bytes.Equal(sga.Entries[0].Bytes(), big) {
		t.Fatalf("kept values not re-sent zero-copy: %d entries", len(sga.Entries))
	}
	out := sga.AppendTo(nil)
	z := keepv2.NewRec(wire.NewArena())
	if err := z.DecodeBytes(out); err != nil {
		t.Fatal(err)
	}
	x.SetId(4)
	if !x.Equal(z) {
		t.Fatalf("sent %v\n got %v", x, z)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	memtest.AssertInUse(t, pool, 0)
}

// TestNoUnknownAllocs: decoding and re-serializing a message without kept
// fields (untyped input) allocates nothing.
func TestNoUnknownAllocs(t *testing.T) {
	a := wire.NewArena()
	x := keepv1.NewRec(a)
	x.SetId(1)
	x.SetName("n")
	x.InitChild().SetId(2)
	in, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := wire.NewArena()
	var sga wire.SGA
	run := func() {
		if err := b.Reset(); err != nil {
			t.Fatal(err)
		}
		y := keepv1.NewRec(b)
		if err := y.DecodeBytes(in); err != nil {
			t.Fatal(err)
		}
		if _, err := y.GetChild(); err != nil {
			t.Fatal(err)
		}
		if err := wire.SerializeSGA(y, &sga); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 && !mem.Checked {
		// (the checked build gives a Reset arena new memory for its
		// messages, so that a message used after Reset is detected)
		t.Fatalf("%v allocs per decode+serialize without unknown fields", n)
	}
	if !bytes.Equal(sga.AppendTo(nil), in) {
		t.Fatal("re-serialized bytes differ")
	}
}

// TestDropUnknown: DropUnknown forgets the kept fields.
func TestDropUnknown(t *testing.T) {
	y := keepv1.NewRec(wire.NewArena())
	if err := y.DecodeBytes(goldenIn(t)); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(y.WireCore().UnknownNums(nil)); got != "[4 5 10]" {
		t.Fatalf("kept %s", got)
	}
	y.WireCore().DropUnknown()
	out, err := wire.Flatten(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	z := keepv2.NewRec(wire.NewArena())
	if err := z.DecodeBytes(out); err != nil || z.HasBlob() || z.HasInner() || z.GetId() != 7 {
		t.Fatalf("after DropUnknown: %v %v", z, err)
	}
}

// hostile cases: the golden input with one kept entry corrupted.
func TestKeptHostile(t *testing.T) {
	in := goldenIn(t)
	// Layout of goldenIn (typed, W = 1, fields 1, 4, 5, 10):
	// 0 word, 4 bitmap, 8 kinds[4], 12 entries (id, blob, inner, small).
	if in[3]&0x40 == 0 {
		t.Fatalf("not typed: %x", in)
	}
	put := func(p []byte, off int, v uint64) {
		for i := range 8 {
			p[off+i] = byte(v >> (8 * i))
		}
	}
	cases := []struct {
		name string
		edit func(p []byte)
		want error
	}{
		{"blob out of bounds", func(p []byte) { put(p, 20, 2|uint64(len(p))<<32) }, wire.ErrMalformed},
		{"blob huge", func(p []byte) { put(p, 20, 0xffffffff) }, wire.ErrMalformed},
		{"inner out of range", func(p []byte) { put(p, 28, 20|uint64(len(p)-4)<<32) }, wire.ErrMalformed},
		{"inner too small", func(p []byte) { put(p, 28, 2|44<<32) }, wire.ErrMalformed},
		{"inner points at the fixed part", func(p []byte) { put(p, 28, 20|0<<32) }, wire.ErrMalformed},
		{"small count huge", func(p []byte) { put(p, 36, 0x0fffffff|64<<32) }, wire.ErrMalformed},
		{"small out-of-line bools", func(p []byte) { p[11] = 3; put(p, 36, 0x80000002|0<<32) }, wire.ErrMalformed},
		{"kind zero", func(p []byte) { p[9] = 0 }, wire.ErrMalformed},
		{"kind too large", func(p []byte) { p[9] = 9 }, wire.ErrMalformed},
		{"inner untyped", func(p []byte) { p[44+3] &^= 0x40 }, wire.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := bytes.Clone(in)
			c.edit(p)
			y := keepv1.NewRec(wire.NewArena())
			err := y.DecodeBytes(p)
			if !errors.Is(err, c.want) {
				t.Fatalf("decode: %v, want %v (input %x)", err, c.want, p)
			}
		})
	}
}

// FuzzKeep: arbitrary input to the v1 reader; when it decodes, the proxy
// output decodes with both schemas and a second proxy gives the same bytes.
func FuzzKeep(f *testing.F) {
	f.Add(goldenInF(f))
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 7))
		a := typedArena()
		x := keepv2.NewRec(a)
		fillRec(r, a, x, 0)
		p, _ := wire.Flatten(x, nil)
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		a := wire.NewArena()
		a.Limit = 1 << 20
		y := keepv1.NewRec(a)
		if y.DecodeBytes(p) != nil {
			return
		}
		out, err := wire.Flatten(y, nil)
		if err != nil {
			return // a lazily decoded part may be malformed
		}
		z := keepv1.NewRec(wire.NewArena())
		if err := z.DecodeBytes(out); err != nil {
			t.Fatalf("v1 cannot decode the proxy's output: %v\n%x", err, out)
		}
		again, err := wire.Flatten(z, nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("second proxy: %v\n%x\n%x", err, out, again)
		}
		v := keepv2.NewRec(wire.NewArena())
		if err := v.DecodeBytes(out); err == nil {
			_ = v.String()
		}
	})
}

func goldenInF(f *testing.F) []byte {
	a := typedArena()
	x := keepv2.NewRec(a)
	x.SetId(7)
	x.SetBlob([]byte("hi"))
	x.InitInner().SetA(9)
	p, _ := wire.Flatten(x, nil)
	return p
}

func uintptrOf(p []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(p))) }

// BenchmarkProxy: a v1 proxy decodes a typed v2 message with kept fields
// of every kind, sets a known field and re-serializes it (the slow path),
// against the same message written untyped (the fast path, fields dropped).
func BenchmarkProxy(b *testing.B) {
	for _, typed := range []bool{true, false} {
		a := wire.NewArena()
		a.WriteTyped = typed
		x := keepv2.NewRec(a)
		fillRec(rand.New(rand.NewPCG(1, 2)), a, x, 1)
		x.SetId(1)
		x.SetName("proxy")
		in, err := wire.Flatten(x, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("typed=%v", typed), func(b *testing.B) {
			pa := wire.NewArena()
			var sga wire.SGA
			b.ReportAllocs()
			for b.Loop() {
				if err := pa.Reset(); err != nil {
					b.Fatal(err)
				}
				y := keepv1.NewRec(pa)
				if err := y.DecodeBytes(in); err != nil {
					b.Fatal(err)
				}
				y.SetId(2)
				if err := wire.SerializeSGA(y, &sga); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
