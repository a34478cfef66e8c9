package cf

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// onePass runs the one pass alone on x (what WireSerializeSGA tries first)
// and reports whether it completed.
func onePass(x *Tree3, sga *wire.SGA) bool {
	var w wireimpl.OnePass
	s := (*wireimpl.SGA)(sga)
	if !x.cf.StartOnePass(&w, s) {
		return false
	}
	hdr, cp, zc := x.wireEnc1(&w, 0, w.Base(), 0, 0)
	return w.Finish(hdr, cp, zc)
}

// TestOnePassTaken checks when the one pass completes: after the two-pass
// path learned the header total, for a tree of the same shape whatever its
// values; not for a tree whose header total differs (one subtree fewer or
// more), until the two-pass path learned it; and with the bytes of the
// two-pass path.
func TestOnePassTaken(t *testing.T) {
	a := wire.NewArena()
	defer func() {
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}()
	build := func(drop bool, n int) *Tree3 {
		x := NewTree3(a)
		for _, t2 := range []*Tree2{x.InitLeft(), x.InitRight()} {
			for _, t1 := range []*Tree1{t2.InitLeft(), t2.InitRight()} {
				t1.InitLeft().SetMessage(bytes.Repeat([]byte{'l'}, n))
				if !drop {
					t1.InitRight().SetMessage(bytes.Repeat([]byte{'r'}, n+1))
				}
			}
		}
		return x
	}
	var sga, want wire.SGA
	x := build(false, 5)
	if onePass(x, &sga) {
		t.Fatal("one pass completed before the arena learned a base")
	}
	check := func(x *Tree3, taken bool) {
		t.Helper()
		if got := onePass(x, &sga); got != taken {
			t.Fatalf("one pass completed: %v, want %v", got, taken)
		}
		if !taken {
			if err := x.SerializeSGA(&sga); err != nil { // the fallback, which learns
				t.Fatal(err)
			}
		}
		sz := x.Sizes()
		want.Head = make([]byte, sz.Head())
		want.Entries = want.Entries[:0]
		if err := x.Serialize(want.Head, &want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sga.Head, want.Head) || len(sga.Entries) != len(want.Entries) {
			t.Fatalf("head %x, want %x", sga.Head, want.Head)
		}
	}
	check(x, false)
	check(build(false, 7), true)  // same shape, other values
	check(build(false, 70), true) // the head grows
	check(build(true, 3), false)  // fewer headers: the base is too large
	check(build(true, 9), true)
	check(build(false, 2), false) // more headers: they would cross the base
	check(build(false, 4), true)
}

// TestOnePassDecoded checks decoded trees (the direct decode and the
// Decoder path both decode these nested messages with their parent): each
// completes in one pass, with the bytes decoded.
func TestOnePassDecoded(t *testing.T) {
	a := wire.NewArena()
	defer func() {
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}()
	x := NewTree3(a)
	for _, t2 := range []*Tree2{x.InitLeft(), x.InitRight()} {
		for _, t1 := range []*Tree1{t2.InitLeft(), t2.InitRight()} {
			t1.InitLeft().SetMessage([]byte("left value"))
			t1.InitRight().SetMessage([]byte("r"))
		}
	}
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sga wire.SGA
	if err := x.SerializeSGA(&sga); err != nil { // learns the base (the same shape)
		t.Fatal(err)
	}
	check := func(what string, y *Tree3) {
		t.Helper()
		if !onePass(y, &sga) {
			t.Fatalf("%s: one pass did not complete", what)
		}
		if !bytes.Equal(sga.Head, p) || len(sga.Entries) != 0 {
			t.Fatalf("%s: head %x, want %x", what, sga.Head, p)
		}
	}
	y := NewTree3(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	check("direct decode", y)
	z := NewTree3(a)
	if err := wire.DecodeBytes(z, p); err != nil {
		t.Fatal(err)
	}
	check("Decoder path", z)
}
