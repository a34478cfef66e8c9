package alltypes_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/other"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// gen makes random messages; values of at least 256 bytes come from
// registered memory when a pool is given, so that they may be zero-copy.
type gen struct {
	r    *rand.Rand
	a    *wire.Arena
	pool *mem.Pool
	t    testing.TB
	held []mem.Buf
}

func (g *gen) bytes() []byte {
	var n int
	switch g.r.IntN(4) {
	case 0:
		n = 0
	case 1, 2:
		n = g.r.IntN(64)
	default:
		n = 256 + g.r.IntN(2048)
	}
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(g.r.Uint32())
	}
	if n >= 256 && g.pool != nil {
		b := memtest.Alloc(g.t, g.pool, p)
		g.held = append(g.held, b)
		return b.Bytes()
	}
	return p
}

func (g *gen) str() string {
	runes := []rune{'a', 'z', 'é', '世', '🙂', '\x00'}
	n := g.r.IntN(8)
	s := make([]rune, n)
	for i := range s {
		s[i] = runes[g.r.IntN(len(runes))]
	}
	return string(s)
}

func (g *gen) chance() bool { return g.r.IntN(2) == 0 }

func (g *gen) scalars() *alltypes.Scalars {
	x := alltypes.NewScalars(g.a)
	r := g.r
	if g.chance() {
		x.SetI32(int32(r.Uint32()))
	}
	if g.chance() {
		x.SetI64(int64(r.Uint64()))
	}
	if g.chance() {
		x.SetU32(r.Uint32())
	}
	if g.chance() {
		x.SetU64(r.Uint64())
	}
	if g.chance() {
		x.SetS32(int32(r.Uint32()))
	}
	if g.chance() {
		x.SetS64(int64(r.Uint64()))
	}
	if g.chance() {
		x.SetF32(r.Uint32())
	}
	if g.chance() {
		x.SetF64(r.Uint64())
	}
	if g.chance() {
		x.SetSf32(int32(r.Uint32()))
	}
	if g.chance() {
		x.SetSf64(int64(r.Uint64()))
	}
	x.SetFlag(g.chance())
	if g.chance() {
		x.SetRatio(math.Float32frombits(r.Uint32()))
	}
	if g.chance() {
		x.SetScore(math.Float64frombits(r.Uint64()))
	}
	x.SetKind(alltypes.Kind(r.IntN(4) - 1))
	x.SetText(g.str())
	x.SetData(g.bytes())
	return x
}

func (g *gen) optionals() *alltypes.Optionals {
	x := alltypes.NewOptionals(g.a)
	if g.chance() {
		x.SetI32(int32(g.r.IntN(3)))
	}
	if g.chance() {
		x.SetU64(uint64(g.r.IntN(3)))
	}
	if g.chance() {
		x.SetFlag(g.chance())
	}
	if g.chance() {
		x.SetScore(float64(g.r.IntN(3)))
	}
	if g.chance() {
		x.SetKind(alltypes.Kind(g.r.IntN(3)))
	}
	if g.chance() {
		x.SetText(g.str())
	}
	if g.chance() {
		x.SetData(g.bytes())
	}
	return x
}

func (g *gen) lists() *alltypes.Lists {
	x := alltypes.NewLists(g.a)
	n := func() int { return g.r.IntN(5) }
	for range n() {
		x.InitI32S(0).Append(int32(g.r.Uint32()))
	}
	l64 := x.InitU64S(n())
	for range n() {
		l64.Append(g.r.Uint64())
	}
	s64 := x.InitS64S(0)
	for range n() {
		s64.Append(int64(g.r.Uint64()))
	}
	f32 := x.InitF32S(1)
	for range n() {
		f32.Append(g.r.Uint32())
	}
	fl := x.InitFlags(0)
	for range n() {
		fl.Append(g.chance())
	}
	ra := x.InitRatios(0)
	for range n() {
		ra.Append(math.Float32frombits(g.r.Uint32()))
	}
	sc := x.InitScores(0)
	for range n() {
		sc.Append(math.Float64frombits(g.r.Uint64()))
	}
	k := x.InitKinds(0)
	for range n() {
		k.Append(int32(g.r.IntN(4) - 1))
	}
	tx := x.InitTexts(0)
	for range n() {
		tx.Append(g.str())
	}
	bl := x.InitBlobs(0)
	for range n() {
		bl.Append(g.bytes())
	}
	it := x.InitItems(0)
	for range g.r.IntN(3) {
		it.Append(g.scalars())
	}
	return x
}

func (g *gen) outer() *alltypes.Outer {
	x := alltypes.NewOuter(g.a)
	inner := func() *alltypes.Outer_Inner {
		in := alltypes.NewOuter_Inner(g.a)
		in.SetState(alltypes.Outer_Inner_State(g.r.IntN(2)))
		in.SetPayload(g.bytes())
		return in
	}
	if g.chance() {
		x.SetInner(inner())
	}
	ins := x.InitInners(0)
	for range g.r.IntN(3) {
		ins.Append(inner())
	}
	if g.chance() {
		b := x.InitBlob()
		b.SetData(g.bytes())
		b.SetName(g.str())
		b.SetLevel(other.Level(g.r.IntN(3)))
	}
	bs := x.InitBlobs(0)
	for range g.r.IntN(3) {
		b := other.NewBlob(g.a)
		b.SetData(g.bytes())
		bs.Append(b)
	}
	x.SetLevel(other.Level(g.r.IntN(3)))
	x.SetSnakeCaseField(g.r.Uint32())
	x.SetState(alltypes.Outer_Inner_State(g.r.IntN(2)))
	lv := x.InitLevels(0)
	for range g.r.IntN(3) {
		lv.Append(int32(g.r.IntN(3)))
	}
	return x
}

type msg interface {
	wire.Object
	DecodeBytes([]byte) error
	Decode(mem.Buf) error
}

// TestRandomRoundTrip builds random messages of every generated type,
// serializes them (flat and as a scatter-gather array, with thresholds 0,
// 512 and CopyAll, values partly in registered memory), decodes them (from
// the heap and from a registered buffer) and checks that they are equal and
// that re-serializing the decoded message gives the same bytes (when the
// original had no zero-copy values; otherwise the layout differs).
func TestRandomRoundTrip(t *testing.T) {
	pool := memtest.NewPool(t)
	r := rand.New(rand.NewPCG(1, 2))
	zeroCopy := 0
	for iter := range 300 {
		a := wire.NewArena()
		a.Threshold = []int{0, 512, wire.CopyAll}[iter%3]
		g := &gen{r: r, a: a, pool: pool, t: t}
		cases := []struct {
			x     msg
			fresh func() msg
			eq    func(x, y msg) bool
		}{
			{g.scalars(), func() msg { return alltypes.NewScalars(a) }, func(x, y msg) bool { return x.(*alltypes.Scalars).Equal(y.(*alltypes.Scalars)) }},
			{g.optionals(), func() msg { return alltypes.NewOptionals(a) }, func(x, y msg) bool { return x.(*alltypes.Optionals).Equal(y.(*alltypes.Optionals)) }},
			{g.lists(), func() msg { return alltypes.NewLists(a) }, func(x, y msg) bool { return x.(*alltypes.Lists).Equal(y.(*alltypes.Lists)) }},
			{g.outer(), func() msg { return alltypes.NewOuter(a) }, func(x, y msg) bool { return x.(*alltypes.Outer).Equal(y.(*alltypes.Outer)) }},
		}
		for i, c := range cases {
			flat, err := wire.Flatten(c.x, nil)
			if err != nil {
				t.Fatalf("iter %d case %d: Flatten: %v", iter, i, err)
			}
			if c.x.Sizes().Entries > 0 {
				zeroCopy++
			}
			var sga wire.SGA
			if err := wire.SerializeSGA(c.x, &sga); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sga.AppendTo(nil), flat) {
				t.Fatalf("iter %d case %d: SGA and Flatten differ", iter, i)
			}
			y := c.fresh()
			if err := y.DecodeBytes(flat); err != nil {
				t.Fatalf("iter %d case %d: decode: %v", iter, i, err)
			}
			if !c.eq(c.x, y) || !c.eq(y, c.x) {
				t.Fatalf("iter %d case %d: decoded message differs:\n got %v\nwant %v", iter, i, y, c.x)
			}
			// Decoded from the heap, every value is copied: the layout is
			// the same as the original's when that had no zero-copy values.
			again, err := wire.Flatten(y, nil)
			if err != nil || (c.x.Sizes().Entries == 0 && !bytes.Equal(again, flat)) {
				t.Fatalf("iter %d case %d: re-serialized bytes differ (%v)", iter, i, err)
			}
			// From registered memory: large fields become zero-copy again.
			rx := memtest.Alloc(t, pool, flat)
			z := c.fresh()
			err = z.Decode(rx)
			memtest.Release(t, rx)
			if err != nil || !c.eq(c.x, z) {
				t.Fatalf("iter %d case %d: decode from registered memory: %v", iter, i, err)
			}
			if _, err := wire.Flatten(z, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		for _, b := range g.held {
			memtest.Release(t, b)
		}
	}
	if zeroCopy < 100 {
		t.Errorf("only %d messages had zero-copy values; the test does not exercise them", zeroCopy)
	}
}
