package wireimpl

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// HeaderField is one present field of a message header, schema-less: its
// number and its raw 8-byte entry (an inline scalar, or {size or count,
// offset} for bytes, strings, lists and nested messages).
type HeaderField struct {
	Num   int
	Entry uint64
}

// Lo is the entry's low u32 (size or count; the low half of a scalar).
func (f HeaderField) Lo() uint32 { return uint32(f.Entry) }

// Hi is the entry's high u32 (offset; the high half of a scalar).
func (f HeaderField) Hi() uint32 { return uint32(f.Entry >> 32) }

// ReadHeader parses the fixed part of the message whose header starts at
// p[0] (bitmap word count, bitmap, entries), appends its present fields in
// field-number order to fields, and returns them with the fixed part's
// size. It is the schema-less header codec (for tools and tests); it
// checks only that the fixed part lies within p.
func ReadHeader(p []byte, fields []HeaderField) ([]HeaderField, int, error) {
	if len(p) < 4 {
		return fields, 0, malformed(0, 0, "truncated message header")
	}
	w := binary.LittleEndian.Uint32(p)
	if w&SparseFlag != 0 {
		return readSparseHeader(p, w, fields) // sparse.go
	}
	if w > MaxBitmapWords {
		return fields, 0, malformed(0, 0, "bitmap word count exceeds MaxBitmapWords")
	}
	nw := int(w)
	if 4+4*nw > len(p) {
		return fields, 0, malformed(0, 0, "truncated bitmap")
	}
	n := 0
	for i := range nw {
		n += bits.OnesCount32(binary.LittleEndian.Uint32(p[4+4*i:]))
	}
	size := 4 + 4*nw + EntrySize*n
	if size > len(p) {
		return fields, 0, malformed(0, 0, "truncated field entries")
	}
	at := 4 + 4*nw
	for i := range nw {
		word := binary.LittleEndian.Uint32(p[4+4*i:])
		for word != 0 {
			b := bits.TrailingZeros32(word)
			word &= word - 1
			fields = append(fields, HeaderField{Num: 32*i + b + 1, Entry: binary.LittleEndian.Uint64(p[at:])})
			at += EntrySize
		}
	}
	return fields, size, nil
}

// AppendHeader appends the fixed part of a message with the given present
// fields (strictly ascending numbers in 1..MaxSparseFieldNumber) to dst,
// as Serialize writes it: with the smallest bitmap that holds them, or in
// the sparse form when a number exceeds MaxFieldNumber.
func AppendHeader(dst []byte, fields []HeaderField) ([]byte, error) {
	last := 0
	for _, f := range fields {
		if f.Num <= last || f.Num > MaxSparseFieldNumber {
			return dst, fmt.Errorf("wire: AppendHeader: field number %d after %d: %w", f.Num, last, ErrTooLarge)
		}
		last = f.Num
	}
	if last > MaxFieldNumber {
		return appendSparseHeader(dst, fields), nil // sparse.go
	}
	w := bitmapWords(last)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(w))
	for range w {
		dst = binary.LittleEndian.AppendUint32(dst, 0)
	}
	for _, f := range fields {
		i := f.Num - 1
		p := dst[start+4+4*(i>>5):]
		binary.LittleEndian.PutUint32(p, binary.LittleEndian.Uint32(p)|1<<uint(i&31))
		dst = binary.LittleEndian.AppendUint64(dst, f.Entry)
	}
	return dst, nil
}
