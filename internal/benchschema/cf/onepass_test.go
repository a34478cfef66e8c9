package cf_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The one-pass WireSerializeSGA of a nested message (no list below it)
// writes the copied values at the arena's learned header total and falls
// back to the two-pass path when the header total differs. These tests
// hold every serialization, whichever path it takes, to the unfused
// Sizes-then-Serialize: random trees with absent subtrees, absent, empty,
// copied and zero-copy leaves, serialized repeatedly into one reused SGA
// (the learned base is right, too large and too small by turns).

// randomTree5 builds a Tree5 in a: each subtree absent with probability
// 1/8 (when sparse), each leaf absent, empty, copied (random length) or
// zero-copy (a window of zc).
func randomTree5(r *rand.Rand, a *wire.Arena, zc mem.Buf, sparse bool) *cf.Tree5 {
	absent := func() bool { return sparse && r.IntN(8) == 0 }
	leaf := func(l *cf.SingleBuffer) {
		switch r.IntN(4) {
		case 0: // present message, empty value
		case 1:
			l.SetMessage(bytes.Repeat([]byte{byte(r.IntN(256))}, 1+r.IntN(300)))
		case 2:
			l.SetMessageBorrowed(bytes.Repeat([]byte{byte(r.IntN(256))}, 1+r.IntN(64)))
		default:
			n := 1 + r.IntN(zc.Len()-1)
			l.SetMessageBuf(zc.Slice(0, n))
		}
	}
	x := cf.NewTree5(a)
	for _, t4 := range []func() *cf.Tree4{x.InitLeft, x.InitRight} {
		if absent() {
			continue
		}
		t4 := t4()
		for _, t3 := range []func() *cf.Tree3{t4.InitLeft, t4.InitRight} {
			if absent() {
				continue
			}
			t3 := t3()
			for _, t2 := range []func() *cf.Tree2{t3.InitLeft, t3.InitRight} {
				if absent() {
					continue
				}
				t2 := t2()
				for _, t1 := range []func() *cf.Tree1{t2.InitLeft, t2.InitRight} {
					if absent() {
						continue
					}
					t1 := t1()
					for _, l := range []func() *cf.SingleBuffer{t1.InitLeft, t1.InitRight} {
						if !absent() {
							leaf(l())
						}
					}
				}
			}
		}
	}
	return x
}

func TestOnePassMatchesUnfused(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xab}, 2048))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	a.Threshold = 256 // copied values both below and at or above it
	defer resetArena(t, a)
	r := rand.New(rand.NewPCG(1, 21))
	var sga wire.SGA
	for i := range 400 {
		resetArena(t, a)
		x := randomTree5(r, a, zc, i%3 != 0)
		for range 2 { // the second finds the base the first learned
			if err := x.SerializeSGA(&sga); err != nil {
				t.Fatalf("tree %d: SerializeSGA: %v", i, err)
			}
			sameSGA(t, "one pass", &sga, unfused(t, x))
		}
		if i%7 == 0 { // a head too small for the learned base
			sga = wire.SGA{}
		}
	}
}

func TestOnePassErrors(t *testing.T) {
	a := wire.NewArena()
	defer resetArena(t, a)
	var sga wire.SGA
	full := func() *cf.Tree1 {
		x := cf.NewTree1(a)
		x.InitLeft().SetMessage([]byte("left"))
		x.InitRight().SetMessage([]byte("right"))
		return x
	}
	if err := full().SerializeSGA(&sga); err != nil { // learns the base
		t.Fatal(err)
	}
	// A nested message made before the Reset, held by a message of the
	// same shape made after: ErrArenaReset, not its stale bytes.
	old := cf.NewSingleBuffer(a)
	old.SetMessage([]byte("old!"))
	resetArena(t, a)
	y := full()
	y.SetLeft(old)
	if err := y.SerializeSGA(&sga); !errors.Is(err, wire.ErrArenaReset) {
		t.Fatalf("stale nested message: %v, want ErrArenaReset", err)
	}
	// The root after Reset.
	z := full()
	if err := z.SerializeSGA(&sga); err != nil {
		t.Fatal(err)
	}
	resetArena(t, a)
	if err := z.SerializeSGA(&sga); !errors.Is(err, wire.ErrArenaReset) {
		t.Fatalf("stale root: %v, want ErrArenaReset", err)
	}
}

func TestOnePassAllocs(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xab}, 2048))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)
	r := rand.New(rand.NewPCG(2, 21))
	x := randomTree5(r, a, zc, true)
	var sga wire.SGA
	if err := x.SerializeSGA(&sga); err != nil { // sizes the SGA, learns the base
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := x.SerializeSGA(&sga); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("one-pass SerializeSGA: %v allocs, want 0", n)
	}
}
