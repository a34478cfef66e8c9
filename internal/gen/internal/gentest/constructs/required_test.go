package constructs_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

func TestRequired(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	full := func() *constructs.Req {
		x := constructs.NewReq(a)
		x.SetId(0) // present although zero
		x.SetName("")
		x.InitInner().SetOk(false)
		return x
	}
	x := full()
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := constructs.NewReq(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatalf("complete message: %v", err)
	}
	if !y.Equal(x) {
		t.Fatal("round trip")
	}

	// Missing fields, written by a Loose writer: the error names the field.
	for _, tt := range []struct {
		build func(l *constructs.Loose)
		field string
	}{
		{func(l *constructs.Loose) { l.SetName("n"); l.InitInner().SetOk(true) }, "gentest.constructs.req.Req.id (1)"},
		{func(l *constructs.Loose) { l.SetId(1); l.InitInner().SetOk(true) }, "gentest.constructs.req.Req.name (2)"},
		{func(l *constructs.Loose) { l.SetId(1); l.SetName("n") }, "gentest.constructs.req.Req.inner (4)"},
	} {
		l := constructs.NewLoose(a)
		tt.build(l)
		p, _ := wire.Flatten(l, nil)
		y := constructs.NewReq(a)
		err := y.DecodeBytes(p)
		if !errors.Is(err, wire.ErrRequired) || !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("missing %s: %v", tt.field, err)
		}
	}

	// A required field of a nested message is checked when it is decoded.
	l := constructs.NewLoose(a)
	l.SetId(1)
	l.SetName("n")
	l.InitInner() // without ok
	p, _ = wire.Flatten(l, nil)
	y = constructs.NewReq(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatalf("root decode: %v", err)
	}
	if _, err := y.GetInner(); !errors.Is(err, wire.ErrRequired) || !strings.Contains(err.Error(), "gentest.constructs.req.Req.Inner.ok (1)") {
		t.Fatalf("nested required: %v", err)
	}
}

// req makes a random complete Req (required fields set at every level).
func (g *gen) req(depth int) *constructs.Req {
	x := constructs.NewReq(g.a)
	r := g.r
	x.SetId(int32(r.Uint32()))
	x.SetName(g.str())
	x.InitInner().SetOk(g.chance())
	switch r.IntN(3) {
	case 0:
		x.SetA(int32(r.Uint32()))
	case 1:
		x.SetB(g.str())
	}
	if g.chance() {
		m, _ := x.GetCounts()
		for range g.n() {
			m.Set(g.str(), int32(r.Uint32()))
		}
	}
	if depth > 0 && g.chance() {
		x.SetNext(g.req(depth - 1))
	}
	return x
}

// TestPropertyRequired: random proto2 messages with required fields at
// several levels, a oneof and a map survive a round trip and a Clone.
func TestPropertyRequired(t *testing.T) {
	for seed := range uint64(200) {
		a, b := wire.NewArena(), wire.NewArena()
		g := &gen{r: rand.New(rand.NewPCG(seed, 2)), a: a, t: t}
		x := g.req(3)
		p, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := constructs.NewReq(b)
		if err := y.DecodeBytes(p); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !y.Equal(x) || y.String() != x.String() {
			t.Fatalf("seed %d: round trip\n got %v\nwant %v", seed, y, x)
		}
		c, err := y.Clone(nil)
		if err != nil || !c.Equal(x) {
			t.Fatalf("seed %d: clone %v", seed, err)
		}
		_ = a.Reset()
		_ = b.Reset()
	}
}
