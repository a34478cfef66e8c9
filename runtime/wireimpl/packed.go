package wireimpl

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Hybrid packed numeric lists (docs/WIRE_FORMAT.md "Hybrid packed
// lists"). A list of 32- or 64-bit scalars whose elements lie in
// registered memory (SetBuf, or a decoded list that views a registered
// input) and whose byte size is at or above the arena's Threshold is
// written out of line: its list entry is {count | PackedFlag, offset} and
// its elements are one zero-copy value (one scatter-gather entry), not a
// region of the header. A reader views such a list in place as a typed
// slice ([]float32, ...) when the elements are aligned for the type (and
// the host is little-endian), and copies them into the arena otherwise.
// Every other list is written in the header as before, byte for byte.

// PackedFlag marks the count word of a list entry whose elements are out
// of line (bytes [offset, offset+count*width) of the object, anywhere in
// it, like a bytes value) instead of a region of the header. Its low 31
// bits are the count (at most MaxListLen). A reader older than the hybrid
// form rejects such an entry (count > MaxListLen).
const PackedFlag = 1 << 31

// ErrPackedBuf: ScalarList.SetBuf was given a buffer that cannot be viewed
// as the list's element type (bools; a length that is not a multiple of
// the element width; a start not aligned for the type; a big-endian host).
var ErrPackedBuf = errors.New("wire: buffer is not an aligned little-endian array of the list's element type")

// nativeLE reports whether the host is little-endian (the wire's order):
// only then can wire bytes be viewed as a typed slice.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// viewOf returns p (n elements of T at their wire width) as a []T without
// copying, when T is not bool, the host is little-endian and p's start is
// aligned for T.
func viewOf[T Scalar](p []byte, n int) ([]T, bool) {
	w := scalarWidth[T]()
	if w == 1 || !nativeLE || n <= 0 || len(p) != n*w || uintptr(unsafe.Pointer(unsafe.SliceData(p)))%uintptr(w) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(p))), n), true
}

// SetBuf makes buf's window the list's elements (little-endian, at the
// type's width, aligned for the type), viewed in place as l's items: no
// copy. At or above the arena's Threshold the list is sent as its own
// zero-copy entry; below it the elements are copied into the arena at
// once (and into the head at Serialize). The arena takes its own
// reference (released at Reset), the caller keeps and must still release
// its own; like a zero-copy bytes value, the window must not be modified
// until Reset. SetAt, Append and Truncate copy the elements into the
// arena first, so they never write to buf.
//
// Errors: ErrPackedBuf for a list of bools, a length that is not a
// multiple of the element width, a misaligned start or a big-endian host;
// ErrTooLarge for more than MaxListLen elements. The list is unchanged on
// error.
func (l *ScalarList[T]) SetBuf(buf mem.Buf) error {
	if l.a == nil {
		return ErrNoArena
	}
	w := scalarWidth[T]()
	n := buf.Len() / w
	if n > MaxListLen {
		return ErrTooLarge
	}
	p := buf.Bytes()
	if buf.Len() == 0 {
		l.Init(l.a, 0)
		return nil
	}
	v, ok := viewOf[T](p, n)
	if !ok || n*w != len(p) {
		return ErrPackedBuf
	}
	if len(p) < l.a.Threshold {
		items := scalarType[T]().newSliceRaw(l.a, n)
		copy(items, v)
		l.items, l.lz, l.zc = items, lazy{}, Bytes{}
		return nil
	}
	l.zc.SetBuf(l.a, buf) // at or above the threshold: a reference, zero-copy
	l.items, l.lz = v[:n:n], lazy{}
	return nil
}

// IsZeroCopy reports whether the list will be sent as its own zero-copy
// entry (its elements view registered memory at or above the threshold).
func (l *ScalarList[T]) IsZeroCopy() bool { return !l.zc.buf.IsZero() }

// detach copies a list whose items view memory outside the arena (SetBuf,
// a decoded out-of-line list) into the arena before it is modified.
// ScalarList's mutators call it when l.zc.data != nil.
func (l *ScalarList[T]) detach() {
	items := scalarType[T]().newSliceRaw(l.a, len(l.items))
	copy(items, l.items)
	l.items, l.zc = items, Bytes{}
}

// sizePacked adds a present, loaded list of scalars to s: one zero-copy
// value when it is hybrid, its header region otherwise.
func sizePacked[T Scalar](s *Sizer, l *ScalarList[T]) {
	if !l.zc.buf.IsZero() {
		s.AddBytes(&l.zc)
		return
	}
	s.header += len(l.items) * scalarWidth[T]()
}

// encodePacked writes a present list of scalars whose entry is at `at`
// (-1: the layout no longer matches, already recorded): out of line as a
// zero-copy value when hybrid, else as a header region.
func encodePacked[T Scalar](e *Encoder, at int, l *ScalarList[T]) {
	n := len(l.items)
	if !l.zc.buf.IsZero() {
		if at < 0 {
			return
		}
		e.data(at, &l.zc)
		if e.err == nil {
			binary.LittleEndian.PutUint32(e.dst[at:], uint32(n)|PackedFlag)
		}
		return
	}
	size := n * scalarWidth[T]()
	r := e.region(size)
	if at < 0 || r < 0 {
		return
	}
	e.put32x2(at, n, r)
	encodeScalars(e.dst[r:r+size], l.items)
}

// decodePacked decodes the list of scalars of field num when its entry
// carries PackedFlag, and reports whether it did (false: absent, or an
// ordinary list region for the caller). The elements must lie within the
// object (ErrMalformed) and the count be in 1..MaxListLen; aligned
// elements are viewed in place (their Bytes kept, zero-copy on re-send
// when the input is registered and they reach its threshold), others
// copied into the arena (bounded by a.Limit: ErrArenaLimit).
func decodePacked[T Scalar](d *Decoder, num int, l *ScalarList[T]) bool {
	at := d.entry(num)
	if at < 0 {
		return false
	}
	cnt := binary.LittleEndian.Uint32(d.data[at:])
	if cnt&PackedFlag == 0 {
		return false
	}
	n := cnt &^ PackedFlag
	if n == 0 || n > MaxListLen {
		d.fail(malformed(at, num, "out-of-line list count not in 1..MaxListLen"))
		return true
	}
	off := binary.LittleEndian.Uint32(d.data[at+4:])
	size := n * uint32(scalarWidth[T]()) // <= 2^31
	if !d.src.checkRef(off, size) {
		d.fail(malformed(at, num, "out-of-line list out of bounds"))
		return true
	}
	b := d.src.ref(off, size)
	if v, ok := viewOf[T](b.data, int(n)); ok {
		l.items, l.zc = v[:n:n], b
		return true
	}
	items, ok := scalarType[T]().tryNewSlice(d.a, int(n))
	if !ok {
		d.fail(limitErr(int(off), num))
		return true
	}
	decodeScalars(items, b.data)
	l.items = items
	return true
}
