package keepv2_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/keepv1"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/keepv2"
	"github.com/cornflakes-go/cornflakes/wire"
)

// serializeSGA serializes m the way a datapath does (SerializeSGA, the
// sink that the generated direct path takes) and flattens the result.
func serializeSGA(t *testing.T, m wire.Object) []byte {
	t.Helper()
	var sga wire.SGA
	if err := wire.SerializeSGA(m, &sga); err != nil {
		t.Fatalf("SerializeSGA: %v", err)
	}
	return sga.AppendTo(nil)
}

// newV2Leaf returns the typed bytes of a keepv2.Leaf with every field set.
func newV2Leaf(t *testing.T, id uint32) []byte {
	t.Helper()
	a := typedArena()
	defer a.Reset()
	l := keepv2.NewLeaf(a)
	l.SetId(id)
	l.SetData([]byte("payload"))
	l.SetExtra("unknown to v1")
	l.SetMore(0xfeedface)
	return serializeSGA(t, l)
}

func checkV2Leaf(t *testing.T, p []byte, id uint32) {
	t.Helper()
	a := wire.NewArena()
	defer a.Reset()
	l := keepv2.NewLeaf(a)
	if err := l.DecodeBytes(p); err != nil {
		t.Fatalf("v2 decode: %v", err)
	}
	extra, err := l.GetExtra()
	if err != nil || l.GetId() != id || !bytes.Equal(l.GetData(), []byte("payload")) || extra != "unknown to v1" || l.GetMore() != 0xfeedface {
		t.Fatalf("v2 reader got %v, want id %d and every v2 field intact", l, id)
	}
}

// TestDirectPathKeepsUnknown: Leaf and Pair take the generated direct
// Sizes/Serialize path; a v1 Leaf that keeps v2's fields, as the root or
// nested in a message that keeps nothing, must still write them back.
func TestDirectPathKeepsUnknown(t *testing.T) {
	in := newV2Leaf(t, 7)

	t.Run("root", func(t *testing.T) {
		a := wire.NewArena()
		defer a.Reset()
		l := keepv1.NewLeaf(a)
		if err := l.DecodeBytes(in); err != nil {
			t.Fatal(err)
		}
		if !l.WireCore().HasUnknown() {
			t.Fatal("v1 Leaf kept no unknown fields of a typed v2 Leaf")
		}
		l.SetId(8)
		checkV2Leaf(t, serializeSGA(t, l), 8)
	})

	t.Run("nested", func(t *testing.T) {
		a := wire.NewArena()
		defer a.Reset()
		l := keepv1.NewLeaf(a)
		if err := l.DecodeBytes(in); err != nil {
			t.Fatal(err)
		}
		p := keepv1.NewPair(a) // untyped, keeps nothing: sized on the direct path until it meets l
		p.InitA().SetId(1)
		p.SetB(l)
		out := serializeSGA(t, p)
		b := wire.NewArena()
		defer b.Reset()
		q := keepv2.NewPair(b)
		if err := q.DecodeBytes(out); err != nil {
			t.Fatal(err)
		}
		qa, err := q.GetA()
		if err != nil || qa.GetId() != 1 {
			t.Fatalf("field a: %v, %v", qa, err)
		}
		qb, err := q.GetB()
		if err != nil {
			t.Fatal(err)
		}
		extra, err := qb.GetExtra()
		if err != nil || qb.GetId() != 7 || extra != "unknown to v1" || qb.GetMore() != 0xfeedface {
			t.Fatalf("nested Leaf lost its kept fields: %v", qb)
		}
		// A second v1 hop: the typed Leaf inside the untyped Pair keeps them again.
		c := wire.NewArena()
		defer c.Reset()
		r := keepv1.NewPair(c)
		if err := r.DecodeBytes(out); err != nil {
			t.Fatal(err)
		}
		rb, err := r.GetB()
		if err != nil || !rb.WireCore().HasUnknown() {
			t.Fatalf("v1 re-decode of the nested typed Leaf kept nothing (%v)", err)
		}
		checkV2Leaf(t, serializeSGA(t, rb), 7)
	})

	t.Run("plain-stays-direct", func(t *testing.T) {
		// Without kept fields the bytes are the Encoder path's (Flatten).
		a := wire.NewArena()
		defer a.Reset()
		p := keepv1.NewPair(a)
		p.InitA().SetData([]byte("x"))
		p.InitB().SetId(3)
		got := serializeSGA(t, p)
		want, err := wire.Flatten(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("direct %x, Flatten %x", got, want)
		}
	})
}

// TestRedecodeForgetsUnknown: a message that kept unknown fields from a
// typed input and is then decoded again from an untyped one (the direct
// decode, BindSource) holds nothing of the first input: no kept fields,
// and it is written exactly as a fresh decode of the second input.
func TestRedecodeForgetsUnknown(t *testing.T) {
	typed := newV2Leaf(t, 7)
	var plain []byte
	{
		a := wire.NewArena()
		l := keepv1.NewLeaf(a)
		l.SetId(9)
		l.SetData([]byte("v1 only"))
		plain = serializeSGA(t, l)
		_ = a.Reset()
	}
	for _, name := range []string{"untyped-arena", "typed-arena"} {
		t.Run(name, func(t *testing.T) {
			a := wire.NewArena()
			if name == "typed-arena" {
				a = typedArena()
			}
			defer a.Reset()
			l := keepv1.NewLeaf(a)
			if err := l.DecodeBytes(typed); err != nil {
				t.Fatal(err)
			}
			if !l.WireCore().HasUnknown() {
				t.Fatal("v1 Leaf kept no unknown fields of a typed v2 Leaf")
			}
			if err := l.DecodeBytes(plain); err != nil {
				t.Fatal(err)
			}
			if l.WireCore().HasUnknown() {
				t.Fatal("re-decoded from an untyped input, the Leaf still holds the first input's unknown fields")
			}
			fresh := keepv1.NewLeaf(a)
			if err := fresh.DecodeBytes(plain); err != nil {
				t.Fatal(err)
			}
			if got, want := serializeSGA(t, l), serializeSGA(t, fresh); !bytes.Equal(got, want) {
				t.Fatalf("re-decoded Leaf writes %x, a fresh decode of the same input %x", got, want)
			}
			if l.GetId() != 9 || !bytes.Equal(l.GetData(), []byte("v1 only")) {
				t.Fatalf("re-decoded Leaf: id %d data %q", l.GetId(), l.GetData())
			}
		})
	}
}
