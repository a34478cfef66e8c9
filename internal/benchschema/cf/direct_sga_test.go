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

// wire.SerializeSGA of a generated message on the direct path takes the
// fused WireSerializeSGA (sizes and encode in one call). These tests hold
// it to the unfused Sizes-then-Serialize of the same message into an SGA
// that held an earlier message (longer head, entries), to its errors, and
// to zero allocations.

// unfused is what wire.SerializeSGA did before the fused path.
func unfused(t *testing.T, m wire.Object) *wire.SGA {
	t.Helper()
	sz := m.Sizes()
	sga := &wire.SGA{Head: make([]byte, sz.Head())}
	if err := m.Serialize(sga.Head, sga); err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	return sga
}

// checkFused serializes m with SerializeSGA into dirty (an SGA reused from
// an earlier message) and requires the head and entries of the unfused path.
func checkFused(t *testing.T, m wire.Object, dirty *wire.SGA) {
	t.Helper()
	if err := wire.SerializeSGA(m, dirty); err != nil {
		t.Fatalf("SerializeSGA: %v", err)
	}
	want := unfused(t, m)
	if !bytes.Equal(dirty.Head, want.Head) {
		t.Fatalf("fused head differs:\n got %x\nwant %x", dirty.Head, want.Head)
	}
	if len(dirty.Entries) != len(want.Entries) {
		t.Fatalf("fused: %d entries, unfused %d", len(dirty.Entries), len(want.Entries))
	}
	for i := range want.Entries {
		if dirty.Entries[i] != want.Entries[i] {
			t.Fatalf("entry %d differs", i)
		}
	}
}

func TestFusedSGAMatchesUnfused(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xab}, 900))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	// One SGA reused across every message, largest first, so that each
	// message finds a longer head and stale entries.
	dirty := &wire.SGA{Head: bytes.Repeat([]byte{0xee}, 1<<14), Entries: []mem.Buf{zc, zc, zc}}

	x := cf.NewTree5(a)
	i := 0
	for _, t4 := range []*cf.Tree4{x.InitLeft(), x.InitRight()} {
		for _, t3 := range []*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
			for _, t2 := range []*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
				for _, t1 := range []*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
					leafValue(t1.InitLeft(), i%3, zc, i)
					leafValue(t1.InitRight(), (i+1)%3, zc, i+1)
					i += 2
				}
			}
		}
	}
	checkFused(t, x, dirty)

	for _, p := range [][]int{{1, 2, 0, 2, 1}, {2}, {1}, {0}, {}} {
		l := cf.NewListBuffers(a)
		if len(p) > 0 {
			ml := l.InitMessages(len(p))
			for j, k := range p {
				switch k {
				case 0:
					ml.Append(nil)
				case 1:
					ml.Append(bytes.Repeat([]byte{byte(j + 1)}, 5*j+1))
				case 2:
					ml.AppendBuf(zc)
				}
			}
		}
		checkFused(t, l, dirty)
	}
	for k := 0; k < 3; k++ {
		s := cf.NewSingleBuffer(a)
		leafValue(s, k, zc, 7)
		checkFused(t, s, dirty)
	}
	// Serialize after a fused SerializeSGA (no Sizes of its own in between
	// for this message): the unfused entry points are unaffected.
	s := cf.NewSingleBuffer(a)
	s.SetMessage([]byte("abc"))
	if err := wire.SerializeSGA(s, dirty); err != nil {
		t.Fatal(err)
	}
	if err := s.Serialize(make([]byte, len(dirty.Head)), &wire.SGA{}); err != nil {
		t.Fatalf("Serialize after the fused path: %v", err)
	}
}

func TestFusedSGAErrors(t *testing.T) {
	a := wire.NewArena()
	x := cf.NewTree1(a)
	x.InitLeft().SetMessage([]byte("left"))
	resetArena(t, a)
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); !errors.Is(err, wire.ErrArenaReset) {
		t.Fatalf("SerializeSGA after Reset: %v, want ErrArenaReset", err)
	}
	// A nested message made before the Reset, held by a message made after.
	old := cf.NewSingleBuffer(a)
	old.SetMessage([]byte("old"))
	resetArena(t, a)
	y := cf.NewTree1(a)
	y.SetLeft(old)
	if err := wire.SerializeSGA(y, &sga); !errors.Is(err, wire.ErrArenaReset) {
		t.Fatalf("SerializeSGA of a stale nested message: %v, want ErrArenaReset", err)
	}
	resetArena(t, a)
	// Without an arena (the zero value): the unfused path's error.
	var z cf.SingleBuffer
	errFused := wire.SerializeSGA(&z, &sga)
	_, errFlat := wire.Flatten(&z, nil)
	if (errFused == nil) != (errFlat == nil) {
		t.Fatalf("zero message: SerializeSGA %v, Flatten %v", errFused, errFlat)
	}
}

func TestFusedSGAAllocs(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0xab}, 1024))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)
	s := cf.NewSingleBuffer(a)
	s.SetMessageBuf(zc)
	l := cf.NewListBuffers(a)
	ml := l.InitMessages(3)
	ml.Append([]byte("x"))
	ml.AppendBuf(zc)
	ml.Append(bytes.Repeat([]byte{1}, 100))
	var sga wire.SGA
	for _, m := range []wire.Object{s, l} {
		if err := wire.SerializeSGA(m, &sga); err != nil { // sizes the SGA once
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() {
			if err := wire.SerializeSGA(m, &sga); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Fatalf("%T: %v allocs per SerializeSGA, want 0", m, n)
		}
	}
}
