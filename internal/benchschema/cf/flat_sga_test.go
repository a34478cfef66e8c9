package cf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// SingleBuffer and ListBuffers have no nested message field: their
// WireSerializeSGA is the flat one (sizes and writes in one function,
// runtime/wireimpl/fast_encode_flat.go). These tests hold it to the
// unfused path when the SGA must grow, to the unfused path's errors, and
// to the decoded input when a decoded message is sent again.

// TestFlatSGAGrow serializes into SGAs too small for the head, the
// entries, or both (GrowFlat), and into an empty one.
func TestFlatSGAGrow(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	l := cf.NewListBuffers(a)
	ml := l.InitMessages(4)
	ml.AppendBuf(zc)
	ml.Append([]byte("copied"))
	ml.AppendBuf(zc)
	ml.Append(bytes.Repeat([]byte{7}, 300))
	s := cf.NewSingleBuffer(a)
	s.SetMessageBuf(zc)
	c := cf.NewSingleBuffer(a)
	c.SetMessage(bytes.Repeat([]byte{9}, 200))
	for _, m := range []wire.Object{l, s, c} {
		want := unfused(t, m)
		for name, sga := range map[string]*wire.SGA{
			"empty":         {},
			"small head":    {Head: make([]byte, 3), Entries: make([]mem.Buf, 0, 8)},
			"small entries": {Head: make([]byte, 0, 4096), Entries: make([]mem.Buf, 1)},
		} {
			if err := wire.SerializeSGA(m, sga); err != nil {
				t.Fatalf("%T %s: %v", m, name, err)
			}
			if !bytes.Equal(sga.Head, want.Head) || len(sga.Entries) != len(want.Entries) {
				t.Fatalf("%T %s: head %x (%d entries), want %x (%d)", m, name, sga.Head, len(sga.Entries), want.Head, len(want.Entries))
			}
			for i := range want.Entries {
				if sga.Entries[i] != want.Entries[i] {
					t.Fatalf("%T %s: entry %d differs", m, name, i)
				}
			}
		}
	}
}

// TestFlatSGAErrors: a flat message made before its arena's Reset, and a
// decoded list that fails to load, give the unfused path's errors.
func TestFlatSGAErrors(t *testing.T) {
	a := wire.NewArena()
	s := cf.NewSingleBuffer(a)
	s.SetMessage([]byte("x"))
	l := cf.NewListBuffers(a)
	l.InitMessages(1).Append([]byte("y"))
	resetArena(t, a)
	var sga wire.SGA
	for _, m := range []wire.Object{s, l} {
		if err := wire.SerializeSGA(m, &sga); !errors.Is(err, wire.ErrArenaReset) {
			t.Fatalf("%T after Reset: %v, want ErrArenaReset", m, err)
		}
	}

	// A one-element list whose element's offset points past the end: the
	// list is decoded on first use, so the error comes from the sizes.
	src := cf.NewListBuffers(a)
	src.InitMessages(1).Append([]byte("abc"))
	good, err := wire.Flatten(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	resetArena(t, a)
	bad := append([]byte(nil), good...)
	// bitmap word count and bitmap (8), the list's entry (8), then the
	// element's {size, offset} entry: its offset is bytes 20..23.
	binary.LittleEndian.PutUint32(bad[20:], 0x7fff)
	d := cf.NewListBuffers(a)
	if err := d.DecodeBytes(bad); err != nil {
		t.Skipf("the corrupted list is refused at decode (%v): nothing is left for the sizes", err)
	}
	errSGA := wire.SerializeSGA(d, &sga)
	_, errFlat := wire.Flatten(d, nil)
	if errSGA == nil || errFlat == nil || errSGA.Error() != errFlat.Error() {
		t.Fatalf("corrupted list: SerializeSGA %v, Flatten %v: want the same error", errSGA, errFlat)
	}
	resetArena(t, a)
}

// TestFlatSGADecoded: a message decoded from registered memory (its large
// elements zero-copy again) is sent as the unfused path sends it, and
// decodes to the original values.
func TestFlatSGADecoded(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	defer resetArena(t, a)
	l := cf.NewListBuffers(a)
	ml := l.InitMessages(5)
	for i, n := range []int{10, 900, 0, 2000, 33} {
		ml.Append(bytes.Repeat([]byte{byte(i + 1)}, n))
	}
	in, err := wire.Flatten(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	rx := memtest.Alloc(t, pool, in)
	defer memtest.Release(t, rx)
	b := wire.NewArena()
	b.Threshold = 512
	defer resetArena(t, b)
	d := cf.NewListBuffers(b)
	if err := d.Decode(rx); err != nil {
		t.Fatal(err)
	}
	var sga wire.SGA
	checkFused(t, d, &sga)
	if len(sga.Entries) != 2 {
		t.Fatalf("%d zero-copy entries, want 2 (the elements of at least 512 bytes)", len(sga.Entries))
	}
	e := cf.NewListBuffers(a)
	if err := e.DecodeBytes(sga.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if !e.Equal(l) {
		t.Fatalf("decoded, sent again and decoded: %v, want %v", e, l)
	}
}
