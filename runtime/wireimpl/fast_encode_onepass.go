package wireimpl

import (
	"encoding/binary"
)

// The one-pass fused serialization of a nested message (docs/CODEGEN.md,
// "One-pass SerializeSGA").
//
// The two-pass fused path (fast_encode_sga.go) walks the tree twice: once
// for the sizes, because the copied region starts at the header total H
// and the zero-copy offsets at H plus the copied total C, and once to
// write. The one pass walks it once. It writes the headers from 0 (each
// message's bitmap word and entries, its nested messages' headers after
// them, a nested message's {size, offset} entry as soon as its header is
// written: the places of the two-pass path) and the copied values, in
// order, from a provisional base B with their final offsets; it appends
// the zero-copy values to the SGA's entries, in order, with offsets
// counted from 0, and keeps where their entries are. When the walk is
// done, Finish completes it only if H = B: it adds H+C to the zero-copy
// entries' offsets and sizes the head to H+C. The bytes are those of the
// two-pass path.
//
// B is the arena's header total last computed by the two-pass path
// (Core.OnePassBase, which the generated fallback calls after its sizes
// walk), or the capacity of sga.Head when that is less. A message
// serialized again with the same presence pattern (H depends only on
// which fields and nested messages are present, not on the values), the
// steady state of a server, has H = B. A header that would cross B, or a
// walk that ends below it, leaves the message to the two-pass path, which
// learns the new H: a new presence pattern costs one extra walk. (Moving
// the copied block down and correcting the copied entries when H < B would
// need their positions recorded in the walk, which cost more per value
// than the sizes walk the one pass saves on tree5: docs/perf/tree15.md.)
//
// The generated method is
//
//	func (x *M) WireSerializeSGA(sga *SGA) error {
//		var w1 OnePass
//		if x.cf.StartOnePass(&w1, sga) {
//			hdr, cp, zc := x.wireEnc1(&w1, 0, w1.Base(), 0, 0)
//			if w1.Finish(hdr, cp, zc) {
//				return nil
//			}
//		}
//		... the two-pass fused path (which calls x.cf.OnePassBase(hdr)),
//		then the unfused path
//	}
//
// The one pass handles only the common case. Anything else marks the
// OnePass bad and Finish reports false: the two-pass path then serializes
// the message from the start (it resizes sga.Head and empties
// sga.Entries) and reports what it finds (ErrArenaReset, ErrTooDeep,
// ErrTooLarge, a pending nested message it decodes, kept unknown fields,
// ErrBorrowedModified in the checked build). The cases: the root or a
// nested message without an arena, made before its
// arena's last Reset or keeping unknown fields; a nested message not yet
// decoded (Nested.Loaded is nil); the nesting deeper than MaxDepth; the
// headers crossing B or ending before it; a message larger than MaxMessageSize; a count of
// present fields that does not match the entries written (a data race;
// a value another goroutine changes while it is copied is copied as it is
// read, never out of bounds).

// OnePass carries the one-pass walk's state besides its cursors: the head
// (sga.Head up to its capacity, grown when the copied values need more),
// the provisional base of the copied values, where the zero-copy values'
// entries are, and whether the walk met a case it does not handle. It lives on the
// stack of the generated WireSerializeSGA.
type OnePass struct {
	dst  []byte
	sga  *SGA
	a    *Arena
	base int
	zfix []uint32 // the entries of zero-copy values
	bad  bool
}

// StartOnePass prepares w for the one-pass serialization of c's message
// into sga and reports whether that path applies: c has an arena, was made
// since its last Reset and neither keeps unknown fields nor is written in
// the typed form (as Core.DirectOK; in the checked build no borrowed value
// of the batch was modified), and the arena has a base (the first fused
// serialization of the arena takes the two-pass path, which sets it). It
// empties sga.Entries.
func (c *Core) StartOnePass(w *OnePass, sga *SGA) bool {
	a := c.a
	if a == nil || c.epoch != uint32(a.epoch) || c.uk != nil || a.opBase == 0 || a.lentModified() {
		return false
	}
	sga.Entries = sga.Entries[:0]
	w.dst, w.sga, w.a, w.zfix = sga.Head[:cap(sga.Head)], sga, a, a.opZFix[:0]
	w.base = min(a.opBase, len(w.dst))
	return true
}

// Base returns the provisional start of the copied values, the walk's
// first copied cursor.
func (w *OnePass) Base() int { return w.base }

// OnePassBase raises the provisional base of the one pass (OnePass) of
// c's arena to the header total hdr computed by the two-pass path.
func (c *Core) OnePassBase(hdr int) {
	if a := c.a; a != nil && hdr <= MaxMessageSize {
		a.opBase = hdr
	}
}

// Nested reports whether the nested message with core c at nesting depth
// depth (the root is 0) may be written by the one pass: within MaxDepth,
// made since its arena's last Reset and keeping no unknown fields (the
// checks of DirectSizer.Nested). Otherwise it marks w bad and reports false.
func (w *OnePass) Nested(c *Core, depth int) bool {
	if depth > MaxDepth || c.a == nil || c.epoch != uint32(c.a.epoch) || c.uk != nil {
		w.bad = true
		return false
	}
	return true
}

// Begin1 writes, at hdr (never negative: the walk starts at 0 and only
// advances), the bitmap word count and bitmap b0 (n bits set)
// of a message whose fields are numbered 1..32 and returns the offset of
// its first entry and the end of its fixed part; ents is -1 (w marked bad)
// when it would cross the copied values' base.
func (w *OnePass) Begin1(hdr int, b0 uint32, n int) (ents, end int) {
	if b0 == 0 {
		end = hdr + 4
		if end > w.base {
			w.bad = true
			return -1, hdr
		}
		binary.LittleEndian.PutUint32(w.dst[hdr:end], 0)
		return end, end
	}
	ents = hdr + 8
	end = ents + EntrySize*n
	if end > w.base {
		w.bad = true
		return -1, hdr
	}
	binary.LittleEndian.PutUint64(w.dst[hdr:ents], 1|uint64(b0)<<32)
	return ents, end
}

// PutU64 writes the inline scalar entry v at `at` (an entry Begin1
// reserved).
func (w *OnePass) PutU64(at int, v uint64) {
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], v)
}

// PutRef writes the {size, offset} entry at `at` (a nested message's
// header extent).
func (w *OnePass) PutRef(at, size, off int) {
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], uint64(uint32(size))|uint64(uint32(off))<<32)
}

// Bytes writes the entry at `at` (an entry Begin1 reserved) of the present
// value b and places it: copied at cp (the head grown when it lacks room),
// or appended to the SGA's entries at the zero-copy cursor zc. It returns
// the advanced cursors.
func (w *OnePass) Bytes(at, cp, zc int, b *Bytes) (int, int) {
	p := b.data
	n := len(p)
	if b.buf.IsZero() {
		if cp < w.base || n > len(w.dst)-cp {
			if cp < w.base || !w.grow(cp, n) {
				w.bad = true
				return cp, zc
			}
		}
		dst := w.dst
		copy(dst[cp:cp+n], p)
		binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(cp))<<32)
		return cp + n, zc
	}
	binary.LittleEndian.PutUint64(w.dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(zc))<<32)
	w.zfix = append(w.zfix, uint32(at))
	w.sga.Entries = append(w.sga.Entries, b.buf)
	return cp, zc + n
}

// String is Bytes for a string value.
func (w *OnePass) String(at, cp, zc int, s *String) (int, int) { return w.Bytes(at, cp, zc, &s.b) }

// grow gives the head room for n more bytes at cp (at least doubling it),
// keeping what was written; false when that exceeds MaxMessageSize.
func (w *OnePass) grow(cp, n int) bool {
	need := uint64(cp) + uint64(n)
	if need > MaxMessageSize {
		return false
	}
	nd := make([]byte, max(2*need, 512))
	copy(nd, w.dst[:cp])
	w.dst = nd
	return true
}

// Check marks w bad unless the entry cursor at reached the end of the
// fixed part (every field counted in the bitmap was written).
func (w *OnePass) Check(at, end int) {
	if at != end {
		w.bad = true
	}
}

// Finish ends a one-pass serialization whose walk returned the cursors
// hdr (the header total), cp and zc: when hdr is the base (the copied
// values and their offsets are then in place) it adds hdr plus the copied
// total to the zero-copy entries' offsets, sizes sga.Head to the headers
// and the copied values, and reports true. It reports false when the walk
// was marked bad, hdr is not the base, the message is larger than
// MaxMessageSize, or the SGA's entries do not match the zero-copy values
// written (a data race); the caller then takes the two-pass path, which
// rewrites sga from the start.
func (w *OnePass) Finish(hdr, cp, zc int) bool {
	a := w.a
	zfix := w.zfix
	a.opZFix = zfix[:0] // keep the scratch's capacity for the next one
	b := w.base
	c := cp - b
	if w.bad || hdr != b || c < 0 || zc < 0 || uint64(hdr)+uint64(c)+uint64(zc) > MaxMessageSize || len(w.sga.Entries) != len(zfix) {
		return false
	}
	dst := w.dst
	if len(zfix) != 0 {
		d := uint32(hdr + c)
		for _, at := range zfix {
			if int(at) > hdr-EntrySize {
				return false
			}
			e := dst[at+4 : at+8]
			binary.LittleEndian.PutUint32(e, binary.LittleEndian.Uint32(e)+d)
		}
	}
	w.sga.Head = dst[:hdr+c]
	return true
}

// LeafFits reports whether Leaf1Put may write, at the header cursor hdr, a
// nested message whose one present field is b and copy b at cp: b is a
// non-empty copied value, the leaf's header (16 bytes) ends at or before
// the copied values' base, b fits in the head at cp, and the parent's entry
// at `at` lies before hdr. It is small enough to be inlined; when it
// reports false the generated code writes the leaf field by field.
func (w *OnePass) LeafFits(at, hdr, cp int, b *Bytes) bool {
	n := len(b.data)
	return n != 0 && b.buf.IsZero() && hdr+8+EntrySize <= w.base && uint(at) <= uint(hdr-EntrySize) && cp >= w.base && n <= len(w.dst)-cp
}

// Leaf1Put writes what LeafFits checked: the leaf's bitmap word (bit bit)
// and entry at hdr, the parent's {size, offset} entry at `at` and the copy
// of b at cp, and returns the advanced header and copied cursors. It is
// small enough to be inlined.
func (w *OnePass) Leaf1Put(at, hdr, cp int, bit uint32, b *Bytes) (int, int) {
	dst := w.dst
	p := b.data
	h := dst[hdr : hdr+8+EntrySize]
	binary.LittleEndian.PutUint64(h, 1|uint64(bit)<<32)
	binary.LittleEndian.PutUint64(h[8:], uint64(uint32(len(p)))|uint64(uint32(cp))<<32)
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(8+EntrySize)|uint64(uint32(hdr))<<32)
	copy(dst[cp:], p)
	return hdr + 8 + EntrySize, cp + len(p)
}
