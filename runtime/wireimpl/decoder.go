package wireimpl

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Decoder reads one message's fields. Generated WireDecode methods drive
// it, one call per field in ascending field-number order:
//
//	func (x *Foo) WireDecode(d *wire.Decoder) {
//		x.xId = d.Uint32(1)
//		d.Bytes(2, &x.xVal)
//		d.BytesList(3, &x.xVals)
//		wire.DecodeMessage(d, 4, &x.xChild)
//	}
//
// Scalars and bytes/string fields are read at once (each offset and size
// bounds-checked); lists and nested messages only have their region
// checked and are decoded when first accessed. Absent fields read as zero
// values. Unknown fields (from a newer schema) are skipped. The first
// error is kept and returned by the decode call; after it every read
// returns zero values.
//
// (startDecode assigns every field one by one: keep it in step when
// adding one.)
type Decoder struct {
	a     *Arena
	src   *source
	data  []byte
	start int // the message's header extent [start, end)
	end   int
	words int
	ents  int // offset of the first field entry
	dyn   int // regions of lists and nested messages must start here or later
	// fixedEnd is the end of a sparse message's field entries (sparse.go);
	// the bitmap form does not use it.
	fixedEnd int
	pw, pre  int // popcount of bitmap words [0, pw)
	depth    int
	w0       uint32 // bitmap word 0 (Word0), set with the fixed part
	err      error
}

// init parses the fixed part of the message at [start, end) of src.
func (d *Decoder) init(a *Arena, src *source, start, end, depth int) error {
	data := src.data
	d.a, d.src, d.data, d.err = a, src, data, nil
	d.start, d.end, d.depth = start, end, depth
	d.pw, d.pre = 0, 0
	hdr := data[start:end] // the caller checked [start, end) against data
	if len(hdr) >= 8 && binary.LittleEndian.Uint32(hdr) == 1 {
		// The common case: fields 1..32, one bitmap word.
		d.w0 = binary.LittleEndian.Uint32(hdr[4:8])
		n := bits.OnesCount32(d.w0)
		if EntrySize*n <= len(hdr)-8 {
			d.words, d.ents = 1, start+8
			d.dyn = start + 8 + EntrySize*n
			return nil
		}
	}
	err := d.initSlow(hdr, start)
	d.w0 = 0
	if err == nil {
		d.w0 = d.Word(0)
	}
	return err
}

// initSlow is init for a header of zero or several bitmap words, or a
// malformed one.
func (d *Decoder) initSlow(hdr []byte, start int) error {
	if len(hdr) < 4 {
		d.words, d.ents, d.dyn = 0, 0, 0
		return malformed(start, 0, "truncated message header")
	}
	w := binary.LittleEndian.Uint32(hdr)
	n := 0
	switch {
	case w == 0:
	case w&SparseFlag != 0:
		return d.initSparse(hdr, start, w) // sparse.go
	case w&TypedFlag != 0:
		return d.initTyped(hdr, start, w) // unknown.go
	case w > MaxBitmapWords:
		d.words, d.ents, d.dyn = 0, 0, 0
		return malformed(start, 0, "bitmap word count exceeds MaxBitmapWords")
	case 4+4*int(w) > len(hdr):
		d.words, d.ents, d.dyn = 0, 0, 0
		return malformed(start, 0, "truncated bitmap")
	default:
		for i := range int(w) {
			n += bits.OnesCount32(binary.LittleEndian.Uint32(hdr[4+4*i:]))
		}
	}
	ents := 4 + 4*int(w)
	if EntrySize*n > len(hdr)-ents {
		d.words, d.ents, d.dyn = 0, 0, 0
		return malformed(start, 0, "truncated field entries")
	}
	d.words = int(w)
	d.ents = start + ents
	d.dyn = d.ents + EntrySize*n
	return nil
}

// entry returns the offset of field num's entry, or -1 when it is absent.
func (d *Decoder) entry(num int) int {
	if d.err != nil {
		return -1
	}
	if d.words < 0 {
		return d.sparseEntry(num) // sparse.go
	}
	i := num - 1
	w := i >> 5
	if i < 0 || w >= d.words {
		return -1
	}
	word := binary.LittleEndian.Uint32(d.data[d.start+4+4*w:])
	bit := uint32(1) << uint(i&31)
	if word&bit == 0 {
		return -1
	}
	if w < d.pw {
		d.pw, d.pre = 0, 0
	}
	for d.pw < w {
		d.pre += bits.OnesCount32(binary.LittleEndian.Uint32(d.data[d.start+4+4*d.pw:]))
		d.pw++
	}
	k := d.pre + bits.OnesCount32(word&(bit-1))
	return d.ents + EntrySize*k
}

func (d *Decoder) u64(num int) uint64 {
	if at := d.entry(num); at >= 0 {
		return binary.LittleEndian.Uint64(d.data[at:])
	}
	return 0
}

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Has reports whether field num is present.
func (d *Decoder) Has(num int) bool { return d.entry(num) >= 0 }

// Int32 reads an int32, sint32, sfixed32 or enum field (the low 32 bits).
func (d *Decoder) Int32(num int) int32 { return int32(d.u64(num)) }

// Int64 reads an int64, sint64 or sfixed64 field.
func (d *Decoder) Int64(num int) int64 { return int64(d.u64(num)) }

// Uint32 reads a uint32 or fixed32 field (the low 32 bits).
func (d *Decoder) Uint32(num int) uint32 { return uint32(d.u64(num)) }

// Uint64 reads a uint64 or fixed64 field.
func (d *Decoder) Uint64(num int) uint64 { return d.u64(num) }

// Bool reads a bool field (any non-zero value is true).
func (d *Decoder) Bool(num int) bool { return d.u64(num) != 0 }

// Float reads a float field.
func (d *Decoder) Float(num int) float32 { return math.Float32frombits(uint32(d.u64(num))) }

// Double reads a double field.
func (d *Decoder) Double(num int) float64 { return math.Float64frombits(d.u64(num)) }

// Bytes reads a bytes field into b (aliasing the input) and reports
// whether it was present.
func (d *Decoder) Bytes(num int, b *Bytes) bool {
	at := d.entry(num)
	if at < 0 {
		*b = Bytes{}
		return false
	}
	n, off := binary.LittleEndian.Uint32(d.data[at:]), binary.LittleEndian.Uint32(d.data[at+4:])
	if !d.src.checkRef(off, n) {
		d.fail(malformed(at, num, "data range out of bounds"))
		*b = Bytes{}
		return false
	}
	*b = d.src.ref(off, n)
	return true
}

// String reads a string field into s (UTF-8 is checked when it is read)
// and reports whether it was present.
func (d *Decoder) String(num int, s *String) bool {
	*s = String{}
	return d.Bytes(num, &s.b)
}

// listRegion checks that a list's region [off, off+size) lies in the
// message's dynamic part after the previous region, and returns the entry's
// count and offset.
func (d *Decoder) listRegion(num, width int) (at, n, off int, ok bool) {
	at = d.entry(num)
	if at < 0 {
		return at, 0, 0, false
	}
	n = int(binary.LittleEndian.Uint32(d.data[at:]))
	off = int(binary.LittleEndian.Uint32(d.data[at+4:]))
	if n > MaxListLen {
		d.fail(malformed(at, num, "list count exceeds MaxListLen"))
		return at, 0, 0, false
	}
	if off < d.dyn || off > d.end || n*width > d.end-off {
		d.fail(malformed(at, num, "list region out of range or overlapping"))
		return at, 0, 0, false
	}
	d.dyn = off + n*width
	return at, n, off, true
}

// BytesList records a list of bytes for decoding on first access.
func (d *Decoder) BytesList(num int, l *BytesList) {
	*l = BytesList{a: d.a}
	if _, n, off, ok := d.listRegion(num, EntrySize); ok && n > 0 {
		l.lz.set(d.src, off, n, 0, d.depth, num)
	}
}

// StringList records a list of strings for decoding on first access.
func (d *Decoder) StringList(num int, l *StringList) {
	*l = StringList{a: d.a}
	if _, n, off, ok := d.listRegion(num, EntrySize); ok && n > 0 {
		l.lz.set(d.src, off, n, 0, d.depth, num)
	}
}

// DecodeScalars records a list of scalars for decoding on first access.
func DecodeScalars[T Scalar](d *Decoder, num int, l *ScalarList[T]) {
	*l = ScalarList[T]{a: d.a}
	if decodePacked(d, num, l) { // packed.go
		return
	}
	if _, n, off, ok := d.listRegion(num, scalarWidth[T]()); ok && n > 0 {
		l.lz.set(d.src, off, n, 0, d.depth, num)
	}
}

// DecodeMessages records a list of messages for decoding on first access.
// The element headers follow the entries, in order and without overlap;
// the last element's end closes the list's region.
func DecodeMessages[P MessagePtr](d *Decoder, num int, l *MessageList[P]) {
	*l = MessageList[P]{a: d.a}
	at, n, off, ok := d.listRegion(num, EntrySize)
	if !ok {
		return
	}
	if n > 0 {
		last := off + EntrySize*(n-1)
		size := int(binary.LittleEndian.Uint32(d.data[last:]))
		eoff := int(binary.LittleEndian.Uint32(d.data[last+4:]))
		if eoff < d.dyn || eoff > d.end || size > d.end-eoff {
			d.fail(malformed(at, num, "list elements out of range or overlapping"))
			return
		}
		d.dyn = eoff + size
		l.lz.set(d.src, off, n, d.dyn, d.depth, num)
	}
}

// DecodeMessage records a nested message for decoding on first access.
func DecodeMessage[P MessagePtr](d *Decoder, num int, n *Nested[P]) {
	*n = Nested[P]{}
	at := d.entry(num)
	if at < 0 {
		return
	}
	size := int(binary.LittleEndian.Uint32(d.data[at:]))
	off := int(binary.LittleEndian.Uint32(d.data[at+4:]))
	if off < d.dyn || off > d.end || size > d.end-off || size < 4 {
		d.fail(malformed(at, num, "nested message out of range or overlapping"))
		return
	}
	d.dyn = off + size
	n.lz.set(d.src, off, size, 0, d.depth, num)
}
