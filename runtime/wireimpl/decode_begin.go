package wireimpl

import (
	"math"

	"github.com/cornflakes-go/cornflakes/mem"
)

// The start of a decode: the arena takes (or shares) the input's reference
// and records the input in a source record (Source), which the direct and
// Decoder paths read.

// BeginDecode prepares a direct decode of c's message from b, zero-copy,
// like Decode: the arena takes its reference on b (once per batch, see
// holdInput; released at Reset) and records the input. It returns nil and
// the error when c has no arena, its arena was Reset since c was made, or
// b is larger than MaxMessageSize. The generated Decode method calls it,
// then its own WireDecodeAt(src, 0, src.Len(), 0).
func (c *Core) BeginDecode(b mem.Buf) (*Source, error) {
	a := c.a
	if a == nil || c.epoch != uint32(a.epoch) || b.IsZero() {
		return c.beginDecodeSlow(b)
	}
	// holdInput inline: share the reference of the registered input decoded
	// last in this batch when b lies within it, else take one.
	p := b.Bytes()
	var h mem.Buf
	if last := a.lastSrc; last != nil {
		if off, ok := within(p, last.data); ok {
			h = last.buf.Slice(off, len(p))
		}
	}
	if h.IsZero() {
		h = b.Clone()
		if a.in.IsZero() { // the batch's first: a slot of its own, no append
			a.in = h
		} else {
			a.refs = append(a.refs, h)
		}
	}
	if uint64(len(p)) > MaxMessageSize {
		return nil, malformed(0, 0, "input larger than MaxMessageSize")
	}
	src := a.newSourceOf(p, h)
	a.lastSrc = src
	return src, nil
}

// beginDecodeSlow is BeginDecode without an arena, for a stale message or
// an empty input.
func (c *Core) beginDecodeSlow(b mem.Buf) (*Source, error) {
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
	return a.beginSource(p, h)
}

// BeginDecodeBytes is BeginDecode for DecodeBytes: p is aliased (a
// reference is taken when it lies in registered memory, unless p lies in
// the registered input the arena decoded last, whose reference it shares).
func (c *Core) BeginDecodeBytes(p []byte) (*Source, error) {
	a := c.a
	if a == nil {
		return nil, ErrNoArena
	}
	if c.stale() {
		return nil, ErrArenaReset
	}
	if src := a.lastSrc; src != nil {
		if off, ok := within(p, src.data); ok { // see holdInput
			return a.beginSource(p, src.buf.Slice(off, len(p)))
		}
	}
	var h mem.Buf
	if buf, ok := mem.Recover(p); ok {
		a.refs = append(a.refs, buf)
		h = buf
	}
	return a.beginSource(p, h)
}

// beginSource records the input p (held by h) of a direct decode.
func (a *Arena) beginSource(p []byte, h mem.Buf) (*Source, error) {
	if uint64(len(p)) > MaxMessageSize {
		return nil, malformed(0, 0, "input larger than MaxMessageSize")
	}
	src := a.newSourceOf(p, h)
	if !h.IsZero() {
		a.lastSrc = src
	}
	return src, nil
}

// newSource returns a source of a's current epoch, otherwise zeroed, from
// the arena's own slab, valid until Reset (the inlined fast path of
// slab.alloc for one value).
func (a *Arena) newSource() *source {
	p := a.sourceSlot()
	*p = source{a: a, epoch: a.epoch}
	return p
}

// newSourceOf is newSource for an input p held by h, decoded at the
// arena's current Threshold: the record is written once.
func (a *Arena) newSourceOf(p []byte, h mem.Buf) *source {
	var src *source
	if a.src0Epoch != a.epoch+1 && !mem.Checked {
		// The batch's first input: the record embedded in the arena (no
		// slab; its arena field is always a). The checked build keeps using
		// the slab, which gives every record new memory after a Reset.
		a.src0Epoch = a.epoch + 1
		src = &a.src0
		if src.a == nil {
			src.a = a
		}
	} else {
		src = a.sourceSlot()
		src.a = a
	}
	// Field by field (every field of source): cheaper than a literal.
	src.data, src.buf, src.thr, src.epoch = p, h, a.Threshold, a.epoch
	if src.segs != nil {
		src.segs = nil
	}
	src.cpBelow = a.Threshold
	if h.IsZero() {
		src.cpBelow = math.MaxInt
	}
	return src
}

// sourceSlot returns the next source record of the slab (holding stale
// contents: the caller assigns the whole record).
func (a *Arena) sourceSlot() *source {
	s := &a.srcs
	if s.epoch != a.epoch { // the first decode after a Reset
		if mem.Checked {
			s.rewind(a) // new memory, as for messages
		} else {
			s.epoch, s.n = a.epoch, 0
			if s.ci != 0 {
				s.ci, s.cur = 0, s.chunks[0]
			}
		}
	}
	var p *source
	if s.n < len(s.cur) {
		p = &s.cur[s.n]
		s.n++
	} else {
		p = &s.alloc(a, 1, false)[0]
	}
	return p
}
