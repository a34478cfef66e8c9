package constructs_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestOnePassLoose holds the one-pass SerializeSGA of a nested message with
// explicit-presence scalars and strings (Loose: id, name, a recursive next,
// an inner leaf of one bool) to Flatten: random chains, each serialized
// twice into one reused SGA (the second with the base the first learned),
// empty strings and zero values present.
func TestOnePassLoose(t *testing.T) {
	a := wire.NewArena()
	r := rand.New(rand.NewPCG(3, 21))
	var sga wire.SGA
	for i := range 300 {
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		x := constructs.NewLoose(a)
		l := x
		for d := r.IntN(6); ; d-- {
			if r.IntN(3) != 0 {
				l.SetId(int32(r.IntN(5)) - 2)
			}
			if r.IntN(3) != 0 {
				l.SetName(strings.Repeat("n", r.IntN(4)))
			}
			if r.IntN(2) == 0 {
				in := l.InitInner()
				if r.IntN(2) == 0 {
					in.SetOk(r.IntN(2) == 0)
				}
			}
			if d <= 0 {
				break
			}
			l = l.InitNext()
		}
		want, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := x.SerializeSGA(&sga); err != nil {
				t.Fatalf("chain %d: SerializeSGA: %v", i, err)
			}
			if !bytes.Equal(sga.Head, want) || len(sga.Entries) != 0 {
				t.Fatalf("chain %d: head %x, want %x", i, sga.Head, want)
			}
		}
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
}
