package wireimpl

import (
	"bytes"
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// lazy records a list or nested message of a decoded message that has not
// been decoded yet: its region (already bounds-checked against the parent)
// and the input it lives in. A failed load leaves it pending, so the next
// access reports the error again. A load after the Reset of the arena
// that decoded the input fails with ErrArenaReset (see stale).
type lazy struct {
	src *source // nil when there is nothing to load
	off uint32  // list: entries / values; nested: header start
	n   uint32  // list: element count; nested: header size
	end uint32  // message lists: end of the last element's header
	// meta packs the parent message's depth (at most MaxDepth: bits
	// 0..7), the field's number (at most MaxFieldNumber: bits 8..24), for
	// the errors of a later load, and the low 7 bits of the arena's epoch
	// at the decode (bits 25..31, see stale): one word, so that the
	// record, embedded in every list and nested field, stays 24 bytes.
	meta uint32
}

const (
	lazyFieldShift = 8
	lazyFieldMask  = 1<<17 - 1
	lazyEpochShift = 25 // the remaining 7 bits
	lazyEpochMask  = 1<<(32-lazyEpochShift) - 1
)

func (z *lazy) set(src *source, off, n, end, depth, field int) {
	meta := uint32(src.epoch)<<lazyEpochShift | uint32(field&lazyFieldMask)<<lazyFieldShift | uint32(depth)
	*z = lazy{src: src, off: uint32(off), n: uint32(n), end: uint32(end), meta: meta}
}

// stale reports whether the arena that decoded z's input (z.src != nil)
// was Reset since: the input was released then, and loading z would read
// memory that may have been handed out again. The source records the
// epoch of its decode, but the arena reuses the source itself for its
// next decode (except in the checked build); z's own low bits of the
// epoch tell that reuse apart too, unless a multiple of 128 Resets passed.
func (z *lazy) stale() bool {
	src := z.src
	e := src.a.epoch
	return src.epoch != e || z.meta>>lazyEpochShift != uint32(e)&lazyEpochMask
}

// depth is the nesting depth of the message the field belongs to.
func (z *lazy) depth() int { return int(z.meta & 0xff) }

// field is the field's number, for DecodeError.Field.
func (z *lazy) field() int { return int(z.meta >> lazyFieldShift & lazyFieldMask) }

// window returns the zero-copy window for data [off, off+n) of src, or the
// zero Buf when the field stays copied.
func (src *source) window(off, n int) mem.Buf {
	if n == 0 || src.buf.IsZero() || n < src.thr {
		return mem.Buf{}
	}
	return src.buf.Slice(off, n)
}

// checkRef bounds-checks data [off, off+n) of src (the offset of an empty
// value is ignored).
func (src *source) checkRef(off, n uint32) bool {
	return n == 0 || uint64(off)+uint64(n) <= uint64(len(src.data)) || src.segHas(off, n)
}

// ref returns the already checked data [off, off+n) of src as a Bytes.
func (src *source) ref(off, n uint32) Bytes {
	o, k := int(off), int(n)
	if k == 0 {
		return Bytes{}
	}
	if o+k > len(src.data) {
		return src.segRef(off, n) // a segmented input (segmented.go)
	}
	return Bytes{data: src.data[o : o+k : o+k], buf: src.window(o, k)}
}

func overLimit(a *Arena) bool { return a.Limit > 0 && a.grown > a.Limit }

func limitErr(off, field int) error {
	return &DecodeError{Off: off, Field: field, Reason: "materializing", Err: ErrArenaLimit}
}

// grow returns a slice of length len(s)+1 with s's contents, from t's slab.
func grow[T any](t *Type[T], a *Arena, s []T) []T {
	if len(s) < cap(s) {
		return s[:len(s)+1]
	}
	n := make2(cap(s))
	ns := t.newSliceRaw(a, n)
	copy(ns, s)
	return ns[:len(s)+1]
}

func make2(c int) int { return max(4, 2*c) }

// truncate returns s[:n], panicking when n > len(s): list backing arrays
// are not zeroed beyond their length (newSliceRaw), so a Truncate must
// never lengthen a list over stale elements.
func truncate[T any](s []T, n int) []T {
	if uint(n) > uint(len(s)) {
		panic("wire: Truncate beyond the list's length")
	}
	return s[:n]
}

// BytesList is a repeated bytes field. Get it from the generated GetX
// (which loads a decoded list) or InitX accessor. Elements follow the
// hybrid rule of Bytes.Set; element slices alias like Bytes.Get and are
// valid until the arena's Reset. A list is present on the wire when it is
// not empty.
//
// A decoded list is a view of the input: Load checks every element's
// range once, and At reads the entries in place; it is copied into arena
// memory only when modified or when Field is used.
type BytesList struct {
	a     *Arena
	items []Bytes
	lz    lazy
	// vep is non-zero when the list is a view: lz describes checked
	// entries that At reads in place. It is then 1 + the epoch of lz's
	// arena, which a is, when the entries were checked, so that Load's
	// inlined case tells a live view with one comparison (see Load).
	vep uint64
	// The kept totals of items, for the size passes (SizeFlat,
	// SizeDirect), which then do not walk the list: tot.cp is the sum of
	// the copied values' lengths, tot.zc that of the zero-copy values and
	// tot.nz their count. They hold only when tok is set: Init sets it (an empty
	// list), Append, AppendBuf and Truncate keep the totals, and every
	// other writer of items clears it (Field, which hands out an element
	// that may be Set at any later time, and materialize). The zero value
	// (the decoders' literal) has tok clear, so a decoded list is walked.
	tot listTotals
	tok bool
}

// listTotals are a BytesList's kept totals (see BytesList.tot), one field
// so that Truncate(0) resets them in one write.
type listTotals struct {
	cp, zc int
	nz     uint32
}

// Init makes the list empty with room for n elements (no further arena
// allocation until it grows beyond n).
func (l *BytesList) Init(a *Arena, n int) {
	var items []Bytes
	if p := a.take(bytesType.id, n, unsafe.Sizeof(Bytes{})); p != nil { // newSliceRaw, inlined
		items = (*[maxSlabLen]Bytes)(p)[:0:n] // n > 0 values of the chunk
	} else {
		items = bytesType.newSliceRawSlow(a, max(n, 0))[:0]
	}
	*l = BytesList{a: a, items: items, tok: true} // one write: lz, vep and the totals zeroed with it
}

// InlineItems is the number of elements a generated one-level message
// holds for each of its bytes lists in itself (BytesList.InitIn).
const InlineItems = 4

// InitIn is Init with inl, storage in the list's own message, for the
// elements of a list of at most InlineItems elements: such a list takes no
// arena memory (a longer one, or one that grows beyond InlineItems, is in
// the arena's slab, as with Init). Generated one-level messages call it
// with their own array for the list: the list's elements then lie in the
// message, and neither the list nor the message may be copied by value.
func (l *BytesList) InitIn(a *Arena, n int, inl *[InlineItems]Bytes) {
	if n > InlineItems {
		l.Init(a, n)
		return
	}
	*l = BytesList{a: a, items: inl[:0:InlineItems], tok: true} // one write: lz, vep and the totals zeroed with it
}

// Load binds the list to a and, for a decoded list, checks every element's
// range (once). Generated getters call it. A decoded list fails with
// ErrArenaReset after the Reset of the arena that decoded it.
//
// A view checked in the current epoch of the arena that decoded it (l.a
// for a view; BytesListEnt checks the entries of a one-segment input at
// the decode) returns at once, as that arena was not Reset since: one
// comparison instead of the stale check. (Load stays a call: inlined, it
// would make the generated getter too large to inline, which costs more.)
func (l *BytesList) Load(a *Arena) error {
	if v := l.vep; v != 0 && v == l.a.epoch+1 {
		return nil
	}
	if l.a == nil {
		l.a = a
	}
	z := &l.lz
	if z.src == nil {
		return nil
	}
	if z.stale() {
		return ErrArenaReset
	}
	if l.vep != 0 {
		return nil
	}
	if z.src.segs != nil {
		return l.loadSegmented() // elements may lie in later segments (segmented.go)
	}
	d := z.src.data
	size := uint64(len(d))
	start := int(z.off)
	ents := d[start : start+EntrySize*int(z.n)] // checked by the decoder
	for i := 0; i+EntrySize <= len(ents); i += EntrySize {
		e := binary.LittleEndian.Uint64(ents[i:])
		if n := e & 0xffffffff; n != 0 && e>>32+n > size { // see source.checkRef (and entsInRange)
			return malformed(start+i, z.field(), "list element out of range")
		}
	}
	l.a, l.vep = z.src.a, z.src.epoch+1 // z is not stale: the arena's epoch
	return nil
}

// materialize copies a checked view into Bytes values: into the list's
// own storage when it has room for them (the decoders leave a view none),
// else into new arena memory. Each value aliases the input as Load's
// checked entries say, zero-copy on the input's window at or above the
// threshold of its decode (source.ref's values); the kept totals are
// summed on the way, so the size passes do not walk the list again.
func (l *BytesList) materialize() {
	if l.vep == 0 {
		return
	}
	z := &l.lz
	n := int(z.n)
	var items []Bytes
	if n <= cap(l.items) {
		items = l.items[:n]
	} else {
		items = bytesType.NewSlice(l.a, n)
	}
	s := z.src
	d := s.data
	if s.segs != nil { // a segmented input (loadSegmented): values may lie in later segments
		var tot listTotals
		for i := range items {
			at := int(z.off) + EntrySize*i
			b := &items[i]
			*b = s.ref(binary.LittleEndian.Uint32(d[at+4:]), binary.LittleEndian.Uint32(d[at:]))
			if b.buf.IsZero() {
				tot.cp += len(b.data)
			} else {
				tot.zc += len(b.data)
				tot.nz++
			}
		}
		l.items, l.lz, l.vep = items, lazy{}, 0
		l.tot, l.tok = tot, true
		return
	}
	// source.ref's values, as borrowFrom's loop makes them: the entries
	// were checked (vep), so are the values' ranges, in data.
	zcFrom := max(s.thr, 1) // source.window's rule
	if s.buf.IsZero() {
		zcFrom = math.MaxInt
	}
	var tot listTotals
	ents := d[int(z.off) : int(z.off)+EntrySize*n] // the loop's one bounds check
	for i := range items {
		e := entryWord(ents, i)
		k, off := int(uint32(e)), int(e>>32)
		b := &items[i]
		if k == 0 {
			b.data, b.buf = nil, mem.Buf{}
			continue
		}
		p := d[off : off+k : off+k] // checked by the decoder or Load: never panics
		if k < zcFrom {
			b.data, b.buf = p, mem.Buf{}
			tot.cp += k
		} else {
			b.data, b.buf = p, s.buf.SliceTrusted(off, k)
			tot.zc += k
			tot.nz++
		}
	}
	l.items = items
	l.lz = lazy{}
	l.vep = 0
	l.tot, l.tok = tot, true
}

// Len is the number of elements.
func (l *BytesList) Len() int {
	if l.lz.src != nil {
		return int(l.lz.n)
	}
	return len(l.items)
}

// At returns element i (aliasing; see Bytes.Get). It panics when i is out
// of range, like a slice index, or when the list was not loaded.
func (l *BytesList) At(i int) []byte {
	if l.vep != 0 {
		if uint(i) >= uint(l.lz.n) {
			panic("wire: BytesList.At index out of range")
		}
		d := l.lz.src.data
		e := binary.LittleEndian.Uint64(d[int(l.lz.off)+EntrySize*i:])
		n, off := int(uint32(e)), int(e>>32)
		if n == 0 {
			return nil
		}
		return d[off : off+n : off+n]
	}
	return l.items[i].data
}

// Field returns element i as a *Bytes (to inspect IsZeroCopy, Buf, or to
// Set it). The list's kept totals no longer hold (the element may be Set
// at any later time): its size passes walk it from then on.
func (l *BytesList) Field(i int) *Bytes {
	if l.vep != 0 {
		l.materialize()
	}
	l.tok = false
	return &l.items[i]
}

// IsZeroCopy reports whether element i is held zero-copy (Field(i)'s
// IsZeroCopy, without giving the element out). It panics when i is out
// of range, like a slice index.
func (l *BytesList) IsZeroCopy(i int) bool {
	if l.vep != 0 {
		l.materialize()
	}
	return l.items[i].IsZeroCopy()
}

// count adds element b to the kept totals.
func (l *BytesList) count(b *Bytes) {
	if b.buf.IsZero() {
		l.tot.cp += len(b.data)
	} else {
		l.tot.zc += len(b.data)
		l.tot.nz++
	}
}

// Append adds p (hybrid rule of Bytes.Set).
//
// Its first cases are Bytes.Set's, within the list's capacity: a non-empty
// value inside the input the arena decoded last (the echo server's) aliases
// that input, zero-copy on its reference at or above the threshold; with
// no decoded input, a value at or above the threshold in registered memory
// is zero-copy (mem.Recover) and a smaller one is copied into the arena's
// current chunk. Every other value takes appendSlow.
func (l *BytesList) Append(p []byte) {
	a := l.a
	if k := len(l.items); k < cap(l.items) && l.vep == 0 {
		n := len(p)
		if src := a.lastSrc; src != nil {
			off := uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(unsafe.Pointer(unsafe.SliceData(src.data)))
			if n != 0 && off < uintptr(len(src.data)) && uintptr(n) <= uintptr(len(src.data))-off {
				l.items = l.items[:k+1]
				b := &l.items[k]
				if n >= a.Threshold { // one write-barrier test per branch
					b.data, b.buf = p[:n:n], src.buf.SliceTrusted(int(off), n)
					l.tot.zc += n
					l.tot.nz++
				} else {
					b.data, b.buf = p[:n:n], mem.Buf{}
					l.tot.cp += n
				}
				return
			}
		} else if n >= a.Threshold {
			if n != 0 {
				if buf, ok := mem.Recover(p); ok {
					a.refs = append(a.refs, buf)
					l.items = l.items[:k+1]
					b := &l.items[k]
					b.data, b.buf = p[:n:n], buf
					l.tot.zc += n
					l.tot.nz++
					return
				}
			}
		} else if d, ok := a.copyInChunk(p); ok {
			l.items = l.items[:k+1]
			b := &l.items[k]
			b.data, b.buf = d, mem.Buf{}
			l.tot.cp += n
			return
		}
	}
	l.appendSlow(p)
}

// appendSlow is Append outside its first cases.
func (l *BytesList) appendSlow(p []byte) {
	b := l.next()
	setAppended(b, l.a, p)
	l.count(b)
}

// next lengthens the list by one element (a decoded list is materialized
// first) and returns it. The element's old contents are undefined: the
// caller sets it, then adds it to the kept totals (count).
func (l *BytesList) next() *Bytes {
	if l.vep != 0 {
		l.materialize()
	}
	l.items = grow(bytesType, l.a, l.items)
	return &l.items[len(l.items)-1]
}

// setAppended sets b, a new element of a list of a, to p: Bytes.Set's
// common cases inline, then Set.
func setAppended(b *Bytes, a *Arena, p []byte) {
	// Bytes.Set's common cases inline: a value of the input the arena
	// decoded last (the echo-server case) aliases it, zero-copy at or above
	// the threshold; with no such input, a value below the threshold is
	// copied into the arena's current chunk (no mem.Recover) and a value
	// at or above it in registered memory is zero-copy (mem.Recover, no
	// call to Set). Every other value goes to Set.
	src := a.lastSrc
	if src == nil {
		if n := len(p); n < a.Threshold {
			if d, ok := a.copyInChunk(p); ok {
				*b = Bytes{data: d}
				return
			}
		} else if n != 0 {
			if buf, ok := mem.Recover(p); ok {
				a.refs = append(a.refs, buf)
				*b = Bytes{data: p[:n:n], buf: buf}
				return
			}
			a.noteSilentCopy(n) // meant zero-copy, not in registered memory
			*b = Bytes{data: a.Copy(p)}
			return
		}
	} else {
		if off, ok := within(p, src.data); ok {
			if len(p) >= a.Threshold {
				*b = Bytes{data: p[:len(p):len(p)], buf: src.buf.Slice(off, len(p))}
			} else {
				*b = Bytes{data: p[:len(p):len(p)]}
			}
			return
		}
	}
	b.Set(a, p)
}

// AppendString adds s (hybrid rule of Bytes.Set).
func (l *BytesList) AppendString(s string) { l.Append(bytesOf(s)) }

// AppendBuf adds buf's window (rule of Bytes.SetBuf; the caller keeps its reference).
func (l *BytesList) AppendBuf(buf mem.Buf) {
	b := l.next()
	b.SetBuf(l.a, buf)
	l.count(b)
}

// Truncate shortens the list to n elements. It panics when n > Len(), like
// a slice expression (the reserved capacity is never exposed).
//
// Truncate(0) of a built list keeps its storage and costs no loop: a
// kept message's list is reused by Truncate(0) and Append (docs/CODEGEN.md,
// "Reusing a built message").
func (l *BytesList) Truncate(n int) {
	if uint64(n)|l.vep == 0 {
		// Small enough to be inlined: Truncate(0) of a built list costs no
		// call and no loop (tok is kept: see Field).
		l.items, l.tot = l.items[:0], listTotals{}
		return
	}
	l.truncateSlow(n)
}

// truncateSlow is Truncate outside its first case.
func (l *BytesList) truncateSlow(n int) {
	if l.vep != 0 {
		l.materialize()
	}
	items := truncate(l.items, n)
	for i := range l.items[n:] { // the kept totals, less the elements dropped
		if b := &l.items[n+i]; b.buf.IsZero() {
			l.tot.cp -= len(b.data)
		} else {
			l.tot.zc -= len(b.data)
			l.tot.nz--
		}
	}
	l.items = items
}

// Equal reports whether both lists (both loaded) hold the same elements.
func (l *BytesList) Equal(o *BytesList) bool {
	if l.Len() != o.Len() {
		return false
	}
	for i := range l.Len() {
		if !bytes.Equal(l.At(i), o.At(i)) {
			return false
		}
	}
	return true
}

// StringList is a repeated string field; elements are checked for UTF-8
// when read (At), like String.
type StringList struct {
	a     *Arena
	items []String
	lz    lazy
}

// Init makes the list empty with room for n elements.
func (l *StringList) Init(a *Arena, n int) {
	var items []String
	if p := a.take(stringType.id, n, unsafe.Sizeof(String{})); p != nil { // newSliceRaw, inlined
		items = (*[maxSlabLen]String)(p)[:0:n]
	} else {
		items = stringType.newSliceRawSlow(a, max(n, 0))[:0]
	}
	*l = StringList{a: a, items: items} // one write: lz zeroed with it
}

// Load binds the list to a and decodes a decoded list (once; see
// BytesList.Load for ErrArenaReset).
func (l *StringList) Load(a *Arena) error {
	if l.a == nil {
		l.a = a
	}
	z := &l.lz
	if z.src == nil {
		return nil
	}
	if z.stale() {
		return ErrArenaReset
	}
	d := z.src.data
	for at := int(z.off); at < int(z.off)+EntrySize*int(z.n); at += EntrySize {
		if !z.src.checkRef(binary.LittleEndian.Uint32(d[at+4:]), binary.LittleEndian.Uint32(d[at:])) {
			return malformed(at, z.field(), "list element out of range")
		}
	}
	items, ok := stringType.tryNewSlice(l.a, int(z.n))
	if !ok {
		return limitErr(int(z.off), z.field())
	}
	for i := range items {
		at := int(z.off) + EntrySize*i
		items[i].b = z.src.ref(binary.LittleEndian.Uint32(d[at+4:]), binary.LittleEndian.Uint32(d[at:]))
	}
	l.items = items
	*z = lazy{}
	return nil
}

// Len is the number of elements.
func (l *StringList) Len() int {
	if l.lz.src != nil {
		return int(l.lz.n)
	}
	return len(l.items)
}

// At returns element i, or ErrInvalidUTF8 (see String.Get).
func (l *StringList) At(i int) (string, error) { return l.items[i].Get() }

// AtBytes returns element i's raw bytes without a UTF-8 check.
func (l *StringList) AtBytes(i int) []byte { return l.items[i].b.data }

// Field returns element i as a *String.
func (l *StringList) Field(i int) *String { return &l.items[i] }

// Append adds s (hybrid rule of Bytes.Set; a zero-copy value aliases s).
func (l *StringList) Append(s string) {
	l.items = grow(stringType, l.a, l.items)
	l.items[len(l.items)-1].SetString(l.a, s)
}

// AppendBytes adds p.
func (l *StringList) AppendBytes(p []byte) {
	l.items = grow(stringType, l.a, l.items)
	l.items[len(l.items)-1].Set(l.a, p)
}

// AppendBuf adds buf's window (the caller keeps its reference).
func (l *StringList) AppendBuf(buf mem.Buf) {
	l.items = grow(stringType, l.a, l.items)
	l.items[len(l.items)-1].SetBuf(l.a, buf)
}

// Truncate shortens the list to n elements (panics when n > Len()).
func (l *StringList) Truncate(n int) { l.items = truncate(l.items, n) }

// Equal reports whether both lists hold the same elements (both loaded).
func (l *StringList) Equal(o *StringList) bool {
	if len(l.items) != len(o.items) {
		return false
	}
	for i := range l.items {
		if !bytes.Equal(l.items[i].b.data, o.items[i].b.data) {
			return false
		}
	}
	return true
}
