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

// buildBench builds a flat message, a list and a tree from vals (with the
// zero-copy value zc among them), through the generated SetXBorrowed and
// AppendBorrowed when borrowed is set, else through SetX and Append.
func buildBench(a *wire.Arena, vals [][]byte, zc []byte, borrowed bool) []typedSGA {
	set := func(m *cf.SingleBuffer, v []byte) {
		if borrowed {
			m.SetMessageBorrowed(v)
		} else {
			m.SetMessage(v)
		}
	}
	s := cf.NewSingleBuffer(a)
	set(s, vals[0])
	l := cf.NewListBuffers(a)
	ml := l.InitMessages(2) // the rest beyond the reserved room
	for _, v := range append(vals, zc) {
		if borrowed {
			ml.AppendBorrowed(v)
		} else {
			ml.Append(v)
		}
	}
	tr := cf.NewTree5(a)
	set(tr.InitLeft().InitRight().InitLeft().InitLeft().InitRight(), zc)
	set(tr.InitRight().InitLeft().InitLeft().InitRight().InitLeft(), vals[1])
	set(tr.InitRight().InitRight().InitLeft().InitRight().InitLeft(), vals[2])
	return []typedSGA{s, l, tr}
}

// TestBorrowedSerializesAsSet holds messages built with the borrowed
// setters to the same messages built with the copying ones: the same head
// and zero-copy entries, on the fused typed path and the unfused path, at
// the hybrid, copy-all and zero-copy thresholds; and the borrowed values
// are read at serialization (a value changed before it is in the bytes).
func TestBorrowedSerializesAsSet(t *testing.T) {
	pool := memtest.NewPool(t)
	zcBuf := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, zcBuf)
	for _, thr := range []int{wire.DefaultThreshold, wire.CopyAll, 0} {
		vals := [][]byte{[]byte("first"), bytes.Repeat([]byte{3}, 40), []byte("x"), nil}
		a := wire.NewArena()
		a.Threshold = thr
		want := buildBench(a, vals, zcBuf.Bytes(), false)
		got := buildBench(a, vals, zcBuf.Bytes(), true)
		for i := range want {
			w := unfused(t, want[i])
			var g wire.SGA
			if err := got[i].SerializeSGA(&g); err != nil {
				t.Fatalf("thr %d, message %d: SerializeSGA: %v", thr, i, err)
			}
			sameSGA(t, "borrowed, fused", &g, w)
			sameSGA(t, "borrowed, unfused", unfused(t, got[i]), w)
		}
		resetArena(t, a)
	}
	// The value is read when the message is serialized, not when it is set.
	a := wire.NewArena()
	v := []byte("before")
	s := cf.NewSingleBuffer(a)
	s.SetMessageBorrowed(v)
	if mem.Checked {
		resetArena(t, a)
		return // a change before Reset is an error there (TestBorrowedModified)
	}
	copy(v, "after!")
	var g wire.SGA
	if err := s.SerializeSGA(&g); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(g.Head, []byte("after!")) {
		t.Fatalf("head %q does not hold the value at serialization", g.Head)
	}
	resetArena(t, a)
}

// TestBorrowedModified checks that the checked build reports a borrowed
// value changed before the arena's Reset: the serialization of a flat
// message and of a tree fails with ErrBorrowedModified, and Reset returns
// an error wrapping it. The unchecked build does not check (and the
// serialization reads the changed value).
func TestBorrowedModified(t *testing.T) {
	for _, kind := range []string{"flat", "list", "tree"} {
		a := wire.NewArena()
		v := []byte("borrowed")
		var m typedSGA
		switch kind {
		case "flat":
			s := cf.NewSingleBuffer(a)
			s.SetMessageBorrowed(v)
			m = s
		case "list":
			l := cf.NewListBuffers(a)
			l.InitMessages(1).AppendBorrowed(v)
			m = l
		default:
			tr := cf.NewTree5(a)
			tr.InitLeft().InitLeft().InitLeft().InitLeft().InitLeft().SetMessageBorrowed(v)
			m = tr
		}
		var g wire.SGA
		if err := m.SerializeSGA(&g); err != nil {
			t.Fatalf("%s: unmodified: %v", kind, err)
		}
		v[0] = 'B'
		err := m.SerializeSGA(&g)
		rerr := a.Reset()
		if !mem.Checked {
			if err != nil || rerr != nil {
				t.Fatalf("%s: unchecked build: %v, Reset %v", kind, err, rerr)
			}
			continue
		}
		if !errors.Is(err, wire.ErrBorrowedModified) {
			t.Fatalf("%s: SerializeSGA after a change: %v, want ErrBorrowedModified", kind, err)
		}
		if !errors.Is(rerr, wire.ErrBorrowedModified) {
			t.Fatalf("%s: Reset after a change: %v, want ErrBorrowedModified", kind, rerr)
		}
	}
}

// TestBufBorrowedSerializesAsSetBuf holds messages built with
// SetMessageBufBorrowed and AppendBufBorrowed to the same messages built
// with SetMessageBuf and AppendBuf (a small window, one at the threshold,
// a large one): the same head and zero-copy entries, fused and unfused, at
// three thresholds, and the caller's references untouched by the arena.
func TestBufBorrowedSerializesAsSetBuf(t *testing.T) {
	pool := memtest.NewPool(t)
	bufs := []mem.Buf{
		memtest.Alloc(t, pool, []byte("small")),
		memtest.Alloc(t, pool, bytes.Repeat([]byte{1}, wire.DefaultThreshold)),
		memtest.Alloc(t, pool, bytes.Repeat([]byte{2}, 3000)),
	}
	defer func() {
		for _, b := range bufs {
			memtest.Release(t, b)
		}
	}()
	build := func(a *wire.Arena, borrowed bool) []typedSGA {
		set := func(m *cf.SingleBuffer, b mem.Buf) {
			if borrowed {
				m.SetMessageBufBorrowed(b)
			} else {
				m.SetMessageBuf(b)
			}
		}
		s := cf.NewSingleBuffer(a)
		set(s, bufs[2])
		l := cf.NewListBuffers(a)
		ml := l.InitMessages(1) // the rest beyond the reserved room
		for _, b := range bufs {
			if borrowed {
				ml.AppendBufBorrowed(b)
			} else {
				ml.AppendBuf(b)
			}
		}
		tr := cf.NewTree5(a)
		set(tr.InitLeft().InitLeft().InitLeft().InitLeft().InitLeft(), bufs[0])
		set(tr.InitRight().InitLeft().InitLeft().InitRight().InitLeft(), bufs[1])
		return []typedSGA{s, l, tr}
	}
	for _, thr := range []int{wire.DefaultThreshold, wire.CopyAll, 0} {
		a := wire.NewArena()
		a.Threshold = thr
		want := build(a, false)
		refs := bufs[2].Refs()
		got := build(a, true)
		if bufs[2].Refs() != refs {
			t.Fatalf("thr %d: the borrowed setters took references (%d → %d)", thr, refs, bufs[2].Refs())
		}
		for i := range want {
			w := unfused(t, want[i])
			var g wire.SGA
			if err := got[i].SerializeSGA(&g); err != nil {
				t.Fatalf("thr %d, message %d: SerializeSGA: %v", thr, i, err)
			}
			sameSGA(t, "buf borrowed, fused", &g, w)
			sameSGA(t, "buf borrowed, unfused", unfused(t, got[i]), w)
		}
		resetArena(t, a)
	}
}
