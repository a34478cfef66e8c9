package constructs_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

// BenchmarkMapGet: a binary-search lookup in a decoded map of 64 entries.
func BenchmarkMapGet(b *testing.B) {
	a := wire.NewArena()
	x := constructs.NewItem(a)
	m, _ := x.GetByI32()
	for k := range int32(64) {
		m.Set(k, "v")
	}
	p, _ := wire.Flatten(x, nil)
	y := constructs.NewItem(a)
	if err := y.DecodeBytes(p); err != nil {
		b.Fatal(err)
	}
	ym, err := y.GetByI32()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok, _ := ym.Get(int32(i & 63)); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkDecodeMap64: decode an Item with a 64-entry map and load it
// (entries decoded, key order checked).
func BenchmarkDecodeMap64(b *testing.B) {
	a := wire.NewArena()
	x := constructs.NewItem(a)
	m, _ := x.GetByI32()
	for k := range int32(64) {
		m.Set(k, "v")
	}
	p, _ := wire.Flatten(x, nil)
	d := wire.NewArena()
	b.ReportAllocs()
	for b.Loop() {
		y := constructs.NewItem(d)
		if err := y.DecodeBytes(p); err != nil {
			b.Fatal(err)
		}
		if _, err := y.GetByI32(); err != nil {
			b.Fatal(err)
		}
		_ = d.Reset()
	}
}

// benchDecodeSparse decodes a Sparse with fields 1 and 2 and, when huge,
// field 536870911 (the sparse header form).
func benchDecodeSparse(b *testing.B, huge bool) {
	a := wire.NewArena()
	x := constructs.NewSparse(a)
	x.SetA(1)
	x.SetB("b")
	if huge {
		x.SetY("y")
	}
	p, _ := wire.Flatten(x, nil)
	d := wire.NewArena()
	b.ReportAllocs()
	for b.Loop() {
		y := constructs.NewSparse(d)
		if err := y.DecodeBytes(p); err != nil {
			b.Fatal(err)
		}
		_ = d.Reset()
	}
}

func BenchmarkDecodeSparseHeader(b *testing.B) { benchDecodeSparse(b, true) }
func BenchmarkDecodeBitmapHeader(b *testing.B) { benchDecodeSparse(b, false) }

// BenchmarkClone: Clone of a random Item into another arena and onto the
// heap.
func BenchmarkClone(b *testing.B) {
	a := wire.NewArena()
	x := constructs.NewItem(a)
	m, _ := x.GetByStr()
	for _, k := range []string{"a", "b", "c", "d"} {
		m.Set(k, make([]byte, 100))
	}
	x.InitAt().SetSeconds(5)
	c := wire.NewArena()
	b.Run("arena", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := x.Clone(c); err != nil {
				b.Fatal(err)
			}
			_ = c.Reset()
		}
	})
	b.Run("heap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := x.Clone(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
