package wireimpl

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TestAppendBorrowedFromPending: a decoded list that is not a checked view
// (an element out of range: Load would fail) is refused by
// AppendBorrowedFrom with errNotLoaded, then, after its arena's Reset,
// with ErrArenaReset; AppendValues panics on it as At would. The list
// appended to is unchanged.
func TestAppendBorrowedFromPending(t *testing.T) {
	const size = 64
	a := NewArena()
	data := make([]byte, size)
	binary.LittleEndian.PutUint64(data[0:], uint64(16)<<32|2) // 2 elements at 16
	binary.LittleEndian.PutUint64(data[16:], uint64(40)<<32|3)
	binary.LittleEndian.PutUint64(data[24:], uint64(60)<<32|9) // past the end
	s := a.newSourceOf(data, mem.Buf{})
	var src BytesList
	if _, err := s.BytesListEnt(0, 1, 8, size, 0, &src); err != nil {
		t.Fatal(err)
	}
	if src.vep != 0 || src.lz.src == nil {
		t.Fatal("want a pending list")
	}
	var l BytesList
	l.Init(a, 4)
	l.AppendBorrowed([]byte("kept"))
	if err := l.AppendBorrowedFrom(&src); !errors.Is(err, errNotLoaded) {
		t.Fatalf("AppendBorrowedFrom(pending) = %v, want errNotLoaded", err)
	}
	if err := l.SetBorrowedFrom(&src); !errors.Is(err, errNotLoaded) {
		t.Fatalf("SetBorrowedFrom(pending) = %v, want errNotLoaded", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("AppendValues of a pending list did not panic")
			}
		}()
		src.AppendValues(nil)
	}()
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendBorrowedFrom(&src); !errors.Is(err, ErrArenaReset) {
		t.Fatalf("AppendBorrowedFrom after Reset = %v, want ErrArenaReset", err)
	}
	if err := l.SetBorrowedFrom(&src); !errors.Is(err, ErrArenaReset) {
		t.Fatalf("SetBorrowedFrom after Reset = %v, want ErrArenaReset", err)
	}
	if l.Len() != 1 || string(l.At(0)) != "kept" {
		t.Fatalf("the list changed: %d elements", l.Len())
	}
}
