package cf_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The direct Serialize of these messages exercises two generated forms the
// alltypes tests do not: leaf messages (SingleBuffer) sized and written
// inline by their parent's direct methods, and PutBytesList's loops over
// lists mixing copied, zero-copy and empty elements. Each is checked
// against the Encoder path (Flatten) and for ErrModified.

func sgaBytes(s *wire.SGA) []byte {
	out := append([]byte(nil), s.Head...)
	for _, e := range s.Entries {
		out = append(out, e.Bytes()...)
	}
	return out
}

func flatten(t *testing.T, m wire.Object) []byte {
	t.Helper()
	p, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatalf("Flatten: %v", err)
	}
	return p
}

// checkDirect serializes m on the direct path (SerializeSGA) and requires
// the bytes of the Encoder path and one SGA entry per zero-copy value.
func checkDirect(t *testing.T, m wire.Object) {
	t.Helper()
	var sga wire.SGA
	if err := wire.SerializeSGA(m, &sga); err != nil {
		t.Fatalf("SerializeSGA: %v", err)
	}
	if got, want := sgaBytes(&sga), flatten(t, m); !bytes.Equal(got, want) {
		t.Fatalf("direct bytes differ from Flatten:\n got %x\nwant %x", got, want)
	}
	if n := m.Sizes().Entries; len(sga.Entries) != n {
		t.Fatalf("%d SGA entries, Sizes says %d", len(sga.Entries), n)
	}
}

func resetArena(t *testing.T, a *wire.Arena) {
	t.Helper()
	if err := a.Reset(); err != nil {
		t.Fatalf("Reset: %v", err)
	}
}

// leafValue sets leaf l by kind: 0 absent value, 1 copied, 2 zero-copy.
func leafValue(l *cf.SingleBuffer, kind int, zc mem.Buf, i int) {
	switch kind {
	case 1:
		l.SetMessage(bytes.Repeat([]byte{byte(i)}, 1+i%40))
	case 2:
		l.SetMessageBuf(zc)
	}
}

func TestDirectInlineLeaves(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xcd}, 1024))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	// Every combination of the two leaves of a Tree1: absent message,
	// present but empty, copied, zero-copy.
	for l := -1; l < 3; l++ {
		for r := -1; r < 3; r++ {
			x := cf.NewTree1(a)
			if l >= 0 {
				leafValue(x.InitLeft(), l, zc, 1)
			}
			if r >= 0 {
				leafValue(x.InitRight(), r, zc, 2)
			}
			checkDirect(t, x)
		}
	}
	// A whole tree with mixed leaves.
	x := cf.NewTree5(a)
	i := 0
	for _, t4 := range []*cf.Tree4{x.InitLeft(), x.InitRight()} {
		for _, t3 := range []*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
			for _, t2 := range []*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
				for _, t1 := range []*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
					leafValue(t1.InitLeft(), i%3, zc, i)
					if i%5 != 0 {
						leafValue(t1.InitRight(), (i+1)%3, zc, i+1)
					}
					i += 2
				}
			}
		}
	}
	checkDirect(t, x)
}

func TestDirectInlineLeafModified(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xcd}, 1024))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	leaf := func(x *cf.Tree2, right bool) *cf.SingleBuffer {
		t1, _ := x.GetLeft()
		if right {
			v, _ := t1.GetRight()
			return v
		}
		v, _ := t1.GetLeft()
		return v
	}
	cases := []struct {
		name   string
		change func(*cf.Tree2)
	}{
		{"value added", func(x *cf.Tree2) { leaf(x, true).SetMessage([]byte("new")) }},
		{"value cleared", func(x *cf.Tree2) { leaf(x, false).ClearMessage() }},
		{"value longer", func(x *cf.Tree2) { leaf(x, false).SetMessage([]byte("a longer value")) }},
		{"copied to zero-copy", func(x *cf.Tree2) { leaf(x, false).SetMessageBuf(zc) }},
		{"zero-copy to copied", func(x *cf.Tree2) { leaf(x, true).SetMessageBuf(zc); x.InitRight() }},
		{"leaf removed", func(x *cf.Tree2) { t1, _ := x.GetLeft(); t1.ClearLeft() }},
		{"leaf added", func(x *cf.Tree2) { x.InitRight().InitLeft() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := cf.NewTree2(a)
			t1 := x.InitLeft()
			t1.InitLeft().SetMessage([]byte("short"))
			t1.InitRight()
			sz := x.Sizes()
			c.change(x)
			sga := wire.SGA{Head: make([]byte, sz.Head())}
			if err := x.Serialize(sga.Head, &sga); !errors.Is(err, wire.ErrModified) {
				t.Fatalf("Serialize after the change: %v, want ErrModified", err)
			}
			checkDirect(t, x)
		})
	}
}

func TestDirectBytesList(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xcd}, 700))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	patterns := [][]int{ // 0 empty, 1 copied, 2 zero-copy
		{1}, {2}, {0}, {1, 1, 1}, {2, 2, 2}, {1, 2, 1, 2, 0, 2, 1},
		{0, 0}, {2, 0, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2},
	}
	for _, p := range patterns {
		x := cf.NewListBuffers(a)
		l := x.InitMessages(len(p))
		for i, k := range p {
			switch k {
			case 0:
				l.Append(nil)
			case 1:
				l.Append(bytes.Repeat([]byte{byte(i + 1)}, 3*i+1))
			case 2:
				l.AppendBuf(zc)
			}
		}
		checkDirect(t, x)
		// Entries already in the SGA stay ahead of the list's.
		sz := x.Sizes()
		pre := wire.SGA{Head: make([]byte, sz.Head()), Entries: []mem.Buf{zc}}
		if err := x.Serialize(pre.Head, &pre); err != nil {
			t.Fatalf("%v: Serialize into a non-empty SGA: %v", p, err)
		}
		if len(pre.Entries) != 1+sz.Entries || pre.Entries[0] != zc {
			t.Fatalf("%v: %d entries after 1, want 1+%d", p, len(pre.Entries), sz.Entries)
		}
	}
}

func TestDirectBytesListModified(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xcd}, 700))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	cases := []struct {
		name   string
		change func(*wire.BytesList)
	}{
		{"element appended", func(l *wire.BytesList) { l.Append([]byte("x")) }},
		{"element removed", func(l *wire.BytesList) { l.Truncate(1) }},
		{"copied longer", func(l *wire.BytesList) { l.Truncate(1); l.Append([]byte("a much longer value")) }},
		{"copied to zero-copy", func(l *wire.BytesList) { l.Truncate(1); l.AppendBuf(zc) }},
		{"zero-copy to copied", func(l *wire.BytesList) { l.Truncate(0); l.Append(make([]byte, 700)); l.Append([]byte("v1")) }},
		{"emptied", func(l *wire.BytesList) { l.Truncate(0) }},
		{"one copied, longer", func(l *wire.BytesList) { l.Truncate(0); l.Append([]byte("a much longer value")) }},
		{"one copied, shorter", func(l *wire.BytesList) { l.Truncate(0); l.Append([]byte("v")) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := cf.NewListBuffers(a)
			l := x.InitMessages(2)
			l.AppendBuf(zc)
			l.Append([]byte("v1"))
			sz := x.Sizes()
			c.change(l)
			sga := wire.SGA{Head: make([]byte, sz.Head())}
			if err := x.Serialize(sga.Head, &sga); !errors.Is(err, wire.ErrModified) {
				t.Fatalf("Serialize after the change: %v, want ErrModified", err)
			}
			checkDirect(t, x)
		})
	}
}

// TestDirectInlineDecoded serializes decoded trees, whose nested messages
// are decoded on first access: Tree2 and Tree3 size and write their Tree1
// children and the leaves below them inline, and load them there (Get at
// the second inline level).
func TestDirectInlineDecoded(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xcd}, 1024))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	x := cf.NewTree3(a)
	i := 0
	for _, t2 := range []*cf.Tree2{x.InitLeft(), x.InitRight()} {
		for _, t1 := range []*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
			leafValue(t1.InitLeft(), i%3, zc, i)
			if i%3 != 2 {
				leafValue(t1.InitRight(), (i+1)%3, zc, i+1)
			}
			i += 2
		}
	}
	checkDirect(t, x)
	p := flatten(t, x)
	y := cf.NewTree3(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	checkDirect(t, y)
	if !x.Equal(y) {
		t.Fatal("decoded tree differs")
	}
	// A Tree2 decoded from a Tree3's left child (its own wire form).
	t2, err := y.GetLeft()
	if err != nil {
		t.Fatal(err)
	}
	q := flatten(t, t2)
	z := cf.NewTree2(a)
	if err := z.DecodeBytes(q); err != nil {
		t.Fatal(err)
	}
	checkDirect(t, z)
	if got := flatten(t, z); !bytes.Equal(got, q) {
		t.Fatalf("decoded Tree2 re-serialized differs:\n got %x\nwant %x", got, q)
	}
	// A leaf made before the Reset, two inline levels down.
	old := cf.NewSingleBuffer(a)
	old.SetMessage([]byte("old"))
	resetArena(t, a)
	w2 := cf.NewTree2(a)
	w2.InitLeft().SetLeft(old)
	var sga wire.SGA
	if err := wire.SerializeSGA(w2, &sga); !errors.Is(err, wire.ErrArenaReset) {
		t.Fatalf("SerializeSGA of a stale leaf two levels down: %v, want ErrArenaReset", err)
	}
}
