package cf_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The direct decode of Tree1 reads its SingleBuffer leaves inline (their
// WireDecodeAt emitted into Tree1's); these tests hold it, and the other
// bench messages' direct decode, to the Decoder path's results on valid,
// truncated, corrupted and fuzzed inputs.

type directDecodeCase struct {
	name  string
	fresh func(a *wire.Arena) (direct, viaDecoder wire.Msg, eq func() bool)
}

var directDecodeCases = []directDecodeCase{
	{"SingleBuffer", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := cf.NewSingleBuffer(a), cf.NewSingleBuffer(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
	{"ListBuffers", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := cf.NewListBuffers(a), cf.NewListBuffers(a)
		// A list is loaded lazily: when its elements are out of range
		// both fail at access, with the same error in String.
		return x, y, func() bool { return x.Equal(y) || x.String() == y.String() }
	}},
	{"Tree1", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := cf.NewTree1(a), cf.NewTree1(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
	{"Tree2", func(a *wire.Arena) (wire.Msg, wire.Msg, func() bool) {
		x, y := cf.NewTree2(a), cf.NewTree2(a)
		return x, y, func() bool { return x.Equal(y) }
	}},
}

// checkDirectDecode decodes p with each message's generated direct decode
// (DecodeBytes → WireDecodeAt) and with the Decoder path (wire.DecodeBytes
// → WireDecode) and fails unless both agree: the same error text, or equal
// messages.
func checkDirectDecode(t *testing.T, p []byte, limit int) {
	t.Helper()
	for _, c := range directDecodeCases {
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
		if _, ok := x.(*cf.ListBuffers); ok && errX == nil {
			checkBulkList(t, p)
		}
		if errX == nil { // the fused SerializeSGA of the decoded message vs the Encoder path
			var sga wire.SGA
			errS := wire.SerializeSGA(x, &sga)
			flat, errF := wire.Flatten(y, nil)
			switch {
			case (errS == nil) != (errF == nil):
				t.Fatalf("%s: SerializeSGA error %v, Flatten error %v", c.name, errS, errF)
			case errS == nil && !bytes.Equal(sgaBytes(&sga), flat):
				t.Fatalf("%s: SerializeSGA and Flatten differ:\n%x\n%x", c.name, sgaBytes(&sga), flat)
			}
			if errS == nil { // again: the one pass of a tree, its nested messages loaded and its base learned
				if err := wire.SerializeSGA(x, &sga); err != nil {
					t.Fatalf("%s: second SerializeSGA: %v", c.name, err)
				}
				if !bytes.Equal(sgaBytes(&sga), flat) {
					t.Fatalf("%s: second SerializeSGA and Flatten differ:\n%x\n%x", c.name, sgaBytes(&sga), flat)
				}
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}

// directDecodeSeeds are valid bench messages (leaves present, empty and
// absent) and a few headers the direct decode hands to the Decoder path.
func directDecodeSeeds(t testing.TB) [][]byte {
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
	t1 := cf.NewTree1(a)
	t1.InitLeft().SetMessage([]byte("left leaf"))
	t1.InitRight()
	add(t1)
	t2 := cf.NewTree2(a)
	t2.InitLeft().InitRight().SetMessage([]byte("r"))
	l := t2.InitRight()
	l.InitLeft().SetMessage([]byte("left"))
	l.InitRight().SetMessage([]byte("right"))
	add(t2)
	lb := cf.NewListBuffers(a)
	ml := lb.InitMessages(3)
	ml.Append([]byte("one"))
	ml.Append(nil)
	ml.Append([]byte("three"))
	add(lb)
	out = append(out,
		[]byte{},
		[]byte{0, 0, 0, 0},
		[]byte{1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0},                                                             // nested header out of range
		[]byte{1, 0, 0, 0, 1, 0, 0, 0, 12, 0, 0, 0, 16, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},                        // nested: two bitmap words
		[]byte{1, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0xff, 0, 0, 0, 'a', 'b', 'c', 'd'}, // leaf value out of range
	)
	return out
}

// TestDirectDecodeMatchesDecoder compares the two decode paths on valid
// messages, every truncation of them and single-byte corruptions.
func TestDirectDecodeMatchesDecoder(t *testing.T) {
	for _, p := range directDecodeSeeds(t) {
		for n := 0; n <= len(p); n++ {
			checkDirectDecode(t, p[:n], 0)
		}
		q := make([]byte, len(p))
		for i := range p {
			for _, v := range []byte{0, 1, 4, 0x7f, 0xff} {
				copy(q, p)
				q[i] = v
				checkDirectDecode(t, q, 0)
				checkDirectDecode(t, q, 1) // the arena Limit (every nested message over it)
			}
		}
	}
}

// FuzzDirectDecode is TestDirectDecodeMatchesDecoder over arbitrary inputs.
func FuzzDirectDecode(f *testing.F) {
	for _, p := range directDecodeSeeds(f) {
		f.Add(p, false)
	}
	f.Fuzz(func(t *testing.T, p []byte, limit bool) {
		l := 16 << 20
		if limit {
			l = 1
		}
		checkDirectDecode(t, p, l)
	})
}

// checkBulkList decodes p (a valid ListBuffers) and holds the whole-list
// calls to the per-element ones: AppendValues to At, and a list set by
// AppendBorrowedFrom in another arena to the decoded elements (and its
// serialization to the Append-built one). A list whose getter fails is
// refused by AppendBorrowedFrom.
func checkBulkList(t *testing.T, p []byte) {
	t.Helper()
	a := wire.NewArena()
	x := cf.NewListBuffers(a)
	if err := x.DecodeBytes(p); err != nil {
		t.Fatalf("ListBuffers: second decode: %v", err)
	}
	l, err := x.GetMessages()
	k := wire.NewArena()
	m := cf.NewListBuffers(k)
	ml := m.InitMessages(2)
	if err != nil {
		if ml.AppendBorrowedFrom(l) == nil {
			t.Fatalf("ListBuffers: AppendBorrowedFrom accepted a list whose getter fails (%v)", err)
		}
		return
	}
	vals := l.AppendValues(nil)
	if len(vals) != l.Len() {
		t.Fatalf("ListBuffers: AppendValues: %d values, Len %d", len(vals), l.Len())
	}
	for i, v := range vals {
		if !bytes.Equal(v, l.At(i)) {
			t.Fatalf("ListBuffers: AppendValues[%d] %q, At %q", i, v, l.At(i))
		}
	}
	if err := ml.AppendBorrowedFrom(l); err != nil {
		t.Fatalf("ListBuffers: AppendBorrowedFrom: %v", err)
	}
	w := cf.NewListBuffers(k)
	wl := w.InitMessages(len(vals))
	for _, v := range vals {
		wl.Append(v)
	}
	if !m.Equal(w) {
		t.Fatalf("ListBuffers: AppendBorrowedFrom made\n%s\nwant\n%s", m, w)
	}
	var got wire.SGA
	if err := m.SerializeSGA(&got); err != nil {
		t.Fatalf("ListBuffers: SerializeSGA of the list set by AppendBorrowedFrom: %v", err)
	}
	want, err := wire.Flatten(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sgaBytes(&got), want) {
		t.Fatalf("ListBuffers: AppendBorrowedFrom serializes\n%x\nwant\n%x", sgaBytes(&got), want)
	}
}
