package wireimpl

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// DecodeOnly decodes the whole input of s as the message whose only field
// is the bytes list l, numbered num (1..32) with the bitmap bit `bit`
// (1<<(num-1)), at depth 0: Head1 and BytesListEnt in one call, with the
// same list and the same errors (the generated Decode<Msg> of such a
// message calls it; docs/CODEGEN.md, "Direct decode"). It writes every
// field of l, so the caller need not zero it first (a message just made by
// TryNewRaw).
//
// It reports false, with l empty, when the header does not have the
// one-word form that Head1 parses; the caller then calls DecodeSlow. It
// reports true and the error of a list region out of range (l is then
// empty); an element out of range is reported by the list's Load, as
// BytesListEnt leaves it.
func (s *Source) DecodeOnly(num int, bit uint32, l *BytesList) (bool, error) {
	// The common case first, straight-line and without a call (no frame
	// to spill into): an input of one contiguous part whose header is the
	// one word of the list alone (at 8, dynamic part from 16) and whose
	// non-empty list region lies within the input. Everything else, with
	// every error, is decodeOnlyGen: the same code as before this path.
	d := s.data
	end := len(d)
	if end < 8+EntrySize || binary.LittleEndian.Uint64(d[0:8]) != 1|uint64(bit)<<32 || s.segs != nil {
		return s.decodeOnlyGen(num, bit, l)
	}
	e := binary.LittleEndian.Uint64(d[8 : 8+EntrySize])
	n, off := int(uint32(e)), int(e>>32)
	// 1 <= n <= MaxListLen and 8+EntrySize <= off <= end, each as one
	// unsigned compare (n and off are at least 0, end at least
	// 8+EntrySize); n <= MaxListLen first: n*EntrySize cannot overflow.
	if uint(n-1) >= MaxListLen || uint(off-(8+EntrySize)) > uint(end-(8+EntrySize)) || n*EntrySize > end-off {
		return s.decodeOnlyGen(num, bit, l)
	}
	// The entries d[off : off+n*EntrySize] lie within d (checked above):
	// wordsInRange reads them at their address, with no slice expression
	// and its second bounds check.
	view := false
	if p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(d)), off); wordLoadsAt(p) {
		view = wordsInRange(p, n, uint64(end))
	} else {
		view = entsInRange(d[off:off+n*EntrySize], uint64(end))
	}
	meta := uint32(s.epoch)<<lazyEpochShift | uint32(num&lazyFieldMask)<<lazyFieldShift // lazy.set, depth 0
	vep := uint64(0)
	if view {
		vep = s.epoch + 1 // BytesList.vep
	}
	// Every field of l, field by field (a literal goes through a
	// temporary), the pointers first and together: one write-barrier test.
	l.a, l.items, l.lz.src = s.a, nil, s
	l.lz.off, l.lz.n, l.lz.end, l.lz.meta = uint32(off), uint32(n), 0, meta
	l.vep, l.tot, l.tok = vep, listTotals{}, false
	return true, nil
}

// wordLoadsAt is wordLoads for entries at p.
func wordLoadsAt(p unsafe.Pointer) bool {
	return leUnaligned || nativeLE && (unalignedLoads || uintptr(p)%EntrySize == 0)
}

// decodeOnlyGen is DecodeOnly outside its common case (another header
// form, an empty or out-of-range list, a segmented input), with the same
// results.
func (s *Source) decodeOnlyGen(num int, bit uint32, l *BytesList) (bool, error) {
	d := s.data
	end := len(d)
	if end < 8 {
		*l = BytesList{}
		return false, nil
	}
	h := binary.LittleEndian.Uint64(d[0:8])
	at, dyn := 8, 8+EntrySize // the header of the list alone: no popcount
	if h != 1|uint64(bit)<<32 {
		w0 := uint32(h >> 32)
		dyn = 8 + EntrySize*bits.OnesCount32(w0) // at most 32 entries: no overflow
		if uint32(h) != 1 || dyn > end {
			*l = BytesList{}
			return false, nil
		}
		if w0&bit == 0 { // absent
			l.a, l.items, l.lz, l.vep, l.tot, l.tok = s.a, nil, lazy{}, 0, listTotals{}, false
			return true, nil
		}
		at = 8 + EntrySize*bits.OnesCount32(w0&(bit-1))
	} else if dyn > end {
		*l = BytesList{}
		return false, nil
	}
	l.tot, l.tok = listTotals{}, false
	// As BytesListEnt from here (depth 0).
	e := binary.LittleEndian.Uint64(d[at : at+EntrySize])
	n, off := int(uint32(e)), int(e>>32)
	// n <= MaxListLen first: n*EntrySize cannot overflow.
	if n > MaxListLen || off < dyn || off > end || n*EntrySize > end-off {
		*l = BytesList{}
		_, _, err := s.listEnt(at, num, dyn, end)
		return true, err
	}
	if n == 0 {
		l.a, l.items, l.lz, l.vep = s.a, nil, lazy{}, 0
		return true, nil
	}
	view := false
	if s.segs == nil {
		size := uint64(end)
		if ents := d[off : off+n*EntrySize]; wordLoads(ents) {
			view = wordsInRange(unsafe.Pointer(unsafe.SliceData(ents)), n, size)
		} else {
			view = entsInRange(ents, size)
		}
	}
	meta := uint32(s.epoch)<<lazyEpochShift | uint32(num&lazyFieldMask)<<lazyFieldShift // lazy.set, depth 0
	l.a, l.items = s.a, nil
	l.lz = lazy{src: s, off: uint32(off), n: uint32(n), meta: meta}
	vep := uint64(0)
	if view {
		vep = s.epoch + 1 // BytesList.vep
	}
	l.vep = vep
	return true, nil
}
