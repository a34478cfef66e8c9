package wireimpl

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TestBytesListEntView checks the list validation fused into the direct
// decode: BytesListEnt makes a checked view exactly when every element
// lies in the input (entsInRange agrees with source.checkRef on values
// ending at, one past and far past the end, empty values at any offset,
// and offsets and sizes near 2^32); a list with an element out of range
// decodes without error and stays pending, and its Load reports the error
// of the Decoder path; a checked view's Load fails with ErrArenaReset after
// the arena's Reset.
func TestBytesListEntView(t *testing.T) {
	const size = 128      // the input; the list's entries are written at 64
	elems := [][2]uint64{ // {offset, size}
		{0, 1}, {0, size}, {0, size + 1}, {size - 1, 1}, {size, 1}, {size, 0}, {math.MaxUint32, 0},
		{math.MaxUint32, 1}, {1, math.MaxUint32}, {math.MaxUint32, math.MaxUint32}, {64, 64}, {65, 64},
	}
	for _, ls := range []int{64, 61} { // the list's entries: aligned, and not
		for _, bad := range elems {
			for _, n := range []int{1, 2, 5} {
				a := NewArena()
				data := make([]byte, size)
				// Entry of the list at 0: n elements at ls; the others are valid.
				binary.LittleEndian.PutUint64(data[0:], uint64(ls)<<32|uint64(n))
				for i := range n {
					e := [2]uint64{uint64(i), 3}
					if i == n-1 {
						e = bad
					}
					binary.LittleEndian.PutUint64(data[ls+EntrySize*i:], e[0]<<32|e[1])
				}
				s := a.newSourceOf(data, mem.Buf{})
				var l BytesList
				next, err := s.BytesListEnt(0, 7, 8, size, 0, &l)
				if err != nil || next != ls+EntrySize*n {
					t.Fatalf("elem %v n %d: BytesListEnt = %d, %v", bad, n, next, err)
				}
				inRange := s.checkRef(uint32(bad[0]), uint32(bad[1]))
				if (l.vep != 0) != inRange {
					t.Errorf("elem %v n %d: view %v, element in range %v", bad, n, l.vep != 0, inRange)
				}
				err = l.Load(a)
				var de *DecodeError
				switch {
				case inRange && err != nil:
					t.Errorf("elem %v n %d: Load = %v", bad, n, err)
				case !inRange && (!errors.As(err, &de) || de.Field != 7 || de.Off != ls+EntrySize*(n-1)):
					t.Errorf("elem %v n %d: Load = %v, want the out-of-range error of field 7 at %d",
						bad, n, err, ls+EntrySize*(n-1))
				case inRange && l.Len() != n:
					t.Errorf("elem %v n %d: Len %d", bad, n, l.Len())
				}
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
				if inRange {
					if err := l.Load(a); !errors.Is(err, ErrArenaReset) {
						t.Errorf("elem %v n %d: Load after Reset = %v, want ErrArenaReset", bad, n, err)
					}
				}
			}
		}
	}
}

// TestWordsInRange checks the word loop against the byte loop on every
// alignment of the entries.
func TestWordsInRange(t *testing.T) {
	buf := make([]byte, 8+5*EntrySize)
	for shift := range 8 {
		ents := buf[shift : shift+5*EntrySize]
		for _, e := range []uint64{0, 1, 100, 101, 100<<32 | 1, 99<<32 | 1, 101 << 32, math.MaxUint64, math.MaxUint32 << 32} {
			for i := range 5 {
				for j := range 5 {
					binary.LittleEndian.PutUint64(ents[EntrySize*j:], 3<<32|4)
				}
				binary.LittleEndian.PutUint64(ents[EntrySize*i:], e)
				want := entsInRange(ents, 100)
				if wordLoads(ents) {
					if got := wordsInRange(unsafe.Pointer(unsafe.SliceData(ents)), 5, 100); got != want {
						t.Errorf("shift %d entry %d = %#x: wordsInRange %v, entsInRange %v", shift, i, e, got, want)
					}
				}
			}
		}
	}
}

// TestBytesListEntRegion checks that a list whose region is refused
// returns listEnt's errors and leaves the cursor.
func TestBytesListEntRegion(t *testing.T) {
	a := NewArena()
	data := make([]byte, 64)
	s := a.newSourceOf(data, mem.Buf{})
	for _, e := range [][2]uint64{{8, MaxListLen + 1}, {4, 1}, {65, 0}, {60, 1}, {56, 2}} {
		binary.LittleEndian.PutUint64(data[0:], e[0]<<32|e[1])
		var l BytesList
		_, _, want := s.listEnt(0, 3, 8, 64)
		next, err := s.BytesListEnt(0, 3, 8, 64, 0, &l)
		if want == nil || err == nil || err.Error() != want.Error() || next != 8 {
			t.Errorf("entry %v: BytesListEnt = %d, %v; listEnt %v", e, next, err, want)
		}
	}
	binary.LittleEndian.PutUint64(data[0:], 56<<32|1)
	var l BytesList
	if next, err := s.BytesListEnt(0, 3, 8, 64, 0, &l); err != nil || next != 64 {
		t.Errorf("last entry: BytesListEnt = %d, %v", next, err)
	}
}
