package wireimpl

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The typed header form (docs/WIRE_FORMAT.md "Typed header form"): a
// message header whose first word carries TypedFlag has, between its
// bitmap (or sparse number list) and its entries, one kind byte per
// present field, padded with zero bytes to a multiple of 4:
//
//	h + 0              u32  TypedFlag | W          (or SparseFlag | TypedFlag | P)
//	h + 4              u32  bitmap[W]              (or num[P])
//	h + 4 + 4W         u8   kind[P], 0-padded to K = (P+3) &^ 3 bytes
//	h + 4 + 4W + K     8 B  entry[P]
//	...                     dynamic part, as in the other forms
//
// The kinds make a message self-describing: which entries are inline
// scalars and which are {size or count, offset} pairs, and how large each
// list element is. A reader that knows a field ignores its kind (its
// schema decides); a reader that does not can check and move the field
// into another object (CopyTyped), which the untyped forms do not allow.

// TypedFlag marks the first header word of the typed form (bit 30; in the
// bitmap form W <= MaxBitmapWords keeps it clear, in the sparse form it is
// combined with SparseFlag).
const TypedFlag = 1 << 30

// Kind is the kind byte of a field in the typed header form.
type Kind uint8

// The field kinds of the typed header form.
const (
	KindScalar      Kind = 1 // inline 8-byte scalar
	KindBytes       Kind = 2 // bytes or string: {size, offset}
	KindList1       Kind = 3 // list of bools: {count, offset}, count bytes
	KindList4       Kind = 4 // list of 32-bit scalars (may be out of line: PackedFlag)
	KindList8       Kind = 5 // list of 64-bit scalars (may be out of line: PackedFlag)
	KindBytesList   Kind = 6 // list of bytes or strings: count {size, offset} entries
	KindMessage     Kind = 7 // nested message: {size, offset} of its (typed) header
	KindMessageList Kind = 8 // list of messages: count {size, offset} entries, then the headers
	maxKind              = KindMessageList
)

// TypedField is one present field of a typed message header: its number,
// kind and raw 8-byte entry.
type TypedField struct {
	Num   int
	Kind  Kind
	Entry uint64
}

// kindBytes is K, the padded size of the kind bytes of p fields.
func kindBytes(p int) int { return (p + 3) &^ 3 }

// ReadTypedHeader parses the fixed part of the typed message header at
// p[0] (either variant), appends its present fields in field-number order
// to fields, and returns them with the fixed part's size. It checks that
// the header is in the typed form, that the fixed part lies within p,
// that every kind is valid and the padding zero, and the sparse variant's
// numbers as the sparse form's reader does.
func ReadTypedHeader(p []byte, fields []TypedField) ([]TypedField, int, error) {
	if len(p) < 4 {
		return fields, 0, malformed(0, 0, "truncated message header")
	}
	w := binary.LittleEndian.Uint32(p)
	if w&TypedFlag == 0 {
		return fields, 0, malformed(0, 0, "header is not in the typed form")
	}
	var n, at int
	if w&SparseFlag != 0 {
		n = int(w &^ (SparseFlag | TypedFlag))
		if n > (len(p)-4)/4 {
			return fields, 0, malformed(0, 0, "truncated sparse header")
		}
		prev := uint32(0)
		for i := range n {
			num := binary.LittleEndian.Uint32(p[4+4*i:])
			if num <= prev || num > MaxSparseFieldNumber {
				return fields, 0, malformed(4+4*i, 0, "sparse header field numbers not strictly ascending in 1..MaxSparseFieldNumber")
			}
			prev = num
		}
		if prev <= MaxFieldNumber {
			return fields, 0, malformed(0, 0, "sparse header without a field number above MaxFieldNumber")
		}
		at = 4 + 4*n
	} else {
		nw := int(w &^ TypedFlag)
		if nw > MaxBitmapWords {
			return fields, 0, malformed(0, 0, "bitmap word count exceeds MaxBitmapWords")
		}
		if 4+4*nw > len(p) {
			return fields, 0, malformed(0, 0, "truncated bitmap")
		}
		for i := range nw {
			n += bits.OnesCount32(binary.LittleEndian.Uint32(p[4+4*i:]))
		}
		at = 4 + 4*nw
	}
	k := kindBytes(n)
	if k > len(p)-at || EntrySize*n > len(p)-at-k {
		return fields, 0, malformed(0, 0, "truncated typed header")
	}
	kinds := p[at : at+k]
	if !validKinds(kinds, n) {
		return fields, 0, malformed(at, 0, "invalid field kinds (0, above KindMessageList, or non-zero padding)")
	}
	ents := at + k
	i := 0
	add := func(num int) {
		fields = append(fields, TypedField{Num: num, Kind: Kind(kinds[i]), Entry: binary.LittleEndian.Uint64(p[ents+EntrySize*i:])})
		i++
	}
	if w&SparseFlag != 0 {
		for j := range n {
			add(int(binary.LittleEndian.Uint32(p[4+4*j:])))
		}
	} else {
		for j := range (at - 4) / 4 {
			word := binary.LittleEndian.Uint32(p[4+4*j:])
			for word != 0 {
				b := bits.TrailingZeros32(word)
				word &= word - 1
				add(32*j + b + 1)
			}
		}
	}
	return fields, ents + EntrySize*n, nil
}

// AppendTypedHeader appends the fixed part of a typed message header with
// the given present fields (strictly ascending numbers in
// 1..MaxSparseFieldNumber, valid kinds) to dst: the bitmap variant with
// the smallest bitmap that holds them, or the sparse variant when a
// number exceeds MaxFieldNumber.
func AppendTypedHeader(dst []byte, fields []TypedField) ([]byte, error) {
	last := 0
	for _, f := range fields {
		if f.Num <= last || f.Num > MaxSparseFieldNumber {
			return dst, fmt.Errorf("wire: AppendTypedHeader: field number %d after %d: %w", f.Num, last, ErrTooLarge)
		}
		if f.Kind == 0 || f.Kind > maxKind {
			return dst, fmt.Errorf("wire: AppendTypedHeader: field %d: invalid kind %d", f.Num, f.Kind)
		}
		last = f.Num
	}
	if last > MaxFieldNumber {
		dst = binary.LittleEndian.AppendUint32(dst, SparseFlag|TypedFlag|uint32(len(fields)))
		for _, f := range fields {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(f.Num))
		}
	} else {
		w := bitmapWords(last)
		start := len(dst)
		dst = binary.LittleEndian.AppendUint32(dst, TypedFlag|uint32(w))
		for range w {
			dst = binary.LittleEndian.AppendUint32(dst, 0)
		}
		for _, f := range fields {
			i := f.Num - 1
			q := dst[start+4+4*(i>>5):]
			binary.LittleEndian.PutUint32(q, binary.LittleEndian.Uint32(q)|1<<uint(i&31))
		}
	}
	for _, f := range fields {
		dst = append(dst, byte(f.Kind))
	}
	for range kindBytes(len(fields)) - len(fields) {
		dst = append(dst, 0)
	}
	for _, f := range fields {
		dst = binary.LittleEndian.AppendUint64(dst, f.Entry)
	}
	return dst, nil
}

// validKinds reports whether kinds (padded, for n fields) holds n valid
// kinds followed by zero padding.
func validKinds(kinds []byte, n int) bool {
	for i, c := range kinds {
		if i < n && (c == 0 || Kind(c) > maxKind) || i >= n && c != 0 {
			return false
		}
	}
	return true
}

// initTyped is Decoder.init for the bitmap variant of the typed form
// (first word TypedFlag | W): the kinds are checked and skipped; a reader
// that knows a field trusts its schema, not the kind.
func (d *Decoder) initTyped(hdr []byte, start int, w uint32) error {
	nw := int(w &^ TypedFlag)
	if nw > MaxBitmapWords || 4+4*nw > len(hdr) {
		d.words, d.ents, d.dyn = 0, 0, 0
		return malformed(start, 0, "typed header: bitmap word count too large or truncated bitmap")
	}
	n := 0
	for i := range nw {
		n += bits.OnesCount32(binary.LittleEndian.Uint32(hdr[4+4*i:]))
	}
	at := 4 + 4*nw
	k := kindBytes(n)
	if k > len(hdr)-at || EntrySize*n > len(hdr)-at-k || !validKinds(hdr[at:at+k], n) {
		d.words, d.ents, d.dyn = 0, 0, 0
		return malformed(start, 0, "typed header: truncated or invalid field kinds")
	}
	d.words = nw
	d.ents = start + at + k
	d.dyn = d.ents + EntrySize*n
	return nil
}
