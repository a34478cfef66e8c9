package wireimpl

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// The generated direct decode (docs/CODEGEN.md, "Direct decode").
//
// A message whose fields all have numbers 1..32 and are scalars, bytes,
// strings, lists of bytes or strings, or nested messages of the same kind
// (no oneofs, maps, required fields) gets a generated WireDecodeAt method
// that parses its header with the cursors in local variables: it loads the
// first word and the bitmap word, checks the entries against the header's
// extent once (Source.Head1), and reads each present entry from the input
// directly (Source.U64, BytesRange with SetBytes or SetString, BytesEnt,
// StringEnt, BytesListEnt, StringListEnt,
// NestedEnt), decoding a nested message by a static call of its own
// WireDecodeAt on the same input record. No Decoder is set up and no per-
// message source record is made: one Source per input. A header of any
// other form (several bitmap words, sparse, typed, or malformed) is handed
// to the Decoder path (Source.DecodeSlow), which decodes or reports it
// exactly as before; every check of that path (entry and region bounds,
// region order, MaxDepth, the arena's Limit, use after Reset) is applied
// with the same errors.

// Source is one decoded input: the bytes that decoded fields alias and the
// registered window the arena holds for them. The generated direct decode
// receives it from Core.BeginDecode or Core.BeginDecodeBytes and passes it
// down to nested messages; it is valid until the arena's Reset.
type Source = source

// Len is the length of the input.
func (s *Source) Len() int { return len(s.data) }

// Arena returns the arena decoding the input.
func (s *Source) Arena() *Arena { return s.a }

// BindSource prepares c, the message about to be decoded from s at nesting
// depth depth (a header of the untyped form: no unknown fields to keep):
// it clears its explicit-presence bits and forgets the unknown fields kept
// from an earlier decode of c, if any (as DropUnknown). The generated
// WireDecodeAt calls it first (a leaf decoded inline by its parent, just
// made by its New function, has nothing to reset and skips it). The
// message is not linked to s: nothing of the direct decode reads Core.src
// (only kept unknown fields, which the Decoder path records together with
// it, do).
func (c *Core) BindSource(s *Source, depth int) {
	c.depth, c.has = int32(depth), 0
	if c.hasX != nil {
		clear(c.hasX)
	}
	if c.uk != nil {
		c.DropUnknown()
	}
}

// Head1 parses the fixed part of the message header at [off, end) of s
// (a range already checked against the input) when it has the one-word
// form (fields 1..32) and its entries fit in the extent: it returns bitmap word 0, the offset of the first entry
// and the offset where the dynamic part (list and nested regions) begins.
// ok is false for any other header, which the caller hands to DecodeSlow.
// The one-word case is small enough to be inlined into generated code.
func (s *Source) Head1(off, end int) (w0 uint32, ents, dyn int, ok bool) {
	// One 8-byte load: the word count (low half) and bitmap word 0. The
	// caller's range lies in the input (end <= len(s.data)), so the load's
	// own bounds check is the only one; the closed slice [off:off+8] is
	// cheaper than s.data[off:] (no length and pointer arithmetic for the
	// rest of the input).
	if end-off < 8 {
		return 0, 0, 0, false
	}
	h := binary.LittleEndian.Uint64(s.data[off : off+8])
	if uint32(h) != 1 {
		return 0, 0, 0, false
	}
	w0 = uint32(h >> 32)
	ents = off + 8
	// At most 32 entries: no overflow.
	dyn = ents + EntrySize*bits.OnesCount32(w0)
	return w0, ents, dyn, dyn <= end
}

// DecodeSlow decodes m from the message header at [off, end) of s at
// nesting depth depth with the Decoder (the per-field path): the fallback
// of WireDecodeAt for a header that Head1 does not parse.
func (s *Source) DecodeSlow(m Msg, off, end, depth int) error {
	return decodeAt(m, s.a, s, off, end, depth)
}

// EntAt returns the offset of the entry of the field with bit `bit` of
// bitmap word w0, whose entries start at ents.
func EntAt(ents int, w0, bit uint32) int {
	return ents + EntrySize*bits.OnesCount32(w0&(bit-1))
}

// U64 returns the inline scalar entry at `at`.
func (s *Source) U64(at int) uint64 {
	return binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
}

// BytesCopied reads the bytes entry at `at` into b when its value is a
// non-empty one that is read without a registered window (shorter than
// the threshold, or an input in plain memory) and lies in the input, and
// reports whether it did; the generated code then calls BytesEnt for the
// other cases. It is small enough to be inlined. (Code generated now uses
// BytesRange; BytesCopied, BytesZeroCopy and StringCopied stay for code
// generated before it.)
func (s *Source) BytesCopied(at int, b *Bytes) bool {
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	o, k := int(e>>32), int(uint32(e))
	// Offsets and sizes are below 2^32: the sum does not overflow.
	if k != 0 && o+k <= len(s.data) && k < s.cpBelow {
		b.data, b.buf = s.data[o:o+k:o+k], mem.Buf{}
		return true
	}
	return false
}

// BytesZeroCopy reads the bytes entry at `at` into b when its value is
// one that is read zero-copy (at least the threshold, in a registered
// input) and lies in the input's first (or only) segment, exactly as
// BytesEnt would: aliasing the input, with the registered window of the
// value. It reports false for every other entry, which the generated code
// hands to BytesEnt (after BytesCopied). It is small enough to be inlined.
func (s *Source) BytesZeroCopy(at int, b *Bytes) bool {
	e := binary.LittleEndian.Uint64(s.data[at:])
	o, k := int(e>>32), int(uint32(e))
	// Offsets and sizes are below 2^32: the sum does not overflow. zcFrom
	// is at least 1 (no empty value), and s.buf's window is s.data when it
	// is finite, so [o, o+k) lies in the window.
	if o+k <= len(s.data) && k >= s.zcFrom {
		b.data, b.buf = s.data[o:o+k:o+k], s.buf.SliceTrusted(o, k)
		return true
	}
	return false
}

// BytesRange reads the bytes or string entry at `at`: its value's range
// [o, o+k) and whether it is read zero-copy (zc: at least the record's
// zero-copy bound). ok reports a non-empty value in the input's first (or
// only) segment that is read copied (shorter than the threshold, or plain
// memory) or zero-copy, exactly as BytesEnt would read it; the generated
// code then calls SetBytes or SetString with the results, and BytesEnt or
// StringEnt otherwise (empty values, later segments, a record without the
// zero-copy case, errors). The entry is read once; BytesRange, SetBytes and
// SetString are small enough to be inlined.
func (s *Source) BytesRange(at int) (o, k int, zc, ok bool) {
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	o, k = int(e>>32), int(uint32(e))
	zc = k >= s.zcFrom
	// Offsets and sizes are below 2^32: the sum does not overflow.
	ok = o+k <= len(s.data) && k != 0 && (k < s.cpBelow || zc)
	return o, k, zc, ok
}

// SetBytes sets b to the value [o, o+k) of the input that BytesRange
// reported (ok), aliasing the input, with the registered window of the
// value when zc. zcFrom >= 1 bounds a zero-copy record whose buf's window
// is exactly s.data, so [o, o+k) lies in the window.
func (s *Source) SetBytes(b *Bytes, o, k int, zc bool) {
	p := s.data[o : o+k : o+k]
	if zc {
		b.data, b.buf = p, s.buf.SliceTrusted(o, k)
	} else {
		b.data, b.buf = p, mem.Buf{}
	}
}

// SetString is SetBytes for a string (UTF-8 is checked when it is read).
func (s *Source) SetString(v *String, o, k int, zc bool) {
	v.utf8s = utf8Unchecked
	s.SetBytes(&v.b, o, k, zc)
}

// BytesEnt reads the bytes entry at `at` into b, aliasing the input (and
// its registered window at or above the threshold). It reports false when
// the value's range lies outside the input; the caller returns
// BadData(at, field).
func (s *Source) BytesEnt(at int, b *Bytes) bool {
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	n, off := int(uint32(e)), int(e>>32)
	if n != 0 && off+n <= len(s.data) { // in the input's first (or only) segment
		p := s.data[off : off+n : off+n]
		if n >= s.thr && !s.buf.IsZero() {
			b.data, b.buf = p, s.buf.Slice(off, n)
		} else {
			b.data, b.buf = p, mem.Buf{}
		}
		return true
	}
	if !s.checkRef(uint32(off), uint32(n)) {
		*b = Bytes{}
		return false
	}
	*b = s.ref(uint32(off), uint32(n))
	return true
}

// StringCopied is BytesCopied for a string (UTF-8 is checked when it is
// read).
func (s *Source) StringCopied(at int, v *String) bool {
	v.utf8s = utf8Unchecked
	return s.BytesCopied(at, &v.b)
}

// StringEnt is BytesEnt for a string.
func (s *Source) StringEnt(at int, v *String) bool {
	v.utf8s = utf8Unchecked
	return s.BytesEnt(at, &v.b)
}

// BadData is the error of a bytes or string entry at `at` of field num
// whose value lies outside the input.
func BadData(at, num int) error { return malformed(at, num, "data range out of bounds") }

// listEnt checks the region of a list entry at `at` of field num against
// [dyn, end) and returns its count and offset.
func (s *Source) listEnt(at, num, dyn, end int) (n, off int, err error) {
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	n, off = int(uint32(e)), int(e>>32)
	if n > MaxListLen {
		return 0, 0, malformed(at, num, "list count exceeds MaxListLen")
	}
	if off < dyn || off > end || n*EntrySize > end-off {
		return 0, 0, malformed(at, num, "list region out of range or overlapping")
	}
	return n, off, nil
}

// BytesListEnt records the list of bytes whose entry is at `at` (absent
// when at < 0) of field num, in the message at depth depth whose dynamic
// part continues at dyn and ends at end. It returns the new dynamic cursor
// (after the list's entries). The list's region is checked here (the
// checks and errors of listEnt); its elements' ranges are checked in the
// same pass when the input has one segment, and the list is then a checked
// view that its getter's Load does not walk again. An element out of range
// is not an error of the decode: the list stays pending, and Load reports
// it on access, exactly as the Decoder path does.
func (s *Source) BytesListEnt(at, num, dyn, end, depth int, l *BytesList) (int, error) {
	if at < 0 {
		*l = BytesList{a: s.a}
		return dyn, nil
	}
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	n, off := int(uint32(e)), int(e>>32)
	// n <= MaxListLen first: n*EntrySize cannot overflow.
	if n > MaxListLen || off < dyn || off > end || n*EntrySize > end-off {
		_, _, err := s.listEnt(at, num, dyn, end)
		return dyn, err
	}
	next := off + n*EntrySize
	if n == 0 {
		*l = BytesList{a: s.a}
		return next, nil
	}
	view := false
	if s.segs == nil {
		size := uint64(len(s.data))
		if ents := s.data[off:next]; wordLoads(ents) {
			view = wordsInRange(unsafe.Pointer(unsafe.SliceData(ents)), n, size)
		} else {
			view = entsInRange(ents, size)
		}
	}
	meta := uint32(s.epoch)<<lazyEpochShift | uint32(num&lazyFieldMask)<<lazyFieldShift | uint32(depth) // lazy.set
	// Field by field (every field of BytesList): cheaper than a literal.
	l.a, l.items = s.a, nil
	l.lz = lazy{src: s, off: uint32(off), n: uint32(n), meta: meta}
	vep := uint64(0)
	if view {
		vep = s.epoch + 1 // BytesList.vep
	}
	l.vep = vep
	return next, nil
}

// Viewed reports whether l is a checked view of the current batch's input
// (BytesListEnt checked its elements): its Load would return nil without
// work. The generated getter tests it inline before calling Load.
func (l *BytesList) Viewed() bool {
	v := l.vep
	return v != 0 && v == l.a.epoch+1
}

// entsInRange reports whether every bytes entry of ents (whole entries)
// refers to a range within an input of size bytes (an empty value's offset
// is ignored, as in source.checkRef): the check of BytesList.Load.
func entsInRange(ents []byte, size uint64) bool {
	for len(ents) >= EntrySize {
		e := binary.LittleEndian.Uint64(ents)
		// The sum first: it is false for every valid entry (one branch).
		if e>>32+e&0xffffffff > size && uint32(e) != 0 {
			return false
		}
		ents = ents[EntrySize:]
	}
	return true
}

// StringListEnt is BytesListEnt for a list of strings.
func (s *Source) StringListEnt(at, num, dyn, end, depth int, l *StringList) (int, error) {
	*l = StringList{a: s.a}
	if at < 0 {
		return dyn, nil
	}
	n, off, err := s.listEnt(at, num, dyn, end)
	if err != nil {
		return dyn, err
	}
	if n > 0 {
		l.lz.set(s, off, n, 0, depth, num)
	}
	return off + n*EntrySize, nil
}

// NestedEnt checks the nested message whose entry is at `at`, in the
// message at depth depth whose dynamic part continues at dyn and ends at
// end: its region (in range, after dyn, at least a word), MaxDepth and the
// arena's Limit, the checks of Decoder.NestedAt. It returns the nested
// header's extent [off, off+size); the caller continues its dynamic part at
// off+size. When ok is false the caller returns NestedErr with the same
// arguments (and the field's number).
func (s *Source) NestedEnt(at, dyn, end, depth int) (off, size int, ok bool) {
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	size, off = int(uint32(e)), int(e>>32)
	a := s.a
	ok = off >= dyn && off <= end && size <= end-off && size >= 4 && depth < MaxDepth &&
		(a.Limit <= 0 || a.grown <= a.Limit)
	return off, size, ok
}

// NestedErr is the error of a nested message entry that NestedEnt refused.
func (s *Source) NestedErr(at, num, dyn, end, depth int) error {
	e := binary.LittleEndian.Uint64(s.data[at : at+EntrySize])
	size, off := int(uint32(e)), int(e>>32)
	switch {
	case off < dyn || off > end || size > end-off || size < 4:
		return malformed(at, num, "nested message out of range or overlapping")
	case depth >= MaxDepth:
		return &DecodeError{Off: off, Reason: "nesting", Err: ErrTooDeep}
	}
	return limitErr(off, num)
}
