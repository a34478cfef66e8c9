package wireimpl

import (
	"bytes"
	"testing"
)

// TestListsReuseUnzeroedBacking checks that list backing arrays, which are
// not zeroed when handed out (newSliceRaw), never expose elements of a
// previous batch: every element is assigned by Append, and Truncate never
// lengthens a list.
func TestListsReuseUnzeroedBacking(t *testing.T) {
	a := NewArena()
	fill := func() {
		var b BytesList
		b.Init(a, 4)
		var s StringList
		s.Init(a, 4)
		var u ScalarList[uint64]
		u.Init(a, 4)
		for i := range 4 {
			b.Append([]byte{'b', byte('0' + i)})
			s.Append(string([]byte{'s', byte('0' + i)}))
			u.Append(uint64(100 + i))
		}
	}
	fill()
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	var b BytesList
	b.Init(a, 4)
	var s StringList
	s.Init(a, 4)
	var u ScalarList[uint64]
	u.Init(a, 4)
	if b.Len() != 0 || s.Len() != 0 || u.Len() != 0 {
		t.Fatalf("Init: lengths %d %d %d, want 0", b.Len(), s.Len(), u.Len())
	}
	b.Append([]byte("new"))
	b.Append(nil)
	s.Append("")
	u.Append(7)
	if got := b.At(0); !bytes.Equal(got, []byte("new")) {
		t.Errorf("BytesList.At(0) = %q", got)
	}
	if got := b.At(1); len(got) != 0 || b.Field(1).IsZeroCopy() {
		t.Errorf("BytesList.At(1) = %q (zero-copy %v), want empty", got, b.Field(1).IsZeroCopy())
	}
	if got, err := s.At(0); err != nil || got != "" {
		t.Errorf("StringList.At(0) = %q, %v", got, err)
	}
	if got := u.At(0); got != 7 {
		t.Errorf("ScalarList.At(0) = %d", got)
	}

	tests := []struct {
		name string
		f    func()
	}{
		{"bytes", func() { b.Truncate(3) }},
		{"string", func() { s.Truncate(2) }},
		{"scalar", func() { u.Truncate(2) }},
		{"negative", func() { u.Truncate(-1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Truncate beyond the length did not panic")
				}
			}()
			tc.f()
		})
	}
	b.Truncate(1)
	if b.Len() != 1 {
		t.Errorf("Truncate(1): Len %d", b.Len())
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
}

type initTestMsg struct {
	c Core
	v int
}

func (m *initTestMsg) String() string      { return "" }
func (m *initTestMsg) WireCore() *Core     { return &m.c }
func (m *initTestMsg) WireSizes(*Sizer)    {}
func (m *initTestMsg) WireEncode(*Encoder) {}
func (m *initTestMsg) WireDecode(*Decoder) {}

// TestListInitFromSlab checks the lists' Init, which takes its backing
// array from the current slab chunk inline (Arena.take): room for exactly
// n elements, no overlap between lists of one batch, in the first batch
// (slow path) and after Reset (fast path), and n <= 0 gives an empty list
// that still grows.
func TestListInitFromSlab(t *testing.T) {
	a := NewArena()
	for batch := range 3 {
		var bl [2]BytesList
		var sl [2]StringList
		var ml [2]MessageList[*initTestMsg]
		for j := range 2 {
			bl[j].Init(a, 3)
			sl[j].Init(a, 3)
			ml[j].Init(a, 3)
			if cap(bl[j].items) != 3 || cap(sl[j].items) != 3 || cap(ml[j].items) != 3 || bl[j].Len()+sl[j].Len()+ml[j].Len() != 0 {
				t.Fatalf("batch %d list %d: caps %d %d %d, lens %d %d %d", batch, j,
					cap(bl[j].items), cap(sl[j].items), cap(ml[j].items), bl[j].Len(), sl[j].Len(), ml[j].Len())
			}
		}
		for i := range 3 {
			for j := range 2 {
				bl[j].Append([]byte{byte('a' + j), byte('0' + i)})
				sl[j].Append(string([]byte{byte('a' + j), byte('0' + i)}))
				ml[j].Append(&initTestMsg{v: 10*j + i})
			}
		}
		for j := range 2 {
			for i := range 3 {
				want := string([]byte{byte('a' + j), byte('0' + i)})
				if got := string(bl[j].At(i)); got != want {
					t.Fatalf("batch %d: BytesList %d At(%d) = %q, want %q", batch, j, i, got, want)
				}
				if got, err := sl[j].At(i); err != nil || got != want {
					t.Fatalf("batch %d: StringList %d At(%d) = %q, %v, want %q", batch, j, i, got, err, want)
				}
				if got := ml[j].At(i).v; got != 10*j+i {
					t.Fatalf("batch %d: MessageList %d At(%d).v = %d, want %d", batch, j, i, got, 10*j+i)
				}
			}
		}
		for _, n := range []int{0, -1} {
			var b BytesList
			b.Init(a, n)
			var m MessageList[*initTestMsg]
			m.Init(a, n)
			b.Append([]byte("x"))
			m.Append(&initTestMsg{v: 1})
			if b.Len() != 1 || string(b.At(0)) != "x" || m.Len() != 1 || m.At(0).v != 1 {
				t.Fatalf("batch %d: Init(%d) then Append: lens %d %d", batch, n, b.Len(), m.Len())
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}
