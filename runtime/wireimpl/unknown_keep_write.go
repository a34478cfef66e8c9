package wireimpl

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The slow path of messages written in the typed form (unknown_keep.go):
// generated wireSizesKept / wireEncodeKept hooks drive it with the
// per-field calls, merging the kept fields in by number:
//
//	func (x *Foo) wireEncodeKept(e *wireimpl.Encoder) {
//		mk := e.BeginKept(&x.cf)
//		e.KeptBefore(&mk, 1)
//		if x.xId != 0 {
//			e.Uint32(1, x.xId)
//		}
//		e.Known(&mk, wireimpl.KindScalar)
//		...
//		e.EndKept(&mk)
//	}
//
// While such a message is written, the Encoder lays its fixed part out as
// the untyped form plus K spare bytes after the entries, fills a field's
// kind byte in the spare bytes as its entry is taken, and at EndKept
// rotates the kinds in front of the entries (entries hold no offsets of
// themselves, so moving them is free of fix-ups). Every message inside a
// typed message is written typed too (Sizer.typed, Encoder.typed), so that
// the whole object is self-describing.

// Keep reports whether c's message is sized by its kept slow path: it has
// kept unknown fields, was made in an arena with WriteTyped, or lies
// inside a message written in the typed form.
//
// It is one test and one branch: the kept set's address ORed with the
// typed flag.
func (s *Sizer) Keep(c *Core) bool { return uintptr(unsafe.Pointer(c.uk))|uintptr(s.typed) != 0 }

// KeptSizerMark is the state of a message sized by the slow path.
type KeptSizerMark struct {
	mk     SizerMark
	src    *source
	fields []keptField
	i      int
	typed  uint8
}

// BeginKept starts sizing c's message in the typed form.
func (s *Sizer) BeginKept(c *Core) KeptSizerMark {
	src, fs := c.fieldsOf()
	mk := KeptSizerMark{mk: s.Begin(), src: src, fields: fs, typed: s.typed}
	s.typed = 1
	return mk
}

// KeptBefore adds the kept fields numbered below num that are not added yet.
func (s *Sizer) KeptBefore(mk *KeptSizerMark, num int) {
	for mk.i < len(mk.fields) && int(mk.fields[mk.i].num) < num {
		f := mk.fields[mk.i]
		mk.i++
		s.field(int(f.num))
		o := keptOp{src: mk.src, s: s}
		dyn := 0
		if err := o.field(TypedField{Num: int(f.num), Kind: f.kind, Entry: f.entry}, 0, len(mk.src.data), &dyn, s.depth, 0); err != nil {
			s.fail(err)
		}
	}
}

// EndKept adds the remaining kept fields and finishes the message like End,
// with its kind bytes.
func (s *Sizer) EndKept(c *Core, mk *KeptSizerMark) {
	s.KeptBefore(mk, math.MaxInt)
	n := s.count
	s.End(c, mk.mk)
	s.header += kindBytes(n)
	s.typed = mk.typed
}

// Keep reports whether c's message is written by its kept slow path (as
// Sizer.Keep).
func (e *Encoder) Keep(c *Core) bool { return uintptr(unsafe.Pointer(c.uk))|uintptr(e.typed) != 0 }

// KeptEncoderMark is the state of a message written by the slow path.
type KeptEncoderMark struct {
	mk     EncoderMark
	src    *source
	fields []keptField
	i      int
	typed  uint8
	ok     bool
	ents   int // first entry
	kinds  int // first spare (kind) byte, the end of the entries
	nk     int // spare bytes
	done   int // entries whose kind is written
}

// BeginKept starts writing c's message in the typed form (as Begin).
func (e *Encoder) BeginKept(c *Core) KeptEncoderMark {
	src, fs := c.fieldsOf()
	mk := KeptEncoderMark{src: src, fields: fs, typed: e.typed}
	e.typed = 1
	k := kindBytes(int(c.count))
	mk.mk = e.Begin(c)
	if e.err != nil {
		return mk
	}
	if k > e.hdrEnd-e.hdr {
		e.fail(ErrModified)
		return mk
	}
	p := e.dst[e.base:]
	binary.LittleEndian.PutUint32(p, binary.LittleEndian.Uint32(p)|TypedFlag)
	mk.ents, mk.kinds, mk.nk = e.ent, e.entEnd, k
	clear(e.dst[e.hdr : e.hdr+k])
	e.hdr += k
	mk.ok = true
	return mk
}

// Known records kind for the known field just written, if it was present
// (its entry taken since the last call).
func (e *Encoder) Known(mk *KeptEncoderMark, kind Kind) {
	if !mk.ok {
		return
	}
	if k := (e.ent - mk.ents) / EntrySize; k > mk.done && k <= mk.nk {
		e.dst[mk.kinds+k-1] = byte(kind)
		mk.done = k
	}
}

// KeptBefore writes the kept fields numbered below num not written yet.
func (e *Encoder) KeptBefore(mk *KeptEncoderMark, num int) {
	for mk.ok && mk.i < len(mk.fields) && int(mk.fields[mk.i].num) < num {
		f := mk.fields[mk.i]
		mk.i++
		at := e.field(int(f.num))
		if at < 0 {
			return
		}
		o := keptOp{src: mk.src, e: e}
		dyn := 0
		if err := o.field(TypedField{Num: int(f.num), Kind: f.kind, Entry: f.entry}, 0, len(mk.src.data), &dyn, e.depth, at); err != nil {
			e.fail(err)
			return
		}
		e.Known(mk, f.kind)
	}
}

// EndKept writes the remaining kept fields, moves the kind bytes in front
// of the entries and finishes the message like End.
func (e *Encoder) EndKept(mk *KeptEncoderMark) {
	e.KeptBefore(mk, math.MaxInt)
	if mk.ok && e.err == nil && e.ent == e.entEnd && mk.done == (mk.kinds-mk.ents)/EntrySize {
		rotate(e.dst[mk.ents:mk.kinds+mk.nk], mk.kinds-mk.ents)
	} else {
		e.fail(ErrModified)
	}
	e.End(mk.mk)
	e.typed = mk.typed
}

// rotate moves p[:n] to the end of p: p becomes p[n:] followed by p[:n].
func rotate(p []byte, n int) {
	rev := func(q []byte) {
		for i, j := 0, len(q)-1; i < j; i, j = i+1, j-1 {
			q[i], q[j] = q[j], q[i]
		}
	}
	rev(p[:n])
	rev(p[n:])
	rev(p)
}
