package alltypes_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/wire"
)

// directCase decodes p with a message's generated direct decode
// (DecodeBytes → WireDecodeAt) and with the Decoder path (wire.DecodeBytes
// → WireDecode), and fails unless both agree: the same error text, or
// equal messages.
type directCase struct {
	name  string
	fresh func(a *wire.Arena) (direct, viaDecoder wire.Msg, eq func() bool)
}

var directCases = []directCase{
	{"Scalars", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := alltypes.NewScalars(a), alltypes.NewScalars(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
	{"Optionals", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := alltypes.NewOptionals(a), alltypes.NewOptionals(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
	{"Tree", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := alltypes.NewTree(a), alltypes.NewTree(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
	{"Outer_Inner", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := alltypes.NewOuter_Inner(a), alltypes.NewOuter_Inner(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
}

func checkDirect(t *testing.T, p []byte, limit int) {
	t.Helper()
	for _, c := range directCases {
		a := wire.NewArena()
		a.Limit = limit
		x, y, eq := c.fresh(a)
		errX := x.(interface{ DecodeBytes([]byte) error }).DecodeBytes(p)
		errY := wire.DecodeBytes(y, p)
		switch {
		case (errX == nil) != (errY == nil):
			t.Fatalf("%s: direct decode error %v, Decoder path error %v", c.name, errX, errY)
		case errX != nil && errX.Error() != errY.Error():
			t.Fatalf("%s: direct decode error %q, Decoder path error %q", c.name, errX, errY)
		case errX == nil && !eq():
			t.Fatalf("%s: direct decode and Decoder path differ:\n%s\n%s", c.name, x, y)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}

// directSeeds are valid messages of the direct-decode types, and a few
// headers the direct decode hands to the Decoder path.
func directSeeds(t testing.TB) [][]byte {
	a := wire.NewArena()
	defer a.Reset()
	var out [][]byte
	add := func(m wire.Object) {
		p, err := wire.Flatten(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	x := alltypes.NewScalars(a)
	fillScalars(x)
	add(x)
	tr := alltypes.NewTree(a)
	tr.InitLeft().InitRight().SetLeaf([]byte("leaf"))
	tr.InitRight().SetLeaf([]byte("right leaf"))
	add(tr)
	in := alltypes.NewOuter_Inner(a)
	in.SetPayload([]byte("payload"))
	add(in)
	add(alltypes.NewOptionals(a))
	out = append(out,
		[]byte{},
		[]byte{0, 0, 0, 0},
		[]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
		[]byte{2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0},  // two bitmap words
		[]byte{1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0}, // nested header
	)
	return out
}

// TestDirectDecodeMatchesDecoder compares the two decode paths on valid
// messages, on every truncation of them and on single-byte corruptions.
func TestDirectDecodeMatchesDecoder(t *testing.T) {
	for _, p := range directSeeds(t) {
		for n := 0; n <= len(p); n++ {
			checkDirect(t, p[:n], 0)
		}
		q := make([]byte, len(p))
		for i := range p {
			for _, v := range []byte{0, 1, 0x7f, 0xff} {
				copy(q, p)
				q[i] = v
				checkDirect(t, q, 0)
				checkDirect(t, q, 1) // the arena Limit (every nested message over it)
			}
		}
	}
}

// FuzzDirectDecode is TestDirectDecodeMatchesDecoder over arbitrary inputs.
func FuzzDirectDecode(f *testing.F) {
	for _, p := range directSeeds(f) {
		f.Add(p, false)
	}
	f.Fuzz(func(t *testing.T, p []byte, limit bool) {
		l := 16 << 20
		if limit {
			l = 1
		}
		checkDirect(t, p, l)
	})
}
