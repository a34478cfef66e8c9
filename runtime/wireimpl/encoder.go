package wireimpl

import (
	"encoding/binary"
	"math"
)

// Encoder writes an object. Generated WireEncode methods drive it:
//
//	func (x *Foo) WireEncode(e *wire.Encoder) {
//		mk := e.Begin(&x.cf)
//		if x.xId != 0 {
//			e.Uint32(1, x.xId)
//		}
//		if x.xVal.Len() != 0 {
//			e.Bytes(2, &x.xVal)
//		}
//		e.BytesList(3, &x.xVals)
//		wire.EncodeMessage(e, 4, &x.xChild)
//		e.End(mk)
//	}
//
// Every write is bounds-checked against the sizes computed by Sizes; a
// mismatch (the object changed in between) stops the encoding with
// ErrModified instead of writing out of place.
type Encoder struct {
	dst     []byte
	hdr     int // next free byte of the header (dynamic regions)
	hdrEnd  int
	cp      int // next free byte of the copied region
	cpEnd   int
	zc      int // wire offset of the next zero-copy byte
	zcEnd   int
	entries int
	wantEnt int // the entry count of the sizes being serialized
	sink    EntrySink
	sga     *SGA // sink when it is an *SGA (entries appended without an interface call)
	flat    bool // copy zero-copy data into dst (Flatten)

	// current message
	base   int // offset of its bitmap-words word
	words  int
	ent    int // next entry
	entEnd int
	depth  int
	err    error
	typed  uint8 // 1 inside a message written typed (unknown_keep_write.go)
}

// reset prepares e for an object of sizes sz (field by field: cheaper
// than assigning a whole Encoder literal). StartSerialize has a copy of
// it inline: keep the two in step.
func (e *Encoder) reset(dst []byte, sz Sizes, sink EntrySink, flat bool) {
	e.dst, e.sink, e.err = dst, sink, nil
	e.sga, _ = sink.(*SGA)
	e.hdr, e.hdrEnd = 0, sz.Header
	e.cp, e.cpEnd = sz.Header, sz.Head()
	e.zc, e.zcEnd = sz.Head(), sz.Total()
	e.entries, e.wantEnt, e.flat = 0, sz.Entries, flat
	e.base, e.words, e.ent, e.entEnd, e.depth = 0, 0, 0, 0, 0
}

// EncoderMark saves the enclosing message's state across a nested message.
type EncoderMark struct{ base, words, ent, entEnd int }

// Begin starts a message at the header cursor: it writes the bitmap word
// count and a zeroed bitmap and reserves the entries, using the counts
// Sizes cached in c.
func (e *Encoder) Begin(c *Core) EncoderMark {
	mk := EncoderMark{e.base, e.words, e.ent, e.entEnd}
	e.depth++
	if c.words == sparseWords {
		return e.beginSparse(c, mk) // sparse.go
	}
	w, n := int(c.words), int(c.count)
	start := e.hdr
	fixed := 4 + 4*w + EntrySize*n
	if e.err != nil || fixed > e.hdrEnd-start {
		e.fail(ErrModified)
		e.words, e.ent, e.entEnd = 0, 0, 0
		return mk
	}
	hdr := e.dst[start : start+fixed]
	binary.LittleEndian.PutUint32(hdr, uint32(w))
	if w == 1 { // the common case: fields 1..32
		hdr[4], hdr[5], hdr[6], hdr[7] = 0, 0, 0, 0
	} else {
		clear(hdr[4 : 4+4*w])
	}
	e.base, e.words = start, w
	e.ent = start + 4 + 4*w
	e.entEnd = start + fixed
	e.hdr = start + fixed
	return mk
}

// End finishes the current message and restores the enclosing one.
func (e *Encoder) End(mk EncoderMark) {
	if e.ent != e.entEnd {
		e.fail(ErrModified)
	}
	e.base, e.words, e.ent, e.entEnd = mk.base, mk.words, mk.ent, mk.entEnd
	e.depth--
}

func (e *Encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// field marks num present and returns the offset of its entry, or -1.
func (e *Encoder) field(num int) int {
	if e.words < 0 {
		return e.sparseField(num) // sparse.go
	}
	i := num - 1
	w := i >> 5
	if e.err != nil || i < 0 || w >= e.words || e.ent+EntrySize > e.entEnd {
		e.fail(ErrModified)
		return -1
	}
	p := e.base + 4 + 4*w
	binary.LittleEndian.PutUint32(e.dst[p:], binary.LittleEndian.Uint32(e.dst[p:])|1<<uint(i&31))
	at := e.ent
	e.ent += EntrySize
	return at
}

func (e *Encoder) put64(num int, v uint64) {
	if at := e.field(num); at >= 0 {
		binary.LittleEndian.PutUint64(e.dst[at:], v)
	}
}

// put32x2 writes the 8-byte entry {a u32, b u32} at `at`.
func (e *Encoder) put32x2(at int, a, b int) {
	binary.LittleEndian.PutUint64(e.dst[at:], uint64(uint32(a))|uint64(uint32(b))<<32)
}

// Int32 writes an int32, sint32, sfixed32 or enum field (sign-extended to 64 bits).
func (e *Encoder) Int32(num int, v int32) { e.put64(num, uint64(int64(v))) }

// Int64 writes an int64, sint64 or sfixed64 field.
func (e *Encoder) Int64(num int, v int64) { e.put64(num, uint64(v)) }

// Uint32 writes a uint32 or fixed32 field.
func (e *Encoder) Uint32(num int, v uint32) { e.put64(num, uint64(v)) }

// Uint64 writes a uint64 or fixed64 field.
func (e *Encoder) Uint64(num int, v uint64) { e.put64(num, v) }

// Bool writes a bool field (1 or 0).
func (e *Encoder) Bool(num int, v bool) {
	var x uint64
	if v {
		x = 1
	}
	e.put64(num, x)
}

// Float writes a float field (its IEEE-754 bits in the low 32 bits).
func (e *Encoder) Float(num int, v float32) { e.put64(num, uint64(math.Float32bits(v))) }

// Double writes a double field (its IEEE-754 bits).
func (e *Encoder) Double(num int, v float64) { e.put64(num, math.Float64bits(v)) }

// Bytes writes a bytes field.
func (e *Encoder) Bytes(num int, b *Bytes) {
	if at := e.field(num); at >= 0 {
		e.data(at, b)
	}
}

// String writes a string field (the bytes as they are; UTF-8 is the
// reader's check).
func (e *Encoder) String(num int, s *String) {
	if at := e.field(num); at >= 0 {
		e.data(at, &s.b)
	}
}

// data writes the {size, offset} entry at `at` and places the value: in the
// copied region, or as the next zero-copy entry.
func (e *Encoder) data(at int, b *Bytes) {
	n := len(b.data)
	if b.buf.IsZero() {
		cp := e.cp
		if n > e.cpEnd-cp {
			e.fail(ErrModified)
			return
		}
		copy(e.dst[cp:cp+n], b.data)
		e.put32x2(at, n, cp)
		e.cp = cp + n
		return
	}
	zc := e.zc
	if n > e.zcEnd-zc {
		e.fail(ErrModified)
		return
	}
	e.put32x2(at, n, zc)
	e.zc = zc + n
	e.entries++
	if e.sga != nil {
		e.sga.Entries = append(e.sga.Entries, b.buf)
	} else if e.flat {
		copy(e.dst[zc:zc+n], b.data)
	} else if err := e.sink.ZeroCopyEntry(b.buf); err != nil {
		e.fail(err)
	}
}

// region reserves n bytes of header for a list and returns its offset, or -1.
func (e *Encoder) region(n int) int {
	if e.err != nil || n > e.hdrEnd-e.hdr {
		e.fail(ErrModified)
		return -1
	}
	at := e.hdr
	e.hdr += n
	return at
}

// BytesList writes a list of bytes if it is not empty.
func (e *Encoder) BytesList(num int, l *BytesList) {
	n := len(l.items)
	if n == 0 {
		return
	}
	at := e.field(num)
	r := e.region(EntrySize * n)
	if at < 0 || r < 0 {
		return
	}
	e.put32x2(at, n, r)
	for i := range l.items {
		e.data(r+EntrySize*i, &l.items[i])
	}
}

// StringList writes a list of strings if it is not empty.
func (e *Encoder) StringList(num int, l *StringList) {
	n := len(l.items)
	if n == 0 {
		return
	}
	at := e.field(num)
	r := e.region(EntrySize * n)
	if at < 0 || r < 0 {
		return
	}
	e.put32x2(at, n, r)
	for i := range l.items {
		e.data(r+EntrySize*i, &l.items[i].b)
	}
}

// EncodeScalars writes a list of scalars if it is not empty.
func EncodeScalars[T Scalar](e *Encoder, num int, l *ScalarList[T]) {
	n := len(l.items)
	if n == 0 {
		return
	}
	encodePacked(e, e.field(num), l) // packed.go
}

// EncodeMessages writes a list of messages if it is not empty: the element
// entries, then each element's header.
func EncodeMessages[P MessagePtr](e *Encoder, num int, l *MessageList[P]) {
	n := len(l.items)
	if n == 0 {
		return
	}
	at := e.field(num)
	r := e.region(EntrySize * n)
	if at < 0 || r < 0 {
		return
	}
	e.put32x2(at, n, r)
	for i, m := range l.items {
		start := e.hdr
		if e.depth > MaxDepth {
			e.fail(ErrTooDeep)
			return
		}
		m.WireEncode(e)
		if e.err != nil {
			return
		}
		e.put32x2(r+EntrySize*i, e.hdr-start, start)
	}
}

// EncodeMessage writes a nested message field if it is set.
func EncodeMessage[P MessagePtr](e *Encoder, num int, n *Nested[P]) {
	var zero P
	if n.p == zero {
		return
	}
	at := e.field(num)
	if at < 0 {
		return
	}
	if e.depth > MaxDepth {
		e.fail(ErrTooDeep)
		return
	}
	start := e.hdr
	n.p.WireEncode(e)
	if e.err == nil {
		e.put32x2(at, e.hdr-start, start)
	}
}
