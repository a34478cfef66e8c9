package wireimpl

import (
	"encoding/binary"
	"sort"
)

// The sparse header form (docs/WIRE_FORMAT.md "Sparse header"). A message
// whose highest present field number is at most MaxFieldNumber uses the
// bitmap header, byte for byte as before; a message with a present field
// above it uses the sparse form instead:
//
//	h + 0          u32  SparseFlag | P    P = number of present fields
//	h + 4          u32  num[P]            their numbers, strictly ascending
//	h + 4 + 4P     8 B  entry[P]          one entry per field, in that order
//	h + 4 + 12P    ...  dynamic part      as in the bitmap form
//
// Everything after the fixed part (entries, list regions, nested headers,
// copied and zero-copy regions) is the same in both forms.

const (
	// MaxSparseFieldNumber is the largest field number of all (protobuf's
	// own limit, 2^29 - 1); numbers above MaxFieldNumber are written in
	// the sparse header form.
	MaxSparseFieldNumber = 1<<29 - 1
	// SparseFlag marks the first header word of the sparse form; its low
	// 31 bits are the field count P.
	SparseFlag = 1 << 31
)

// sparseWords is Core.words of a message sized in the sparse form.
const sparseWords = ^uint32(0)

// ---- Sizer

// endSparse is Sizer.End for a message whose highest field number is
// above MaxFieldNumber.
func (s *Sizer) endSparse(c *Core, mk SizerMark) {
	c.words = sparseWords
	c.count = uint32(s.count)
	s.header += 4 + (4+EntrySize)*s.count
	s.count, s.maxNum = mk.count, mk.maxNum
	s.depth--
}

// ---- Encoder (e.words == -1 while a sparse message is written)

// beginSparse is Encoder.Begin for a message sized in the sparse form.
func (e *Encoder) beginSparse(c *Core, mk EncoderMark) EncoderMark {
	n := int(c.count)
	start := e.hdr
	fixed := 4 + (4+EntrySize)*n
	if e.err != nil || fixed > e.hdrEnd-start {
		e.fail(ErrModified)
		e.words, e.ent, e.entEnd = 0, 0, 0
		return mk
	}
	binary.LittleEndian.PutUint32(e.dst[start:], SparseFlag|uint32(n))
	e.base, e.words = start, -1
	e.ent = start + 4 + 4*n
	e.entEnd = start + fixed
	e.hdr = start + fixed
	return mk
}

// sparseField records num as the next present field of a sparse message
// and returns the offset of its entry, or -1.
func (e *Encoder) sparseField(num int) int {
	if e.err != nil || num < 1 || num > MaxSparseFieldNumber || e.ent+EntrySize > e.entEnd {
		e.fail(ErrModified)
		return -1
	}
	n := (e.entEnd - e.base - 4) / (4 + EntrySize)
	k := (e.ent - (e.base + 4 + 4*n)) / EntrySize
	binary.LittleEndian.PutUint32(e.dst[e.base+4+4*k:], uint32(num))
	at := e.ent
	e.ent += EntrySize
	return at
}

// ---- Decoder (d.words == -1 for a sparse message)

// initSparse parses the fixed part of a sparse header hdr (at start of the
// input) with first word w: the numbers must be strictly ascending and in
// 1..MaxSparseFieldNumber, the last one above MaxFieldNumber (the form is
// canonical: a message the bitmap form can express must use it), and the
// fixed part must lie within hdr.
func (d *Decoder) initSparse(hdr []byte, start int, w uint32) error {
	n := int(w &^ (SparseFlag | TypedFlag))
	k := 0 // the typed form's kind bytes (unknown.go)
	if w&TypedFlag != 0 {
		k = kindBytes(n)
	}
	if n > (len(hdr)-4)/(4+EntrySize) || 4+(4+EntrySize)*n+k > len(hdr) {
		d.words, d.ents, d.fixedEnd, d.dyn = 0, 0, 0, 0
		return malformed(start, 0, "truncated sparse header")
	}
	prev := uint32(0)
	for i := range n {
		num := binary.LittleEndian.Uint32(hdr[4+4*i:])
		if num <= prev || num > MaxSparseFieldNumber {
			d.words, d.ents, d.fixedEnd, d.dyn = 0, 0, 0, 0
			return malformed(start+4+4*i, 0, "sparse header field numbers not strictly ascending in 1..MaxSparseFieldNumber")
		}
		prev = num
	}
	if prev <= MaxFieldNumber {
		d.words, d.ents, d.fixedEnd, d.dyn = 0, 0, 0, 0
		return malformed(start, 0, "sparse header without a field number above MaxFieldNumber")
	}
	if k > 0 && !validKinds(hdr[4+4*n:4+4*n+k], n) {
		d.words, d.ents, d.fixedEnd, d.dyn = 0, 0, 0, 0
		return malformed(start+4+4*n, 0, "invalid field kinds")
	}
	d.words = -1
	d.ents = start + 4 + 4*n + k
	d.fixedEnd = d.ents + EntrySize*n
	d.dyn = d.fixedEnd
	return nil
}

// sparseCount is the number of fields of a sparse message.
func (d *Decoder) sparseCount() int { return (d.fixedEnd - d.ents) / EntrySize }

// sparseIndex returns the index of the first listed number >= num.
func (d *Decoder) sparseIndex(num int) int {
	base := d.start + 4
	return sort.Search(d.sparseCount(), func(i int) bool {
		return int(binary.LittleEndian.Uint32(d.data[base+4*i:])) >= num
	})
}

// sparseEntry returns the offset of field num's entry, or -1.
func (d *Decoder) sparseEntry(num int) int {
	k := d.sparseIndex(num)
	if k == d.sparseCount() || int(binary.LittleEndian.Uint32(d.data[d.start+4+4*k:])) != num {
		return -1
	}
	return d.ents + EntrySize*k
}

// sparseWord synthesizes bitmap word i (fields 32i+1 .. 32i+32) of a
// sparse message, so that the fast path (Word, Ent) reads it unchanged:
// the popcount of the words before i is the index of the first field
// above 32i, as in the bitmap form.
func (d *Decoder) sparseWord(i int) uint32 {
	lo := 32*i + 1
	var w uint32
	n := d.sparseCount()
	for k := d.sparseIndex(lo); k < n; k++ {
		num := int(binary.LittleEndian.Uint32(d.data[d.start+4+4*k:]))
		if num >= lo+32 {
			break
		}
		w |= 1 << uint(num-lo)
	}
	return w
}

// ---- schema-less header codec

// readSparseHeader is ReadHeader for the sparse form.
func readSparseHeader(p []byte, w uint32, fields []HeaderField) ([]HeaderField, int, error) {
	var d Decoder
	if err := d.initSparse(p, 0, w); err != nil {
		return fields, 0, err
	}
	n := d.sparseCount()
	for k := range n {
		num := int(binary.LittleEndian.Uint32(p[4+4*k:]))
		fields = append(fields, HeaderField{Num: num, Entry: binary.LittleEndian.Uint64(p[d.ents+EntrySize*k:])})
	}
	return fields, d.fixedEnd, nil
}

// appendSparseHeader is AppendHeader for the sparse form (fields checked).
func appendSparseHeader(dst []byte, fields []HeaderField) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, SparseFlag|uint32(len(fields)))
	for _, f := range fields {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.Num))
	}
	for _, f := range fields {
		dst = binary.LittleEndian.AppendUint64(dst, f.Entry)
	}
	return dst
}
