package alltypes_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/wire"
)

// FuzzDecode decodes arbitrary bytes as each generated message type and
// exercises every accessor (which decodes lazily), Equal, String, and a
// re-serialization: errors are fine, panics and hangs are not, and a
// message that decodes and re-serializes must decode again to an equal one.
func FuzzDecode(f *testing.F) {
	a := wire.NewArena()
	seed := func(m wire.Object) {
		p, err := wire.Flatten(m, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	seed(buildLists(a))
	x := alltypes.NewScalars(a)
	fillScalars(x)
	seed(x)
	o := alltypes.NewOuter(a)
	o.InitInner().SetPayload([]byte("p"))
	o.InitBlob().SetName("n")
	seed(o)
	tr := alltypes.NewTree(a)
	tr.InitLeft().InitRight().SetLeaf([]byte("leaf"))
	seed(tr)
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	if err := a.Reset(); err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, p []byte) {
		a := wire.NewArena()
		a.Limit = 16 << 20
		defer a.Reset()
		check := func(m interface {
			wire.Object
			DecodeBytes([]byte) error
			String() string
		}, fresh func() interface {
			wire.Object
			DecodeBytes([]byte) error
			String() string
		}, eq func(x, y any) bool) {
			if err := m.DecodeBytes(p); err != nil {
				if !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("decode error %v does not match ErrMalformed", err)
				}
				return
			}
			_ = m.String()
			q, err := wire.Flatten(m, nil)
			if err != nil {
				return // a lazily decoded part is malformed
			}
			// SerializeSGA (the direct path where the message has one)
			// writes the same bytes as Flatten (the Encoder path).
			var sga wire.SGA
			if err := wire.SerializeSGA(m, &sga); err != nil {
				t.Fatalf("SerializeSGA after Flatten: %v", err)
			}
			flat := append([]byte(nil), sga.Head...)
			for _, e := range sga.Entries {
				flat = append(flat, e.Bytes()...)
			}
			if !bytes.Equal(flat, q) {
				t.Fatalf("SerializeSGA and Flatten differ")
			}
			n := fresh()
			if err := n.DecodeBytes(q); err != nil {
				t.Fatalf("re-serialized message does not decode: %v", err)
			}
			if !eq(m, n) {
				t.Fatalf("re-serialized message differs:\n%s\n%s", m, n)
			}
		}
		type obj = interface {
			wire.Object
			DecodeBytes([]byte) error
			String() string
		}
		check(alltypes.NewLists(a), func() obj { return alltypes.NewLists(a) }, func(x, y any) bool { return x.(*alltypes.Lists).Equal(y.(*alltypes.Lists)) })
		check(alltypes.NewScalars(a), func() obj { return alltypes.NewScalars(a) }, func(x, y any) bool { return x.(*alltypes.Scalars).Equal(y.(*alltypes.Scalars)) })
		check(alltypes.NewOuter(a), func() obj { return alltypes.NewOuter(a) }, func(x, y any) bool { return x.(*alltypes.Outer).Equal(y.(*alltypes.Outer)) })
		check(alltypes.NewTree(a), func() obj { return alltypes.NewTree(a) }, func(x, y any) bool { return x.(*alltypes.Tree).Equal(y.(*alltypes.Tree)) })
		check(alltypes.NewOptionals(a), func() obj { return alltypes.NewOptionals(a) }, func(x, y any) bool { return x.(*alltypes.Optionals).Equal(y.(*alltypes.Optionals)) })
	})
}
