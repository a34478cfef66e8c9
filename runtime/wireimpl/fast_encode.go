package wireimpl

import (
	"encoding/binary"
)

// The generated direct path (docs/CODEGEN.md, "Direct Sizes and Serialize").
//
// For a message whose fields are scalars, bytes, strings, lists of bytes or
// strings and nested messages of the same kind, all numbered 1..32 (one
// bitmap word), the generator emits two recursive methods that keep every cursor
// in arguments and results instead of a Sizer or Encoder:
//
//	wireSizeDirect(s *DirectSizer, hdr, cp, zc, ents, depth int) (hdr, cp, zc, ents int)
//	wireEncDirect(w *DirectWriter, hdr, cp, zc, depth int) (hdr, cp, zc int)
//
// The encode method writes its bitmap word and entries with one bounds
// check (Begin1), fills the entries in field order at a local offset and
// calls its nested messages' methods statically. Errors are rare and are
// recorded in the DirectSizer or DirectWriter (which live on the caller's
// stack); every write is bounds-checked against the cached sizes, and
// FinishDirect compares the final cursors and the number of zero-copy
// entries with them (ErrModified). The wire bytes are the same as those of
// the Sizer/Encoder path, which every other message (and a message without
// an arena, or a sink that is not an *SGA) keeps using.

// DirectSizer carries what the direct sizes methods need besides their
// cursors: the arena (to decode pending nested messages and lists) and the
// first error.
type DirectSizer struct {
	a   *Arena
	err error
	// slow: a nested message keeps unknown fields or is written in the
	// typed form (Core.uk); the whole tree is then sized and written by the
	// Sizer/Encoder path, which merges them (unknown_keep_write.go).
	slow bool
}

// StartDirectSizes prepares s for computing the sizes of c's message on
// the direct path and reports whether that path applies: c has an arena
// was made since its last Reset, and neither keeps unknown fields nor is
// written in the typed form. Otherwise the generated Sizes uses the Sizer
// path (which reports ErrArenaReset, sizes a message without an arena, or
// merges the kept fields). In the checked build a borrowed value of the
// batch that was modified is recorded as ErrBorrowedModified.
func (c *Core) StartDirectSizes(s *DirectSizer) bool {
	a := c.a
	if a == nil || c.stale() || c.uk != nil {
		return false
	}
	s.a = a
	if a.lentModified() { // borrow_check_on.go (false outside the checked build)
		s.Fail(ErrBorrowedModified)
	}
	return true
}

// FinishDirectSizes returns the sizes the direct methods computed for c's
// message m (whose core is c) and caches them in the arena for a following
// Serialize, like FinishSizes. When a nested message turned out to need
// the Sizer path (DirectSizer.Nested), it sizes m on that path instead.
func (c *Core) FinishDirectSizes(m Msg, s *DirectSizer, hdr, cp, zc, ents int) Sizes {
	if s.slow {
		sz, _ := sizesOf(m, c)
		return sz
	}
	sz := Sizes{Header: hdr, Copied: cp, ZeroCopy: zc, Entries: ents}
	err := s.err
	if err == nil && uint64(hdr)+uint64(cp)+uint64(zc) > MaxMessageSize {
		err = ErrTooLarge
	}
	a := c.a
	a.szFor, a.sz, a.szErr, a.szDirect = c, sz, err, true
	return sz
}

// Arena returns the arena of the message being sized.
func (s *DirectSizer) Arena() *Arena { return s.a }

// Fail records err (the first one is kept and reported by Serialize).
func (s *DirectSizer) Fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Nested reports whether a nested message with core c at nesting depth
// depth (the root is 0) may be sized: within MaxDepth (ErrTooDeep) and made
// since its arena's last Reset (ErrArenaReset, checked before its memory,
// which the arena may have handed out again, is read).
func (s *DirectSizer) Nested(c *Core, depth int) bool {
	if depth > MaxDepth {
		s.Fail(ErrTooDeep)
		return false
	}
	if c.stale() {
		s.Fail(ErrArenaReset)
		return false
	}
	if c.uk != nil {
		s.slow = true
		return false
	}
	return true
}

// Fixed1 returns the size of the fixed part (bitmap word count, bitmap,
// entries) of a message with n present fields, all numbered 1..32.
func Fixed1(n int) int {
	if n == 0 {
		return 4
	}
	return 8 + EntrySize*n
}

// SizeDirect adds the present value b to the copied or zero-copy cursors.
func (b *Bytes) SizeDirect(cp, zc, ents int) (int, int, int) {
	if b.buf.IsZero() {
		return cp + len(b.data), zc, ents
	}
	return cp, zc + len(b.data), ents + 1
}

// SizeDirect adds the present value s to the copied or zero-copy cursors.
func (s *String) SizeDirect(cp, zc, ents int) (int, int, int) { return s.b.SizeDirect(cp, zc, ents) }

// DirectWriter carries what the direct encode methods need besides their
// cursors: the head buffer, the end of its header region, the SGA the
// zero-copy entries are appended to, and the first error. It lives on the
// stack of the generated Serialize.
type DirectWriter struct {
	dst    []byte
	hdrEnd int
	sga    *SGA
	ents0  int // len(sga.Entries) at the start
	err    error
	// modified: a write did not fit the cached sizes (ErrModified, unless
	// an error was recorded in err); set without a call by the inlined
	// Begin1.
	modified bool
	// zEnd, nEnts: the end of the zero-copy offsets and the number of
	// zero-copy entries the fused path (StartDirectSGA) expects.
	zEnd, nEnts int
}

// StartDirect prepares w for serializing c's message into dst (exactly
// Sizes().Head() bytes) with its zero-copy entries appended to sink, using
// the sizes cached by the message's last Sizes, and reports whether the
// direct path applies. It does not when c has no arena, its sizes are not
// the ones cached (or hold an error), dst has the wrong length, or sink is
// not an *SGA: the generated Serialize then takes the Encoder path, which
// computes the sizes or reports the error (ErrDstSize, ...). The cursors
// start at 0 (header) and w.Cursors() (copied, zero-copy).
func (c *Core) StartDirect(w *DirectWriter, dst []byte, sink EntrySink) bool {
	a := c.a
	if a == nil || a.szFor != c || !a.szDirect || a.szErr != nil || len(dst) != a.sz.Header+a.sz.Copied {
		return false
	}
	sga, isSGA := sink.(*SGA)
	if !isSGA || sga == nil {
		return false
	}
	w.dst, w.hdrEnd, w.sga, w.ents0 = dst, a.sz.Header, sga, len(sga.Entries)
	return true
}

// Cursors returns the start of the copied region and of the zero-copy
// offsets (the end of the header region and of the head).
func (w *DirectWriter) Cursors() (cp, zc int) { return w.hdrEnd, len(w.dst) }

// FinishDirect ends a direct serialization: the first recorded error, or
// ErrModified when the final cursors or the number of zero-copy entries
// differ from the sizes cached for c (the message changed since Sizes).
func (c *Core) FinishDirect(w *DirectWriter, hdr, cp, zc int) error {
	if w.err != nil {
		return w.err
	}
	sz := &c.a.sz
	if w.modified {
		return ErrModified
	}
	if (hdr^sz.Header)|(cp^(sz.Header+sz.Copied))|(zc^(sz.Header+sz.Copied+sz.ZeroCopy))|(len(w.sga.Entries)-w.ents0-sz.Entries) != 0 {
		return ErrModified
	}
	return nil
}

// Fail records err (the first one is kept).
func (w *DirectWriter) Fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Begin1 writes, at hdr, the bitmap word count and bitmap b0 (n bits set:
// the generated code counts them as it sets them) of a message whose
// fields are numbered 1..32 and returns the offset of its first
// entry and the end of its fixed part (where its lists and nested messages
// follow). ents is -1 (ErrModified recorded) when the fixed part does not
// fit in the header region of the cached sizes.
func (w *DirectWriter) Begin1(hdr int, b0 uint32, n int) (ents, end int) {
	// Small enough to be inlined into generated code: a failure is flagged
	// (FinishDirect reports it) rather than recorded by a call.
	if b0 == 0 {
		end = hdr + 4
		if end > w.hdrEnd || hdr < 0 {
			w.modified = true
			return -1, hdr
		}
		binary.LittleEndian.PutUint32(w.dst[hdr:end], 0)
		return end, end
	}
	ents = hdr + 8
	end = ents + EntrySize*n
	if end > w.hdrEnd || hdr < 0 {
		w.modified = true
		return -1, hdr
	}
	binary.LittleEndian.PutUint64(w.dst[hdr:ents], 1|uint64(b0)<<32)
	return ents, end
}

// PutU64 writes the inline scalar entry v at `at` (an entry Begin1
// reserved).
func (w *DirectWriter) PutU64(at int, v uint64) {
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], v)
}

// PutRef writes the {size, offset} entry at `at` (a nested message's
// header extent).
func (w *DirectWriter) PutRef(at, size, off int) {
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], uint64(uint32(size))|uint64(uint32(off))<<32)
}

// PutBytes writes the entry at `at` of the present value b and places it:
// appended to the SGA as a zero-copy entry, or copied at cp. It returns the
// advanced cursors (unchanged, with ErrModified recorded, when a copied
// value does not fit).
func (w *DirectWriter) PutBytes(at, cp, zc int, b *Bytes) (int, int) {
	n := len(b.data)
	if !b.buf.IsZero() {
		binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(zc))<<32)
		w.sga.Entries = append(w.sga.Entries, b.buf)
		return cp, zc + n
	}
	return w.putCopied(at, cp, zc, b.data)
}

// TryCopied writes the entry at `at` of the present value b and copies it
// at cp when b is a copied value that fits, returning the advanced copied
// cursor and true; otherwise it writes nothing and returns false (the
// generated code then calls PutBytes). It is small enough to be inlined.
func (w *DirectWriter) TryCopied(at, cp int, b *Bytes) (int, bool) {
	p := b.data
	n := len(p)
	if !b.buf.IsZero() || cp < w.hdrEnd || n > len(w.dst)-cp {
		return cp, false
	}
	copy(w.dst[cp:cp+n], p)
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(cp))<<32)
	return cp + n, true
}

// PutString is PutBytes for a string value.
func (w *DirectWriter) PutString(at, cp, zc int, s *String) (int, int) {
	return w.PutBytes(at, cp, zc, &s.b)
}

func (w *DirectWriter) putCopied(at, cp, zc int, p []byte) (int, int) {
	n := len(p)
	if cp < w.hdrEnd || n > len(w.dst)-cp {
		w.Fail(ErrModified)
		return cp, zc
	}
	copy(w.dst[cp:cp+n], p)
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(cp))<<32)
	return cp + n, zc
}

// Nested reports whether a nested message at nesting depth depth (the root
// is 0) may be written (ErrTooDeep otherwise).
func (w *DirectWriter) Nested(depth int) bool {
	if depth > MaxDepth {
		w.Fail(ErrTooDeep)
		return false
	}
	return true
}

// Check records ErrModified unless the entry cursor at reached the end of
// the fixed part (every field counted in the bitmap was written).
func (w *DirectWriter) Check(at, end int) {
	if at != end {
		w.modified = true
	}
}

// LeafCopied1 writes, at the header cursor hdr, a nested message whose one
// present field is the copied value b with bitmap bit bit (its only field:
// bitmap word, one entry), copies b at cp and writes the parent's
// {size, offset} entry for it at `at`, and returns the advanced header and
// copied cursors and true: the parent's whole encode of such a leaf in one
// call, with one bounds check of each region. When b is empty or
// zero-copy, or a region does not fit (the parent's entry at `at` lies
// before hdr), it writes nothing and returns false: the generated code
// then writes the leaf field by field (Begin1, PutBytes, PutRef), which
// records ErrModified where needed.
func (w *DirectWriter) LeafCopied1(at, hdr, cp int, bit uint32, b *Bytes) (int, int, bool) {
	p := b.data
	n := len(p)
	dst := w.dst
	end := hdr + 8 + EntrySize
	if n == 0 || !b.buf.IsZero() || at < 0 || at > hdr-EntrySize || end > w.hdrEnd || cp < w.hdrEnd || n > len(dst)-cp {
		return hdr, cp, false
	}
	h := dst[hdr:end]
	binary.LittleEndian.PutUint64(h, 1|uint64(bit)<<32)
	binary.LittleEndian.PutUint64(h[8:], uint64(uint32(n))|uint64(uint32(cp))<<32)
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(8+EntrySize)|uint64(uint32(hdr))<<32)
	copy(dst[cp:cp+n], p)
	return end, cp + n, true
}
