package wireimpl

import (
	"github.com/cornflakes-go/cornflakes/mem"
)

// Msg is implemented by generated message types (as pointers): the
// per-message hooks the runtime drives (wire.Msg adds wire.Object).
//
// The hooks visit fields in ascending field-number order and must agree
// with each other on which fields are present.
type Msg interface {
	// String returns a one-line text form (for debugging).
	String() string
	// WireCore returns the message's runtime state.
	WireCore() *Core
	// WireSizes adds the message to s: s.Begin, one call per field, s.End.
	WireSizes(s *Sizer)
	// WireEncode writes the message: e.Begin, one call per present field, e.End.
	WireEncode(e *Encoder)
	// WireDecode reads the message's fields from d: one call per field.
	WireDecode(d *Decoder)
}

// Core is the runtime state every generated message embeds: its arena, the
// presence bits of fields with explicit presence (proto3 optional, proto2
// optional), the decoded source, and the layout cached by Sizes.
type Core struct {
	a     *Arena
	src   *source // the input a decoded message aliases; nil when built
	has   uint64  // explicit-presence bits 0..63
	hasX  []uint64
	count uint32 // present fields, computed by Sizes for Serialize
	words uint32 // bitmap words, computed by Sizes for Serialize
	depth int32  // nesting depth of a decoded message
	epoch uint32 // the arena's epoch at New: a Reset since makes the message stale

	uk *keptSet // kept unknown fields / typed-form writing (unknown_keep.go); nil: neither
}

// Init binds the message to a (generated New functions call it).
func (c *Core) Init(a *Arena) {
	c.a = a
	if a != nil {
		c.epoch = uint32(a.epoch)
		if a.WriteTyped {
			c.initTypedWrite() // unknown_keep.go
		}
	}
}

// stale reports whether c's arena was Reset since c's message was made.
func (c *Core) stale() bool { return c.a != nil && c.epoch != uint32(c.a.epoch) }

// Arena returns the message's arena.
func (c *Core) Arena() *Arena { return c.a }

// Has reports explicit-presence bit i (i is the index of the field among
// the message's explicit-presence fields, assigned by the generator).
func (c *Core) Has(i int) bool {
	if i < 64 {
		return c.has&(1<<uint(i)) != 0
	}
	j := i/64 - 1
	return j < len(c.hasX) && c.hasX[j]&(1<<uint(i%64)) != 0
}

// SetHas sets explicit-presence bit i.
func (c *Core) SetHas(i int) {
	if i < 64 {
		c.has |= 1 << uint(i)
		return
	}
	j := i/64 - 1
	if j >= len(c.hasX) {
		x := uint64Type.NewSlice(c.a, j+1)
		copy(x, c.hasX)
		c.hasX = x
	}
	c.hasX[j] |= 1 << uint(i%64)
}

// ClearHas clears explicit-presence bit i.
func (c *Core) ClearHas(i int) {
	if i < 64 {
		c.has &^= 1 << uint(i)
		return
	}
	if j := i/64 - 1; j < len(c.hasX) {
		c.hasX[j] &^= 1 << uint(i%64)
	}
}

// source is one decoded input: the bytes that decoded fields alias, and the
// registered window (borrowed; the arena holds the reference) when the
// input is registered memory.
//
// (Arena.newSourceOf assigns every field: keep it in step when adding one.)
type source struct {
	data  []byte
	buf   mem.Buf
	thr   int       // the arena's Threshold when decoding started
	a     *Arena    // the arena whose Reset releases the input
	epoch uint64    // a's epoch at the decode
	segs  []segPart // segments after data (DecodeSegments), in order
	// cpBelow: a value shorter than cpBelow is read without a registered
	// window (Source.BytesEnt's inline case): thr for a registered input,
	// MaxInt otherwise; 0 (every value through the general case) for
	// records not made by newSourceOf.
	cpBelow int
	// zcFrom: a value of at least zcFrom bytes in data is read with the
	// window [off, off+n) of buf (Source.BytesZeroCopy): max(thr, 1) for a
	// record whose buf is registered and whose window is exactly data
	// (newSourceOf, BeginDecode's common case), MaxInt for every other.
	zcFrom int
}

var (
	uint64Type  = NewType[uint64]()
	bytesType   = NewType[Bytes]()
	stringType  = NewType[String]()
	msgSlotType = NewType[Msg]()
)

// SizesOf computes m's Sizes; the arena remembers them (with per-message
// counts) for a following Serialize of m. Generated Sizes methods call it.
func SizesOf(m Msg) Sizes {
	sz, _ := sizesOf(m, m.WireCore())
	return sz
}

func sizesOf(m Msg, c *Core) (Sizes, error) {
	a := c.a
	var s *Sizer
	if a == nil {
		s = new(Sizer)
	} else {
		s = &a.sizer
	}
	*s = Sizer{a: a}
	if c.stale() {
		s.fail(ErrArenaReset)
	} else {
		m.WireSizes(s)
	}
	sz := Sizes{Header: s.header, Copied: s.copied, ZeroCopy: s.zc, Entries: s.entries}
	err := s.err
	if err == nil && sz.Total() > MaxMessageSize {
		err = ErrTooLarge
	}
	if a != nil {
		a.szFor, a.sz, a.szErr, a.szDirect = c, sz, err, false
	}
	return sz, err
}

// SerializeTo writes m's header and copied region into dst (exactly
// Sizes().Head() bytes) and hands each zero-copy entry to sink, in wire
// order. It uses the sizes of the last SizesOf(m) when no other message of
// the arena was sized since (computing them otherwise); a change of m since
// then that alters the layout is detected and reported as ErrModified
// (nothing is written out of place). Generated Serialize methods call it.
func SerializeTo(m Msg, dst []byte, sink EntrySink) error {
	return serialize(m, dst, sink, false)
}

func serialize(m Msg, dst []byte, sink EntrySink, flat bool) error {
	c := m.WireCore()
	a := c.a
	var sz Sizes
	var err error
	if a != nil && a.szFor == c {
		sz, err = a.sz, a.szErr
	} else {
		sz, err = sizesOf(m, c)
	}
	if err != nil {
		return err
	}
	want := sz.Head()
	if flat {
		want = sz.Total()
	}
	if len(dst) != want {
		return ErrDstSize
	}
	var e *Encoder
	if a == nil || a.busyEnc {
		e = new(Encoder)
	} else {
		e = &a.enc
		a.busyEnc = true
	}
	e.reset(dst, sz, sink, flat)
	m.WireEncode(e)
	err = e.err
	if err == nil && (e.hdr != sz.Header || e.cp != sz.Head() || e.zc != sz.Total() || e.entries != sz.Entries) {
		err = ErrModified
	}
	e.dst, e.sink, e.sga, e.err = nil, nil, nil, nil
	if a != nil && e == &a.enc {
		a.busyEnc = false
	}
	return err
}

// Decode decodes m from b, zero-copy: m's fields alias b's bytes, and the
// arena takes its own reference on b (Clone), released at Reset, so the
// caller may release b at once. Nested messages and lists are decoded when
// first accessed. Fields of at least the arena's Threshold bytes are
// zero-copy again when m (or a message built from its fields) is sent.
func Decode(m Msg, b mem.Buf) error {
	c := m.WireCore()
	a := c.a
	if a == nil {
		return ErrNoArena
	}
	if c.stale() {
		return ErrArenaReset
	}
	if b.IsZero() {
		return decodeRoot(m, a, nil, mem.Buf{})
	}
	h, p := a.holdInput(b)
	if uint64(len(p)) > MaxMessageSize {
		return malformed(0, 0, "input larger than MaxMessageSize")
	}
	src := a.newSource()
	src.data, src.buf, src.thr = p, h, a.Threshold
	a.lastSrc = src
	return decodeAt(m, a, src, 0, len(p), 0)
}

// DecodeBytes decodes m from p, aliasing p. When p lies in registered
// memory the arena takes a reference (released at Reset) and large fields
// are zero-copy; otherwise the caller must keep p alive and unchanged
// until the arena's Reset.
func DecodeBytes(m Msg, p []byte) error {
	c := m.WireCore()
	a := c.a
	if a == nil {
		return ErrNoArena
	}
	if c.stale() {
		return ErrArenaReset
	}
	var h mem.Buf
	if buf, ok := mem.Recover(p); ok {
		a.refs = append(a.refs, buf)
		h = buf
	}
	return decodeRoot(m, a, p, h)
}

func decodeRoot(m Msg, a *Arena, p []byte, h mem.Buf) error {
	if uint64(len(p)) > MaxMessageSize {
		return malformed(0, 0, "input larger than MaxMessageSize")
	}
	src := a.newSource()
	src.data = p
	src.buf = h
	src.thr = a.Threshold
	if !h.IsZero() {
		a.lastSrc = src
	}
	return decodeAt(m, a, src, 0, len(p), 0)
}

// decodeAt decodes the message whose header occupies [start, end) of src.
func decodeAt(m Msg, a *Arena, src *source, start, end, depth int) error {
	if depth > MaxDepth {
		return &DecodeError{Off: start, Reason: "nesting", Err: ErrTooDeep}
	}
	c := m.WireCore()
	c.src = src
	c.depth = int32(depth)
	c.has = 0
	clear(c.hasX)
	d := &a.dec
	if d.src != nil { // re-entered (never by the runtime itself): use a fresh decoder
		d = new(Decoder)
	}
	if err := d.init(a, src, start, end, depth); err != nil {
		d.src = nil
		return err
	}
	m.WireDecode(d)
	err := d.err
	d.src = nil // not busy
	return err
}
