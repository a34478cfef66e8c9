package constructs_test

import (
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

// exercise touches everything of a decoded message (maps are loaded and
// their order checked by String and Equal), then re-serializes it; a
// message that is consistent (equal to itself) must decode again to an
// equal one, and Clone must copy it.
func exercise[P interface {
	wire.MessagePtr
	Equal(P) bool
	Clone(*wire.Arena) (P, error)
}](t *testing.T, a *wire.Arena, x P, newT func(*wire.Arena) P) {
	_ = x.String()
	if !x.Equal(x) {
		return // a list, map or nested message failed to load
	}
	p, err := wire.Flatten(x, nil)
	if err != nil {
		return // e.g. a nested message that fails its own checks
	}
	y := newT(a)
	if err := wire.DecodeBytes(y, p); err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	if !y.Equal(x) {
		t.Fatal("re-decoded message differs")
	}
	c, err := x.Clone(nil)
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	if !c.Equal(x) {
		t.Fatal("clone differs")
	}
}

// FuzzDecodeItem decodes arbitrary bytes as an Item: the oneof checks, the
// map entry lists and their key-order check (maps of every key kind and
// value kind), the well-known types (Struct's map and Value's oneof).
func FuzzDecodeItem(f *testing.F) {
	a := wire.NewArena()
	for seed := range uint64(8) {
		g := &gen{r: rand.New(rand.NewPCG(seed, 7)), a: a, t: f, small: true}
		p, err := wire.Flatten(g.item(1), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	fl := constructs.NewFlat(a)
	fl.SetI32(1)
	fl.SetName("x")
	p, _ := wire.Flatten(fl, nil)
	f.Add(p)
	f.Add([]byte{})
	if err := a.Reset(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		a := wire.NewArena()
		a.Limit = 1 << 20
		defer a.Reset()
		x := constructs.NewItem(a)
		if err := x.DecodeBytes(p); err != nil {
			return
		}
		_ = x.WhichChoice()
		_ = x.WhichSecond()
		exercise(t, a, x, constructs.NewItem)
	})
}

// FuzzDecodeReq decodes arbitrary bytes as a proto2 Req (required fields
// at two levels, a oneof, a map).
func FuzzDecodeReq(f *testing.F) {
	a := wire.NewArena()
	x := constructs.NewReq(a)
	x.SetId(1)
	x.SetName("n")
	x.InitInner().SetOk(true)
	x.InitNext().SetB("b")
	c, _ := x.GetCounts()
	c.Set("k", 2)
	p, _ := wire.Flatten(x, nil)
	f.Add(p)
	l := constructs.NewLoose(a)
	l.SetId(1)
	l.InitInner()
	p, _ = wire.Flatten(l, nil)
	f.Add(p)
	if err := a.Reset(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		a := wire.NewArena()
		a.Limit = 1 << 20
		defer a.Reset()
		x := constructs.NewReq(a)
		if err := x.DecodeBytes(p); err != nil {
			return
		}
		exercise(t, a, x, constructs.NewReq)
	})
}

// FuzzDecodeSparse decodes arbitrary bytes as a Sparse and an Item (the
// per-field decoder over both header forms) and as a Flat (the generated
// fast path, which reads a sparse header through synthesized bitmap words).
func FuzzDecodeSparse(f *testing.F) {
	a := wire.NewArena()
	for seed := range uint64(6) {
		g := &gen{r: rand.New(rand.NewPCG(seed, 9)), a: a, t: f, small: true}
		p, err := wire.Flatten(g.sparse(2), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	p, _ := wire.Flatten(sparseExample(a), nil)
	f.Add(p)
	f.Add([]byte{0, 0, 0, 0x80})
	if err := a.Reset(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		a := wire.NewArena()
		a.Limit = 1 << 20
		defer a.Reset()
		x := constructs.NewSparse(a)
		if err := x.DecodeBytes(p); err == nil {
			_ = x.WhichO()
			exercise(t, a, x, constructs.NewSparse)
		}
		y := constructs.NewItem(a)
		if err := y.DecodeBytes(p); err == nil {
			exercise(t, a, y, constructs.NewItem)
		}
		z := constructs.NewFlat(a) // the generated fast path
		if err := z.DecodeBytes(p); err == nil {
			exercise(t, a, z, constructs.NewFlat)
		}
	})
}
