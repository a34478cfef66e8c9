package wireimpl

import (
	"fmt"
	"math"
	"unsafe"

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
	if a == nil || c.epoch != uint32(a.epoch) {
		return c.beginDecodeSlow(b) // reports them
	}
	return a.BeginDecode(b)
}

// BeginDecode is Core.BeginDecode for a message just made in a (the
// generated Decode<Msg> functions, which make the message and decode into
// it): the message's own checks (an arena, not stale) hold by
// construction. It returns nil and the error when b is larger than
// MaxMessageSize.
func (a *Arena) BeginDecode(b mem.Buf) (*Source, error) {
	// The common case, straight-line and without a call: the batch's
	// first registered input (the arena holds no input yet: lastSrc is nil
	// exactly until one is recorded), in the unchecked build, borrowed or
	// whose reference TryClone takes. Its record is the one embedded in
	// the arena (src0: no slab, its arena and segs fields are fixed), its
	// reference the arena's input slot (no append). Every other case (and
	// a reference TryClone cannot take) is beginDecodeSlow: with no call
	// on this path, b stays in registers. A Buf's window is shorter than
	// 2^32, so MaxMessageSize holds.
	if a.lastSrc != nil || b.IsZero() || mem.Checked {
		return a.beginDecodeSlow(b)
	}
	if !a.BorrowInput { // else the caller's reference (see Arena.BorrowInput)
		if !b.TryClone() {
			return a.beginDecodeSlow(b) // Clone reports a stale b
		}
		a.in = b
	}
	src := &a.src0
	// src0 keeps its arena and threshold fields across batches (Reset
	// does not touch them; only this code writes them, all together):
	// they are written at its first use and rewritten only when Threshold
	// changed.
	if thr := a.Threshold; src.a == nil || src.thr != thr {
		src.a, src.thr, src.cpBelow, src.zcFrom = a, thr, thr, max(thr, 1)
	}
	d := b.Bytes()
	src.epoch = a.epoch
	src.buf = b // the pointer stores together: one write-barrier test (see Input0)
	src.data = d
	a.lastSrc = src
	return src, nil
}

// The generated Decode makes BeginDecode's common case without a call, with
// three inlinable steps (docs/CODEGEN.md, "Direct decode"):
//
//	if a := x.cf.DecodeArena(b); a != nil && a.TryHoldInput(b) {
//		src = a.Input0(b)
//	} else if src, err = x.cf.BeginDecode(b); src == nil {
//		return err
//	}
//
// Each step is small enough to be inlined; together they are exactly
// BeginDecode's common case (the same checks, the same reference taken,
// the same record). A step that refuses leaves everything as it was, and
// BeginDecode then decides (and reports) as before.

// DecodeArena returns c's arena when a decode of c from b can take
// BeginDecode's common case: c has an arena and is not stale, b is not the
// zero Buf, the arena holds no decoded input yet in this batch, its
// embedded record is set up for its current Threshold, and the build is
// not the checked one. Otherwise it returns nil (nothing changed).
func (c *Core) DecodeArena(b mem.Buf) *Arena {
	a := c.a
	if a == nil || c.epoch != uint32(a.epoch) || !a.DecodeReady(b) {
		return nil
	}
	return a
}

// DecodeReady is DecodeArena for a message the caller has just made in a
// (the generated Decode<Msg> functions, which make the message and decode
// into it): it reports whether a decode from b can take BeginDecode's
// common case. The message's own checks (an arena, not stale) hold by
// construction; the rest are DecodeArena's: b is not the zero Buf, the
// arena holds no decoded input yet in this batch, its embedded record is
// set up for its current Threshold, and the build is not the checked one.
// It changes nothing; when it reports false, the caller calls
// Arena.BeginDecode, which decides and reports every case.
func (a *Arena) DecodeReady(b mem.Buf) bool {
	return a.lastSrc == nil && !b.IsZero() && !mem.Checked && a.src0.a != nil && a.src0.thr == a.Threshold
}

// TryHoldInput takes the arena's reference on b for the decode that
// DecodeArena admitted: none under BorrowInput (the caller's reference),
// else one TryClone, kept in the arena's input slot (released at Reset).
// It reports false, having changed nothing, when TryClone cannot take the
// reference (a concurrent pool, a stale b): the caller then calls
// BeginDecode, which clones or reports it.
func (a *Arena) TryHoldInput(b mem.Buf) bool {
	if a.BorrowInput {
		return true
	}
	if b.TryClone() {
		a.in = b
		return true
	}
	return false
}

// Input0 records b, held by TryHoldInput, as the batch's first decoded
// input in the arena's embedded record, and returns the record (valid
// until Reset), exactly as BeginDecode's common case does.
func (a *Arena) Input0(b mem.Buf) *Source {
	src := &a.src0
	d := b.Bytes()
	src.epoch = a.epoch
	// The pointer stores (buf's region, data's array, lastSrc) adjacent:
	// the compiler then tests the write barrier once for all three.
	src.buf = b
	src.data = d
	a.lastSrc = src
	return src
}

// beginDecodeSlow is BeginDecode outside its common case: no arena, a
// stale message, an empty input, a second input in the batch (sharing the
// reference of the input decoded last when it lies within it), or the
// checked build.
func (c *Core) beginDecodeSlow(b mem.Buf) (*Source, error) {
	a := c.a
	if a == nil {
		return nil, ErrNoArena
	}
	if c.stale() {
		return nil, ErrArenaReset
	}
	return a.beginDecodeSlow(b)
}

// beginDecodeSlow is Arena.BeginDecode outside its common case (see
// Core.beginDecodeSlow).
func (a *Arena) beginDecodeSlow(b mem.Buf) (*Source, error) {
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
	*p = source{a: a, epoch: a.epoch, zcFrom: math.MaxInt}
	return p
}

// newSourceOf is newSource for an input p held by h, decoded at the
// arena's current Threshold: the record is written once. (BeginDecode's
// common case uses the arena's embedded record instead.)
func (a *Arena) newSourceOf(p []byte, h mem.Buf) *source {
	src := a.sourceSlot()
	// Field by field (every field of source): cheaper than a literal.
	src.a, src.data, src.buf, src.thr, src.epoch = a, p, h, a.Threshold, a.epoch
	if src.segs != nil {
		src.segs = nil
	}
	src.cpBelow, src.zcFrom = a.Threshold, max(a.Threshold, 1)
	if h.IsZero() {
		src.cpBelow, src.zcFrom = math.MaxInt, math.MaxInt
	}
	return src
}

// sourceSlot returns the next source record of the slab (holding stale
// contents: the caller assigns the whole record).
func (a *Arena) sourceSlot() *source {
	s := &a.srcs
	if n := s.used(a); n < s.lim {
		s.n, s.ep = n+1, a.epoch
		return (*source)(unsafe.Add(s.base, uintptr(n)*unsafe.Sizeof(source{})))
	}
	return &s.allocSlow(a, 1, false)[0]
}

// borrow records an input decoded under BorrowInput, which the arena does
// not hold: in the checked build, Reset checks that it is still live
// (checkBorrowed); otherwise nothing.
func (a *Arena) borrow(b mem.Buf) {
	if mem.Checked {
		a.borrowed = append(a.borrowed, b)
	}
}

// checkBorrowed is Reset's check of the inputs borrowed in the batch
// (checked build): it returns first, or, when first is nil, an error for
// the first borrowed input that was released before Reset (the caller
// broke BorrowInput's promise; decoded fields may have read reused
// memory). It forgets the inputs.
func (a *Arena) checkBorrowed(first error) error {
	for _, b := range a.borrowed {
		if err := b.Check(); err != nil && first == nil {
			first = fmt.Errorf("wire: an input decoded with Arena.BorrowInput was released before the arena's Reset: %w", err)
		}
	}
	clear(a.borrowed)
	a.borrowed = a.borrowed[:0]
	return first
}

// InitNew binds a message just made in a (from TryNewRaw's reused memory
// or zeroed) to a: the whole Core is written, as Core{} followed by Init.
func (c *Core) InitNew(a *Arena) {
	*c = Core{a: a, epoch: uint32(a.epoch)}
	if a.WriteTyped {
		c.initTypedWrite() // unknown_keep.go
	}
}
