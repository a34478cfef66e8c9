package wireimpl

import (
	"encoding/binary"
	"math/bits"

	"github.com/cornflakes-go/cornflakes/mem"
)

// The generated fast path (docs/CODEGEN.md).
//
// Generated code knows every field's number, and therefore its bitmap word
// and bit, at generation time. Its Wire* hooks compute a message's presence
// bitmap once and then visit the present fields with the primitives below,
// which take no field number and do no per-field bitmap arithmetic: the
// Sizer adds the fixed part in one step (Fixed1, FixedBitmap), the Encoder
// writes the bitmap in one step (Begin1, BeginBitmap) and then fills the
// entries in order (Put*), and the Decoder locates an entry from the bitmap
// word the generated code already loaded (Word, Ent). The generated Sizes,
// Serialize and Decode methods enter the runtime through StartSizes,
// StartSerialize and StartDecode and call the message's own hooks
// statically, without the interface dispatch of SizesOf, SerializeTo and
// Decode. The wire format is the same byte for byte: these primitives share
// the Sizer, Encoder and Decoder state with the per-field calls, which
// hand-written and wide (more than FastMaxWords bitmap words) messages keep
// using, and both may be mixed within one object.

// FastMaxWords is the widest presence bitmap (in 32-bit words, i.e. field
// numbers up to 32*FastMaxWords) for which the generator emits the fast
// path; wider messages use the per-field calls (their bitmap would be a
// large array on the stack of every hook).
const FastMaxWords = 32

// ---- Sizer

// StartSizes returns the sizer for computing c's message's Sizes (the
// arena's, reset). A generated Sizes method calls it, then its own
// WireSizes, then FinishSizes.
func (c *Core) StartSizes() *Sizer {
	a := c.a
	var s *Sizer
	if a == nil {
		s = new(Sizer)
	} else {
		s = &a.sizer
	}
	*s = Sizer{a: a}
	return s
}

// FinishSizes returns the sizes s computed for c's message and remembers
// them (and their error) in the arena for a following Serialize, like
// SizesOf.
func (c *Core) FinishSizes(s *Sizer) Sizes {
	if c.stale() {
		s.fail(ErrArenaReset)
	}
	sz := Sizes{Header: s.header, Copied: s.copied, ZeroCopy: s.zc, Entries: s.entries}
	err := s.err
	if err == nil && uint64(sz.Header)+uint64(sz.Copied)+uint64(sz.ZeroCopy) > MaxMessageSize {
		err = ErrTooLarge
	}
	if a := c.a; a != nil {
		a.szFor, a.sz, a.szErr, a.szDirect = c, sz, err, false
	}
	return sz
}

// Fixed1 adds the fixed part of a message whose fields all have numbers
// 1..32, with present fields b0 (bit i = field i+1), and caches the counts
// Serialize needs in c. It replaces Begin/End for generated code.
func (s *Sizer) Fixed1(c *Core, b0 uint32) {
	n := bits.OnesCount32(b0)
	w := 0
	if b0 != 0 {
		w = 1
	}
	c.words, c.count = uint32(w), uint32(n)
	s.header += 4 + 4*w + EntrySize*n
}

// FixedBitmap is Fixed1 for a wider message: bm holds its present fields,
// word by word (the generator sizes it to the schema's widest field).
func (s *Sizer) FixedBitmap(c *Core, bm []uint32) {
	n, w := 0, 0
	for i, x := range bm {
		if x != 0 {
			n += bits.OnesCount32(x)
			w = i + 1
		}
	}
	c.words, c.count = uint32(w), uint32(n)
	s.header += 4 + 4*w + EntrySize*n
}

// AddBytes adds a present bytes value (copied or zero-copy).
func (s *Sizer) AddBytes(b *Bytes) {
	if b.buf.IsZero() {
		s.copied += len(b.data)
	} else {
		s.zc += len(b.data)
		s.entries++
	}
}

// AddString adds a present string value.
func (s *Sizer) AddString(v *String) { s.AddBytes(&v.b) }

// SizedBytesList adds a list of bytes and reports whether it is present
// (not empty); a decoded list is loaded first (an error is kept for
// Serialize, and the list counts as absent).
func (s *Sizer) SizedBytesList(l *BytesList) bool {
	if l.lz.src != nil {
		if l.lz.n == 0 {
			return false
		}
		if err := l.Load(s.a); err != nil {
			s.fail(err)
			return false
		}
		l.materialize()
	}
	items := l.items
	if len(items) == 0 {
		return false
	}
	s.header += EntrySize * len(items)
	for i := range items {
		b := &items[i]
		if b.buf.IsZero() {
			s.copied += len(b.data)
		} else {
			s.zc += len(b.data)
			s.entries++
		}
	}
	return true
}

// SizedStringList adds a list of strings and reports whether it is present.
func (s *Sizer) SizedStringList(l *StringList) bool {
	if l.Len() == 0 {
		return false
	}
	if err := l.Load(s.a); err != nil {
		s.fail(err)
		return false
	}
	s.header += EntrySize * len(l.items)
	for i := range l.items {
		s.AddBytes(&l.items[i].b)
	}
	return true
}

// SizedScalars adds a list of scalars and reports whether it is present.
func SizedScalars[T Scalar](s *Sizer, l *ScalarList[T]) bool {
	if l.Len() == 0 {
		return false
	}
	if err := l.Load(s.a); err != nil {
		s.fail(err)
		return false
	}
	sizePacked(s, l) // packed.go
	return true
}

// Enter starts a nested message (a field or list element) and reports
// whether it is within MaxDepth; Leave ends it. Generated code brackets
// each nested message's WireSizes with them.
func (s *Sizer) Enter() bool {
	s.depth++
	if s.depth > MaxDepth {
		s.fail(ErrTooDeep)
		return false
	}
	return true
}

// Leave ends a nested message started by Enter.
func (s *Sizer) Leave() { s.depth-- }

// Fresh reports whether the nested message (a field or list element) with
// core c may be sized: when c's arena was Reset since the message was made
// it records ErrArenaReset and returns false. Generated code calls it
// before each nested message's WireSizes (as SizeMessage and SizeMessages
// do), so that a stale message reached from a fresh one is refused before
// its memory, which the arena may have handed out again, is read.
func (s *Sizer) Fresh(c *Core) bool {
	if c.stale() {
		s.fail(ErrArenaReset)
		return false
	}
	return true
}

// Arena returns the arena of the object being sized (nil for a message
// made without one). Generated code decodes lazy nested messages with it.
func (s *Sizer) Arena() *Arena { return s.a }

// Fail records err (the first one is kept and reported by Serialize).
func (s *Sizer) Fail(err error) { s.fail(err) }

// ---- Encoder

// StartSerialize prepares the encoder for serializing m into dst (exactly
// Sizes().Head() bytes) with zero-copy entries to sink, using the sizes of
// the last Sizes of m (computing them when another message was sized
// since). A generated Serialize method calls it, then its own WireEncode,
// then FinishSerialize. When it returns a nil *Encoder the serialization is
// already finished (an error, or a message without an arena, serialized by
// the per-field path) and err is its result.
func StartSerialize(m Msg, c *Core, dst []byte, sink EntrySink) (*Encoder, error) {
	a := c.a
	if a == nil || a.busyEnc {
		return nil, serialize(m, dst, sink, false)
	}
	if a.szFor != c {
		sizesOf(m, c)
	}
	if a.szErr != nil {
		return nil, a.szErr
	}
	hdr, head := a.sz.Header, a.sz.Header+a.sz.Copied
	if len(dst) != head {
		return nil, ErrDstSize
	}
	a.busyEnc = true
	// Encoder.reset inline, reading the cached sizes in place.
	e := &a.enc
	e.dst, e.sink, e.err = dst, sink, nil
	e.sga, _ = sink.(*SGA)
	e.hdr, e.hdrEnd = 0, hdr
	e.cp, e.cpEnd = hdr, head
	e.zc, e.zcEnd = head, head+a.sz.ZeroCopy
	e.entries, e.wantEnt, e.flat = 0, a.sz.Entries, false
	e.base, e.words, e.ent, e.entEnd, e.depth = 0, 0, 0, 0, 0
	return e, nil
}

// FinishSerialize ends a serialization started by StartSerialize: it
// checks that the message wrote exactly the layout its Sizes promised
// (ErrModified otherwise) and returns the first error.
func (e *Encoder) FinishSerialize(c *Core) error {
	err := e.err
	// One branch for the four cursor checks: any difference is non-zero.
	if err == nil && (e.hdr^e.hdrEnd)|(e.cp^e.cpEnd)|(e.zc^e.zcEnd)|(e.entries^e.wantEnt) != 0 {
		err = ErrModified
	}
	e.dst, e.sink, e.sga, e.err = nil, nil, nil, nil
	c.a.busyEnc = false
	return err
}

// Begin1 starts a message whose fields all have numbers 1..32, present
// fields b0 (bit i = field i+1): it writes the bitmap and reserves the
// entries, which the Put* calls (and the per-field calls) then fill in
// field order. It replaces Begin for generated code; End finishes.
func (e *Encoder) Begin1(b0 uint32) EncoderMark {
	mk := EncoderMark{e.base, e.words, e.ent, e.entEnd}
	e.depth++
	start := e.hdr
	if b0 == 0 { // no field present: the word count 0 and no entries
		end := start + 4
		if e.err != nil || end > e.hdrEnd {
			e.fail(ErrModified)
			e.words, e.ent, e.entEnd = 0, 0, 0
			return mk
		}
		binary.LittleEndian.PutUint32(e.dst[start:end], 0)
		e.base, e.words, e.ent, e.entEnd, e.hdr = start, 0, end, end, end
		return mk
	}
	ents := start + 8
	end := ents + EntrySize*bits.OnesCount32(b0)
	if e.err != nil || end > e.hdrEnd {
		e.fail(ErrModified)
		e.words, e.ent, e.entEnd = 0, 0, 0
		return mk
	}
	binary.LittleEndian.PutUint64(e.dst[start:ents], 1|uint64(b0)<<32)
	e.base, e.words, e.ent, e.entEnd, e.hdr = start, 1, ents, end, end
	return mk
}

// BeginBitmap is Begin1 for a wider message: bm holds its present fields,
// word by word.
func (e *Encoder) BeginBitmap(bm []uint32) EncoderMark {
	mk := EncoderMark{e.base, e.words, e.ent, e.entEnd}
	e.depth++
	n, w := 0, 0
	for i, x := range bm {
		if x != 0 {
			n += bits.OnesCount32(x)
			w = i + 1
		}
	}
	start := e.hdr
	fixed := 4 + 4*w + EntrySize*n
	if e.err != nil || fixed > e.hdrEnd-start {
		e.fail(ErrModified)
		e.words, e.ent, e.entEnd = 0, 0, 0
		return mk
	}
	hdr := e.dst[start : start+fixed]
	binary.LittleEndian.PutUint32(hdr, uint32(w))
	for i := range w {
		binary.LittleEndian.PutUint32(hdr[4+4*i:], bm[i])
	}
	e.base, e.words = start, w
	e.ent = start + 4 + 4*w
	e.entEnd = start + fixed
	e.hdr = start + fixed
	return mk
}

// slot returns the offset of the next entry and advances, or -1 (the
// layout no longer matches the sizes: ErrModified).
func (e *Encoder) slot() int {
	at := e.ent
	if e.err != nil || EntrySize > e.entEnd-at {
		e.fail(ErrModified)
		return -1
	}
	e.ent = at + EntrySize
	return at
}

// PutU64 writes the next entry as an inline scalar (the value's 64-bit
// form: integers sign- or zero-extended, floats as IEEE-754 bits, bool 0/1).
func (e *Encoder) PutU64(v uint64) {
	if at := e.slot(); at >= 0 {
		binary.LittleEndian.PutUint64(e.dst[at:at+EntrySize], v)
	}
}

// PutBytes writes the next entry as a bytes value.
func (e *Encoder) PutBytes(b *Bytes) {
	at := e.slot()
	if at < 0 {
		return
	}
	// Encoder.data's zero-copy case into an *SGA inline (the serialize-
	// and-send path): the entry, the cursor and one append.
	if n, zc := len(b.data), e.zc; !b.buf.IsZero() && e.sga != nil && n <= e.zcEnd-zc {
		binary.LittleEndian.PutUint64(e.dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(zc))<<32)
		e.zc = zc + n
		e.entries++
		e.sga.Entries = append(e.sga.Entries, b.buf)
		return
	}
	e.data(at, b)
}

// PutString writes the next entry as a string value.
func (e *Encoder) PutString(s *String) {
	if at := e.slot(); at >= 0 {
		e.data(at, &s.b)
	}
}

// PutBytesList writes the next entry as a (present, loaded) list of bytes:
// the element entries, each element's bytes into the copied region or as a
// zero-copy entry, in one loop over the list with the cursors in registers.
func (e *Encoder) PutBytesList(l *BytesList) {
	items := l.items
	n := len(items)
	at := e.slot()
	r := e.region(EntrySize * n)
	if at < 0 || r < 0 {
		return
	}
	e.put32x2(at, n, r)
	dst := e.dst
	ents := dst[r : r+EntrySize*n]
	// The zero-copy cursor is not checked per element: nothing is written
	// at it, and FinishSerialize/End compare it with the sizes.
	cp, cpEnd, zc, entries := e.cp, e.cpEnd, e.zc, e.entries
	sga := e.sga
	for i := range items {
		b := &items[i]
		k := len(b.data)
		ent := ents[EntrySize*i : EntrySize*i+EntrySize]
		if b.buf.IsZero() {
			if k > cpEnd-cp {
				e.fail(ErrModified)
				break
			}
			copy(dst[cp:cp+k], b.data)
			binary.LittleEndian.PutUint64(ent, uint64(uint32(k))|uint64(uint32(cp))<<32)
			cp += k
			continue
		}
		binary.LittleEndian.PutUint64(ent, uint64(uint32(k))|uint64(uint32(zc))<<32)
		zc += k
		entries++
		if sga != nil {
			sga.Entries = append(sga.Entries, b.buf)
		} else if e.flat {
			if k > e.zcEnd-(zc-k) {
				e.fail(ErrModified)
				break
			}
			copy(dst[zc-k:zc], b.data)
		} else if err := e.sink.ZeroCopyEntry(b.buf); err != nil {
			e.fail(err)
			break
		}
	}
	e.cp, e.zc, e.entries = cp, zc, entries
}

// ---- Decoder

// StartDecode prepares decoding c's message from b, zero-copy, like
// Decode: the arena takes its own reference on b (released at Reset). A
// generated Decode method calls it, then its own WireDecode, then
// FinishDecode. A nil *Decoder means decoding already failed with err.
func (c *Core) StartDecode(b mem.Buf) (*Decoder, error) {
	a := c.a
	if a == nil {
		return nil, ErrNoArena
	}
	if c.stale() {
		return nil, ErrArenaReset
	}
	var p []byte
	var h mem.Buf
	if !b.IsZero() {
		h, p = a.holdInput(b)
	}
	return c.startDecode(a, p, h)
}

// holdInput returns the handle and bytes of a decoded input b that the
// arena holds until Reset. The reference is taken once per batch: an
// input that lies within the registered input the arena decoded last (a
// second message of the same packet) shares that input's reference (no
// refcount operation); any other is cloned and held.
func (a *Arena) holdInput(b mem.Buf) (mem.Buf, []byte) {
	p := b.Bytes()
	if src := a.lastSrc; src != nil {
		if off, ok := within(p, src.data); ok {
			return src.buf.Slice(off, len(p)), p
		}
	}
	if a.BorrowInput {
		a.borrow(b)
		return b, p
	}
	h := b.Clone()
	a.refs = append(a.refs, h)
	return h, p
}

// StartDecodeBytes is StartDecode for DecodeBytes: p is aliased (a
// reference is taken when it lies in registered memory, unless p lies in
// the registered input the arena decoded last, whose reference it shares).
func (c *Core) StartDecodeBytes(p []byte) (*Decoder, error) {
	a := c.a
	if a == nil {
		return nil, ErrNoArena
	}
	if c.stale() {
		return nil, ErrArenaReset
	}
	var h mem.Buf
	if src := a.lastSrc; src != nil {
		if off, ok := within(p, src.data); ok { // see holdInput
			return c.startDecode(a, p, src.buf.Slice(off, len(p)))
		}
	}
	if buf, ok := mem.Recover(p); ok {
		a.refs = append(a.refs, buf)
		h = buf
	}
	return c.startDecode(a, p, h)
}

func (c *Core) startDecode(a *Arena, p []byte, h mem.Buf) (*Decoder, error) {
	if uint64(len(p)) > MaxMessageSize {
		return nil, malformed(0, 0, "input larger than MaxMessageSize")
	}
	src := a.newSourceOf(p, h)
	if !h.IsZero() {
		a.lastSrc = src
	}
	c.src, c.depth, c.has = src, 0, 0
	if c.hasX != nil {
		clear(c.hasX)
	}
	d := &a.dec
	if d.src != nil { // re-entered: use a fresh decoder
		d = new(Decoder)
	}
	// Decoder.init's common case inline (one bitmap word whose entries
	// fit): the root's extent is the whole input.
	if len(p) >= 8 && binary.LittleEndian.Uint32(p) == 1 {
		w0 := binary.LittleEndian.Uint32(p[4:8])
		if n := bits.OnesCount32(w0); EntrySize*n <= len(p)-8 {
			// Field by field: cheaper than assigning a Decoder literal
			// (every field is set; see Decoder).
			d.a, d.src, d.data, d.err = a, src, p, nil
			d.start, d.end, d.words, d.ents, d.dyn = 0, len(p), 1, 8, 8+EntrySize*n
			d.fixedEnd, d.pw, d.pre, d.depth, d.w0 = 0, 0, 0, 0, w0
			return d, nil
		}
	}
	if err := d.init(a, src, 0, len(p), 0); err != nil {
		d.src = nil
		return nil, err
	}
	return d, nil
}

// FinishDecode ends a decode started by StartDecode and returns its first
// error.
func (d *Decoder) FinishDecode() error {
	err := d.err
	d.src = nil
	return err
}

// Word returns bitmap word i of the message (0 beyond its bitmap: those
// fields are absent).
func (d *Decoder) Word(i int) uint32 {
	if 0 <= i && i < d.words { // a sparse header has words < 0
		return leU32(d.data, d.start+4+4*i)
	}
	if d.words < 0 {
		return d.sparseWord(i) // sparse.go
	}
	return 0
}

// Word0 is Word(0), read when the message's fixed part was parsed.
func (d *Decoder) Word0() uint32 { return d.w0 }

// Ent returns the offset of the entry of the field with bit `bit` in the
// bitmap word `word` (whose preceding words hold `pre` present fields), or
// -1 when the field is absent or decoding already failed.
func (d *Decoder) Ent(word, bit uint32, pre int) int {
	if word&bit == 0 || d.err != nil {
		return -1
	}
	return d.ents + EntrySize*(pre+bits.OnesCount32(word&(bit-1)))
}

// U64At reads the inline scalar entry at `at` (from Ent; 0 when at < 0).
func (d *Decoder) U64At(at int) uint64 {
	if at < 0 {
		return 0
	}
	return binary.LittleEndian.Uint64(d.data[at : at+EntrySize])
}

// BytesAt reads the bytes entry at `at` (from Ent) of field num into b,
// aliasing the input, and reports whether it is present.
func (d *Decoder) BytesAt(at, num int, b *Bytes) bool {
	if at < 0 {
		*b = Bytes{}
		return false
	}
	e := binary.LittleEndian.Uint64(d.data[at : at+EntrySize])
	n, off := int(uint32(e)), int(e>>32)
	src := d.src
	// source.checkRef and source.ref inline for a value in the input's
	// first (or only) segment; offsets and sizes are below 2^32, so the
	// sum does not overflow.
	if n != 0 && off+n <= len(src.data) {
		p := src.data[off : off+n : off+n]
		if n >= src.thr && !src.buf.IsZero() {
			*b = Bytes{data: p, buf: src.buf.Slice(off, n)}
		} else {
			*b = Bytes{data: p}
		}
		return true
	}
	if !src.checkRef(uint32(off), uint32(n)) {
		d.fail(malformed(at, num, "data range out of bounds"))
		*b = Bytes{}
		return false
	}
	*b = src.ref(uint32(off), uint32(n))
	return true
}

// StringAt reads the string entry at `at` of field num into s (UTF-8 is
// checked when it is read) and reports whether it is present.
func (d *Decoder) StringAt(at, num int, s *String) bool {
	s.utf8s = utf8Unchecked
	return d.BytesAt(at, num, &s.b)
}

// BytesListAt records the list of bytes whose entry is at `at` (from Ent)
// for decoding on first access.
func (d *Decoder) BytesListAt(at, num int, l *BytesList) {
	*l = BytesList{a: d.a}
	if at < 0 {
		return
	}
	if n, off, ok := d.region(at, num, EntrySize); ok && n > 0 {
		l.lz.set(d.src, off, n, 0, d.depth, num)
	}
}

// region is listRegion for an entry already located.
func (d *Decoder) region(at, num, width int) (n, off int, ok bool) {
	e := binary.LittleEndian.Uint64(d.data[at : at+EntrySize])
	n, off = int(uint32(e)), int(e>>32)
	if n > MaxListLen {
		d.fail(malformed(at, num, "list count exceeds MaxListLen"))
		return 0, 0, false
	}
	if off < d.dyn || off > d.end || n*width > d.end-off {
		d.fail(malformed(at, num, "list region out of range or overlapping"))
		return 0, 0, false
	}
	d.dyn = off + n*width
	return n, off, true
}

// AddEntries adds n list entries (a list of messages' element entries) to
// the header.
func (s *Sizer) AddEntries(n int) { s.header += EntrySize * n }

// BoolBits is a bool's 64-bit entry value (1 or 0).
func BoolBits(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// ---- Nested messages (fast path)

// Loaded returns the field's message when it is set or already decoded,
// and the zero P otherwise (a field still pending decode included); it
// never decodes. Generated WireEncode methods use it after WireSizes
// decoded every present field.
func (n *Nested[P]) Loaded() P { return n.p }

// OpenMessage reserves the next entry for a nested message whose header
// the caller writes next, at the header cursor (its own WireEncode), and
// returns the entry's offset and the header's start for CloseMessage; at
// is -1 when the layout no longer matches the sizes or the nesting is
// deeper than MaxDepth (the error is recorded).
func (e *Encoder) OpenMessage() (at, start int) {
	at = e.slot()
	if at < 0 {
		return -1, 0
	}
	if e.depth > MaxDepth {
		e.fail(ErrTooDeep)
		return -1, 0
	}
	return at, e.hdr
}

// CloseMessage writes the {size, offset} entry at `at` of the nested
// message whose header started at start (from OpenMessage).
func (e *Encoder) CloseMessage(at, start int) {
	if e.err == nil {
		e.put32x2(at, e.hdr-start, start)
	}
}

// MessageAt records the nested message whose entry is at `at` (from Ent;
// absent when at < 0) of field num for decoding on first access, like
// DecodeMessage.
func MessageAt[P MessagePtr](d *Decoder, at, num int, n *Nested[P]) {
	*n = Nested[P]{}
	if at < 0 {
		return
	}
	e := binary.LittleEndian.Uint64(d.data[at : at+EntrySize])
	size, off := int(uint32(e)), int(e>>32)
	if off < d.dyn || off > d.end || size > d.end-off || size < 4 {
		d.fail(malformed(at, num, "nested message out of range or overlapping"))
		return
	}
	d.dyn = off + size
	n.lz.set(d.src, off, size, 0, d.depth, num)
}

// ---- Nested messages decoded eagerly (fast path)

// DecoderMark saves the state of the message being decoded across a nested
// message decoded in place (Enter, Leave). The generated WireDecode loads
// its bitmap words before its fields, so only the extent, the entries and
// the dynamic cursor are saved (and a sparse header's end of entries).
type DecoderMark struct {
	start, end, words, ents, dyn, fixedEnd int
}

// NestedAt checks the nested message whose entry is at `at` (from Ent;
// absent when at < 0) of field num with MessageAt's region checks, the
// MaxDepth check and the arena's Limit, and returns its header's extent
// [off, off+size). ok is false when the field is absent or an error was
// recorded. Generated WireDecode methods that decode a nested message
// eagerly call it, then make the message (its New function) and call
// Enter, the message's WireDecode and Leave.
func (d *Decoder) NestedAt(at, num int) (off, size int, ok bool) {
	if at < 0 {
		return 0, 0, false
	}
	e := binary.LittleEndian.Uint64(d.data[at : at+EntrySize])
	size, off = int(uint32(e)), int(e>>32)
	switch {
	case off < d.dyn || off > d.end || size > d.end-off || size < 4:
		d.fail(malformed(at, num, "nested message out of range or overlapping"))
		return 0, 0, false
	case d.depth >= MaxDepth:
		d.fail(&DecodeError{Off: off, Reason: "nesting", Err: ErrTooDeep})
		return 0, 0, false
	case overLimit(d.a):
		d.fail(limitErr(off, num))
		return 0, 0, false
	}
	return off, size, true
}

// Arena returns the arena messages are decoded into.
func (d *Decoder) Arena() *Arena { return d.a }

// Enter positions d on the nested message [off, off+size) (from NestedAt)
// and binds c, the core of the new message that will hold it, to the
// input. ok is false when the message's fixed part is malformed (the error
// is recorded); either way the caller ends with Leave(mk), which restores
// the enclosing message's state with the nested region consumed.
func (d *Decoder) Enter(c *Core, off, size int) (mk DecoderMark, ok bool) {
	mk = DecoderMark{d.start, d.end, d.words, d.ents, off + size, d.fixedEnd}
	depth := d.depth + 1
	c.src, c.depth = d.src, int32(depth)
	if d.err != nil {
		return mk, false
	}
	// Decoder.init's common case inline: one bitmap word whose entries fit.
	end := off + size
	if hdr := d.data[off:end]; len(hdr) >= 8 && binary.LittleEndian.Uint32(hdr) == 1 {
		w0 := binary.LittleEndian.Uint32(hdr[4:8])
		if n := bits.OnesCount32(w0); EntrySize*n <= len(hdr)-8 {
			d.start, d.end, d.depth, d.pw, d.pre, d.w0 = off, end, depth, 0, 0, w0
			d.words, d.ents, d.dyn = 1, off+8, off+8+EntrySize*n
			return mk, true
		}
	}
	if err := d.init(d.a, d.src, off, end, depth); err != nil {
		d.err = err
		return mk, false
	}
	return mk, true
}

// Leave ends a nested message started by Enter.
func (d *Decoder) Leave(mk DecoderMark) {
	d.start, d.end, d.words, d.ents, d.dyn, d.fixedEnd = mk.start, mk.end, mk.words, mk.ents, mk.dyn, mk.fixedEnd
	d.pw, d.pre = 0, 0 // the per-field calls' popcount cache restarts from word 0
	d.depth--
}

// Err returns the first error of the decode so far.
func (d *Decoder) Err() error { return d.err }

// Stale reports whether the message's arena was Reset since the message
// was made (its memory may have been handed out again). Getters of nested
// messages decoded in place check it, as the lazy record of a pending one
// does (ErrArenaReset).
func (c *Core) Stale() bool { return c.stale() }

// leU32 returns the little-endian u32 at p[i:i+4] (small enough to inline
// into its callers).
func leU32(p []byte, i int) uint32 { return binary.LittleEndian.Uint32(p[i : i+4]) }
