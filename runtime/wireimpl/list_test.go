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
