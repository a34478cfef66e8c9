package testmsg

import (
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestDecodeSegments: an object decoded from its head plus its zero-copy
// entries as separate segments (as datapath/shm delivers it) equals the
// original; values in later segments alias them; any split of the bytes
// that keeps the head in the first segment decodes to the same message
// (values straddling segments are copied).
func TestDecodeSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 1))
	v := newValues(t)
	for i := range 300 {
		a := wire.NewArena()
		a.Threshold = 64
		m := randAllTypes(r, a, v)
		var sga wire.SGA
		if err := wire.SerializeSGA(m, &sga); err != nil {
			t.Fatal(err)
		}
		prefix := []byte("hdr:")
		segs := [][]byte{append(append([]byte(nil), prefix...), sga.Head...)}
		for _, e := range sga.Entries {
			segs = append(segs, e.Bytes())
		}
		da := wire.NewArena()
		got := NewAllTypes(da)
		if err := wire.DecodeSegments(got, segs, len(prefix), mem.Buf{}); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !got.Equal(m) {
			t.Fatalf("message %d: decoded from segments differs:\n got %v\nwant %v", i, got, m)
		}
		// Re-split the flat bytes at random points after the head.
		flat := sga.AppendTo(nil)
		for range 4 {
			cut := len(sga.Head) + r.IntN(len(flat)-len(sga.Head)+1)
			parts := [][]byte{flat[:cut]}
			for rest := flat[cut:]; len(rest) > 0; {
				k := 1 + r.IntN(len(rest))
				parts = append(parts, rest[:k])
				rest = rest[k:]
			}
			got2 := NewAllTypes(da)
			if err := wire.DecodeSegments(got2, parts, 0, mem.Buf{}); err != nil {
				t.Fatalf("message %d re-split: %v", i, err)
			}
			if !got2.Equal(m) {
				t.Fatalf("message %d re-split %d parts cut %d head %d differs:\n got %v\nwant %v", i, len(parts), cut, len(sga.Head), got2, m)
			}
		}
		if err := da.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecodeSegmentsAlias: values carried in later segments alias them
// (no copy), both through the lazy list view and after materializing.
func TestDecodeSegmentsAlias(t *testing.T) {
	v := newValues(t)
	a := wire.NewArena()
	a.Threshold = 512
	m := NewBufs(a)
	l := m.InitMessages(3)
	l.AppendBuf(v.registeredBuf(make([]byte, 2048)))
	l.Append([]byte("small"))
	l.AppendBuf(v.registeredBuf(make([]byte, 4096)))
	var sga wire.SGA
	if err := wire.SerializeSGA(m, &sga); err != nil {
		t.Fatal(err)
	}
	if len(sga.Entries) != 2 {
		t.Fatalf("%d zero-copy entries, want 2", len(sga.Entries))
	}
	segs := [][]byte{sga.Head, sga.Entries[0].Bytes(), sga.Entries[1].Bytes()}
	da := wire.NewArena()
	got := NewBufs(da)
	if err := wire.DecodeSegments(got, segs, 0, mem.Buf{}); err != nil {
		t.Fatal(err)
	}
	gl, err := got.GetMessages()
	if err != nil {
		t.Fatal(err)
	}
	if gl.Len() != 3 || string(gl.At(1)) != "small" {
		t.Fatalf("decoded %d values", gl.Len())
	}
	for i, k := range []int{0, 2} {
		if b := gl.At(k); len(b) != len(segs[1+i]) || &b[0] != &segs[1+i][0] {
			t.Errorf("value %d does not alias its segment", k)
		}
		if gl.IsZeroCopy(k) {
			t.Errorf("value %d of a segmented input is zero-copy: its memory is not this process's", k)
		}
	}
	_ = da.Reset()
	_ = a.Reset()
}

// TestDecodeSegmentsHostile: a corrupted head or truncated segments give an
// error (or a message that reads consistently), never a panic, and the
// hold reference is taken by the arena and released at Reset.
func TestDecodeSegmentsHostile(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 2))
	v := newValues(t)
	hold := v.registeredBuf([]byte("hold"))
	for i := range 500 {
		a := wire.NewArena()
		a.Threshold = 64
		m := randAllTypes(r, a, v)
		var sga wire.SGA
		if err := wire.SerializeSGA(m, &sga); err != nil {
			t.Fatal(err)
		}
		head := append([]byte(nil), sga.Head...)
		for range 1 + r.IntN(4) {
			if len(head) > 0 {
				head[r.IntN(len(head))] = byte(r.Uint32())
			}
		}
		segs := [][]byte{head}
		for _, e := range sga.Entries {
			b := e.Bytes()
			segs = append(segs, b[:r.IntN(len(b)+1)])
		}
		da := wire.NewArena()
		got := NewAllTypes(da)
		if err := wire.DecodeSegments(got, segs, 0, hold); err == nil {
			_ = got.Equal(m) // loads every lazy field
			_ = got.String()
		}
		if hold.Refs() != 2 {
			t.Fatalf("message %d: hold has %d references during the decode's batch, want 2", i, hold.Refs())
		}
		if err := da.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	if err := wire.DecodeSegments(NewAllTypes(wire.NewArena()), nil, 0, mem.Buf{}); err == nil {
		t.Error("no segments: want an error")
	}
	if err := wire.DecodeSegments(NewAllTypes(wire.NewArena()), [][]byte{{1}}, 2, mem.Buf{}); err == nil {
		t.Error("offset beyond the head: want an error")
	}
}
