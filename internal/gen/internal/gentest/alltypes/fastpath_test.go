package alltypes_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/other"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

type sinkFunc func(mem.Buf) error

func (f sinkFunc) ZeroCopyEntry(b mem.Buf) error { return f(b) }

// TestFastPathErrors checks the error behaviour of the generated fast path
// (Sizes/Serialize/Decode through wire.StartSizes, StartSerialize and
// StartDecode): the same typed errors as the per-field runtime.
func TestFastPathErrors(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	defer reset(t, a)

	m := alltypes.NewScalars(a)
	m.SetI32(5)
	sz := m.Sizes()
	if err := m.Serialize(make([]byte, sz.Head()+1), nil); !errors.Is(err, wire.ErrDstSize) {
		t.Errorf("wrong dst size: %v", err)
	}
	// Modified after Sizes: a new field changes the layout.
	m.SetI64(9)
	if err := m.Serialize(make([]byte, sz.Head()), nil); !errors.Is(err, wire.ErrModified) {
		t.Errorf("modified (new field): %v", err)
	}
	sz = m.Sizes()
	if err := m.Serialize(make([]byte, sz.Head()), nil); err != nil {
		t.Errorf("after Sizes again: %v", err)
	}
	// Modified after Sizes without changing the head size: a copied value
	// replaced by a zero-copy one of the same length.
	v := memtest.Alloc(t, pool, make([]byte, 600))
	defer memtest.Release(t, v)
	m.SetData(make([]byte, 600))
	sz = m.Sizes()
	m.SetData(v.Bytes())
	if err := m.Serialize(make([]byte, sz.Head()), &wire.SGA{}); !errors.Is(err, wire.ErrModified) {
		t.Errorf("modified (copied → zero-copy): %v", err)
	}
	// Sizes of another message in between: Serialize recomputes them.
	sz = m.Sizes()
	other := alltypes.NewScalars(a)
	other.SetText("x")
	_ = other.Sizes()
	if err := m.Serialize(make([]byte, sz.Head()), &wire.SGA{}); err != nil {
		t.Errorf("after another message's Sizes: %v", err)
	}
	// A sink error aborts Serialize, and the next Serialize works.
	boom := errors.New("boom")
	if err := m.Serialize(make([]byte, sz.Head()), sinkFunc(func(mem.Buf) error { return boom })); !errors.Is(err, boom) {
		t.Errorf("sink error: %v", err)
	}
	if err := m.Serialize(make([]byte, sz.Head()), &wire.SGA{}); err != nil {
		t.Errorf("after a sink error: %v", err)
	}

	// A cycle of nested messages is an error, not a stack overflow.
	x := alltypes.NewTree(a)
	y := alltypes.NewTree(a)
	x.SetLeft(y)
	y.SetRight(x)
	if _, err := wire.Flatten(x, nil); !errors.Is(err, wire.ErrTooDeep) {
		t.Errorf("cycle (Flatten): %v", err)
	}
	if err := wire.SerializeSGA(x, &wire.SGA{}); !errors.Is(err, wire.ErrTooDeep) {
		t.Errorf("cycle (SerializeSGA): %v", err)
	}
	// MaxDepth nested messages are fine, one more is not.
	root := alltypes.NewTree(a)
	n := root
	for range wire.MaxDepth {
		n = n.InitLeft()
	}
	n.SetLeaf([]byte("deep"))
	if _, err := wire.Flatten(root, nil); err != nil {
		t.Errorf("MaxDepth nesting: %v", err)
	}
	n.InitLeft()
	if _, err := wire.Flatten(root, nil); !errors.Is(err, wire.ErrTooDeep) {
		t.Errorf("MaxDepth+1 nesting: %v", err)
	}

	// Messages without an arena.
	var zero alltypes.Scalars
	if err := zero.DecodeBytes([]byte{0, 0, 0, 0}); !errors.Is(err, wire.ErrNoArena) {
		t.Errorf("DecodeBytes without arena: %v", err)
	}
	if err := zero.Decode(mem.Buf{}); !errors.Is(err, wire.ErrNoArena) {
		t.Errorf("Decode without arena: %v", err)
	}
	zero.SetI32(3)
	out, err := wire.Flatten(&zero, nil)
	if err != nil {
		t.Fatalf("Flatten without arena: %v", err)
	}
	zs := zero.Sizes()
	head := make([]byte, zs.Head())
	if err := zero.Serialize(head, &wire.SGA{}); err != nil || string(head) != string(out) {
		t.Errorf("Serialize without arena: %v", err)
	}
	// Truncated and malformed input: typed errors.
	s := alltypes.NewScalars(a)
	for _, in := range [][]byte{nil, {1}, {1, 0, 0, 0}, {1, 0, 0, 0, 1, 0, 0, 0}, {0xff, 0xff, 0, 0}} {
		if err := s.DecodeBytes(in); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("DecodeBytes(%v) = %v, want ErrMalformed", in, err)
		}
	}
	if err := s.Decode(mem.Buf{}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("Decode(zero Buf) = %v, want ErrMalformed", err)
	}
}

// TestDecodeReusedMessage decodes into a message that already holds
// values: every field absent from the input reads as its zero value.
func TestDecodeReusedMessage(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	full := alltypes.NewScalars(a)
	full.SetI32(1)
	full.SetText("text")
	full.SetData([]byte("data"))
	full.SetFlag(true)
	empty := flatten(t, alltypes.NewScalars(a))
	if err := full.DecodeBytes(empty); err != nil {
		t.Fatal(err)
	}
	if !full.Equal(alltypes.NewScalars(a)) {
		t.Errorf("decoded empty message into a used one: %v", full)
	}
	o := alltypes.NewOptionals(a)
	o.SetI32(0)
	o.SetData(nil)
	if err := o.DecodeBytes(flatten(t, alltypes.NewOptionals(a))); err != nil {
		t.Fatal(err)
	}
	if o.HasI32() || o.HasData() {
		t.Errorf("presence survived a decode: %v", o)
	}
}

// TestWideMessage round-trips a message with field numbers above 1024 (the
// per-field hooks) that holds a fast-path message, zero-copy included.
func TestWideMessage(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	defer reset(t, a)
	big := memtest.Alloc(t, pool, bytes.Repeat([]byte("w"), 1000))
	defer memtest.Release(t, big)

	x := alltypes.NewWide(a)
	x.SetId(-7)
	names := x.InitNames(2)
	names.Append("α")
	names.Append("b")
	x.SetPayload(big.Bytes())
	tr := x.InitTree()
	tr.InitLeft().SetLeaf([]byte("l"))
	tr.InitRight().SetLeaf([]byte("r"))
	if sz := x.Sizes(); sz.Entries != 1 || sz.ZeroCopy != 1000 {
		t.Fatalf("Sizes = %+v, want one zero-copy entry of 1000 bytes", sz)
	}
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); err != nil {
		t.Fatal(err)
	}
	flat := flatten(t, x)
	if !bytes.Equal(sga.AppendTo(nil), flat) {
		t.Fatal("SGA and Flatten differ")
	}
	fields, _, err := wire.ReadHeader(flat, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, f := range fields {
		nums = append(nums, f.Num)
	}
	if fmt.Sprint(nums) != "[1 40 2000 2001]" {
		t.Errorf("present fields %v, want [1 40 2000 2001]", nums)
	}
	y := alltypes.NewWide(a)
	if err := y.DecodeBytes(flat); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) {
		t.Fatalf("decoded %v, want %v", y, x)
	}
	yt, err := y.GetTree()
	if err != nil {
		t.Fatal(err)
	}
	r, err := yt.GetRight()
	if err != nil || string(r.GetLeaf()) != "r" {
		t.Fatalf("tree.right = %v, %v", r, err)
	}
	// Re-serialized from the decoded message (every value now copied) and
	// decoded again: still equal.
	z := alltypes.NewWide(a)
	if err := z.DecodeBytes(flatten(t, y)); err != nil || !z.Equal(x) {
		t.Errorf("second round trip: %v, %v", err, z)
	}
}

// TestFastPathUseAfterResetNested: a message kept past its arena's Reset
// and attached to a fresh one (nested field, list element, deeper, from
// another Go package, below a per-field message) is refused with
// wire.ErrArenaReset by the generated Sizes and everything built on it; a
// fresh nested message attached after the Reset works. The stale messages
// come after a few others of their types, so that the fresh ones made
// after the Reset never share their memory outside the checked build.
func TestFastPathUseAfterResetNested(t *testing.T) {
	type stale struct {
		tree  *alltypes.Tree
		inner *alltypes.Outer_Inner
		blob  *other.Blob
	}
	cases := []struct {
		name   string
		attach func(a *wire.Arena, old stale) wire.Msg
		want   error
	}{
		{"nested field", func(a *wire.Arena, old stale) wire.Msg {
			m := alltypes.NewOuter(a)
			m.SetInner(old.inner)
			return m
		}, wire.ErrArenaReset},
		{"list element", func(a *wire.Arena, old stale) wire.Msg {
			m := alltypes.NewOuter(a)
			l := m.InitInners(2)
			l.Append(alltypes.NewOuter_Inner(a))
			l.Append(old.inner)
			return m
		}, wire.ErrArenaReset},
		{"nested field of another package", func(a *wire.Arena, old stale) wire.Msg {
			m := alltypes.NewOuter(a)
			m.SetBlob(old.blob)
			return m
		}, wire.ErrArenaReset},
		{"list element of another package", func(a *wire.Arena, old stale) wire.Msg {
			m := alltypes.NewOuter(a)
			m.InitBlobs(1).Append(old.blob)
			return m
		}, wire.ErrArenaReset},
		{"grandchild", func(a *wire.Arena, old stale) wire.Msg {
			m := alltypes.NewTree(a)
			m.InitLeft().SetRight(old.tree)
			return m
		}, wire.ErrArenaReset},
		{"below a per-field message", func(a *wire.Arena, old stale) wire.Msg {
			m := alltypes.NewWide(a)
			m.SetTree(old.tree)
			return m
		}, wire.ErrArenaReset},
		{"fresh nested messages", func(a *wire.Arena, _ stale) wire.Msg {
			m := alltypes.NewOuter(a)
			m.InitInner().SetPayload([]byte("new"))
			m.InitInners(1).Append(alltypes.NewOuter_Inner(a))
			m.InitBlob().SetName("new")
			m.InitBlobs(1).Append(other.NewBlob(a))
			return m
		}, nil},
		{"fresh grandchild", func(a *wire.Arena, _ stale) wire.Msg {
			m := alltypes.NewWide(a)
			m.InitTree().InitLeft().SetLeaf([]byte("new"))
			return m
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := wire.NewArena()
			defer reset(t, a)
			for range 4 {
				alltypes.NewTree(a)
				alltypes.NewOuter_Inner(a)
				other.NewBlob(a)
			}
			old := stale{alltypes.NewTree(a), alltypes.NewOuter_Inner(a), other.NewBlob(a)}
			old.tree.SetLeaf([]byte("old leaf"))
			old.tree.InitLeft().SetLeaf([]byte("old"))
			old.inner.SetPayload([]byte("old payload"))
			old.blob.SetName("old name")
			reset(t, a)
			m := c.attach(a, old)
			p, err := wire.Flatten(m, nil)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Flatten: %v, want %v", err, c.want)
			}
			if err := m.Serialize(make([]byte, m.Sizes().Head()), &wire.SGA{}); !errors.Is(err, c.want) {
				t.Errorf("Serialize: %v, want %v", err, c.want)
			}
			if err := wire.SerializeSGA(m, &wire.SGA{}); !errors.Is(err, c.want) {
				t.Errorf("SerializeSGA: %v, want %v", err, c.want)
			}
			if c.want != nil {
				return
			}
			b := wire.NewArena()
			defer reset(t, b)
			switch m := m.(type) {
			case *alltypes.Outer:
				d := alltypes.NewOuter(b)
				if err := d.DecodeBytes(p); err != nil || !d.Equal(m) {
					t.Errorf("round trip: %v, %v want %v", err, d, m)
				}
			case *alltypes.Wide:
				d := alltypes.NewWide(b)
				if err := d.DecodeBytes(p); err != nil || !d.Equal(m) {
					t.Errorf("round trip: %v, %v want %v", err, d, m)
				}
			}
		})
	}
}

// TestFastPathUseAfterResetLazy: a nested message or list of a decoded
// message first accessed after the arena's Reset reports
// wire.ErrArenaReset from its getter, also after a new decode.
func TestFastPathUseAfterResetLazy(t *testing.T) {
	src := alltypes.NewOuter(wire.NewArena())
	src.InitInner().SetPayload([]byte("p"))
	src.InitInners(1).Append(alltypes.NewOuter_Inner((*wire.Arena)(src.WireCore().Arena())))
	src.InitLevels(1).Append(2)
	flat := flatten(t, src)
	cases := []struct {
		name   string
		access func(m *alltypes.Outer) error
	}{
		{"nested message", func(m *alltypes.Outer) error { _, err := m.GetInner(); return err }},
		{"list of messages", func(m *alltypes.Outer) error { _, err := m.GetInners(); return err }},
		{"list of scalars", func(m *alltypes.Outer) error { _, err := m.GetLevels(); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := wire.NewArena()
			defer reset(t, a)
			alltypes.NewOuter(a) // the fresh message below takes its memory
			m := alltypes.NewOuter(a)
			if err := m.DecodeBytes(flat); err != nil {
				t.Fatal(err)
			}
			reset(t, a)
			if err := c.access(m); !errors.Is(err, wire.ErrArenaReset) {
				t.Errorf("after Reset: %v, want ErrArenaReset", err)
			}
			fresh := alltypes.NewOuter(a)
			if err := fresh.DecodeBytes(flat); err != nil {
				t.Fatal(err)
			}
			if err := c.access(m); !errors.Is(err, wire.ErrArenaReset) {
				t.Errorf("after a new decode: %v, want ErrArenaReset", err)
			}
			if err := c.access(fresh); err != nil {
				t.Errorf("the new message: %v", err)
			}
		})
	}
}
