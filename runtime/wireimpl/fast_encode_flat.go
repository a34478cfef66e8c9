package wireimpl

import (
	"encoding/binary"
	"slices"
)

// The flat fused path (docs/CODEGEN.md, "Flat messages"): for a message on
// the direct path without nested message fields (its fields scalars,
// bytes, strings and lists of bytes or strings, all numbered 1..32), the
// generated WireSerializeSGA computes the sizes and writes the message in
// one function with every cursor, the bitmap and the head buffer in
// locals:
//
//	func (x *M) WireSerializeSGA(sga *SGA) error {
//		if x.cf.DirectOK() {
//			// sizes: b0, n, hdr, cp, zc, ents (lists: SizeFlat)
//			if uint64(hdr+cp)+uint64(zc) <= MaxMessageSize {
//				if !sga.StartFlat(hdr+cp, ents) {
//					sga.GrowFlat(hdr+cp, ents)
//				}
//				dst := sga.Head
//				at := PutWord1(dst, b0, n)
//				// each present field's entry at `at` (PutEntry, CopyFlat,
//				// ZeroCopyFlat; lists: DirectWriter.PutBytesList)
//				if !bad && FlatDone(...) {
//					return nil
//				}
//				return ErrModified
//			}
//		}
//		// the unfused path: Sizes, then Serialize
//	}
//
// Presence is evaluated once (the bitmap computed by the sizes is the one
// written), so the header layout is fixed by the sizes; a value whose
// length or kind changed in between (a data race) makes a bounds-checked
// write fail or the final cursors differ, and the result is ErrModified,
// as on the direct path. The wire bytes are those of the direct path.

// DirectOK reports whether c's message may be written on the direct path:
// it has an arena, was made since the arena's last Reset, and neither
// keeps unknown fields nor is written in the typed form (the conditions
// of StartDirectSizes). Otherwise the generated code takes the unfused
// path, which reports ErrArenaReset, serializes a message without an
// arena, or merges the kept fields. In the checked build it also reports
// false when a borrowed value of the batch was modified (the unfused path
// then reports ErrBorrowedModified).
func (c *Core) DirectOK() bool {
	a := c.a
	return a != nil && c.epoch == uint32(a.epoch) && c.uk == nil && !a.lentModified()
}

// StartFlat sizes s.Head to head bytes and empties s.Entries, and reports
// true, when they have room for head bytes and ents entries; otherwise it
// changes nothing and reports false, and the caller calls GrowFlat. The
// caller has checked that the message (head plus its zero-copy bytes) is
// at most MaxMessageSize (else it takes the unfused path, which reports
// ErrTooLarge). It is small enough to be inlined.
func (s *SGA) StartFlat(head, ents int) bool {
	if cap(s.Head) < head || cap(s.Entries) < ents {
		return false
	}
	s.Head = s.Head[:head]
	s.Entries = s.Entries[:0]
	return true
}

// GrowFlat is StartFlat when s.Head or s.Entries must grow: it sizes
// s.Head to head bytes (reusing its array when it is large enough) and
// empties s.Entries with room for ents entries.
func (s *SGA) GrowFlat(head, ents int) {
	if cap(s.Head) < head {
		s.Head = make([]byte, head)
	}
	s.Head = s.Head[:head]
	s.Entries = slices.Grow(s.Entries[:0], ents)
}

// PutWord1 writes at the start of dst the bitmap word count and bitmap b0
// of a message with n present fields, all numbered 1..32 (as Begin1), and
// returns the offset of its first entry (the end of the bitmap).
func PutWord1(dst []byte, b0 uint32, n int) int {
	if n == 0 {
		binary.LittleEndian.PutUint32(dst[:4], 0)
		return 4
	}
	binary.LittleEndian.PutUint64(dst[:8], 1|uint64(b0)<<32)
	return 8
}

// PutEntry writes the 8-byte entry v (an inline scalar) at `at` in dst.
func PutEntry(dst []byte, at int, v uint64) {
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], v)
}

// CopyFlat copies the present value b at cp in dst and writes its entry at
// `at` when b is a copied value that fits, returning the advanced copied
// cursor and true; otherwise it writes nothing and returns false. It is
// small enough to be inlined.
func (b *Bytes) CopyFlat(dst []byte, at, cp int) (int, bool) {
	p := b.data
	n := len(p)
	if !b.buf.IsZero() || n > len(dst)-cp {
		return cp, false
	}
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(cp))<<32)
	copy(dst[cp:cp+n], p)
	return cp + n, true
}

// ZeroCopyFlat writes, at `at` in dst, the entry of the present value b at
// the zero-copy offset zc and appends b's reference to s.Entries when b is
// a zero-copy value and the entries have room (StartFlat reserved it for
// every zero-copy value the sizes counted), returning the advanced
// zero-copy cursor and true; otherwise it writes nothing and returns
// false. It is small enough to be inlined.
func (s *SGA) ZeroCopyFlat(dst []byte, at, zc int, b *Bytes) (int, bool) {
	es := s.Entries
	if j := len(es); j < cap(es) && !b.buf.IsZero() {
		n := len(b.data)
		binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(zc))<<32)
		es = es[:j+1]
		es[j] = b.buf
		s.Entries = es
		return zc + n, true
	}
	return zc, false
}

// CopyFlat is Bytes.CopyFlat for a string value.
func (v *String) CopyFlat(dst []byte, at, cp int) (int, bool) { return v.b.CopyFlat(dst, at, cp) }

// ZeroCopyFlatString is ZeroCopyFlat for a string value.
func (s *SGA) ZeroCopyFlatString(dst []byte, at, zc int, v *String) (int, bool) {
	es := s.Entries
	if j := len(es); j < cap(es) && !v.b.buf.IsZero() {
		n := len(v.b.data)
		binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(zc))<<32)
		es = es[:j+1]
		es[j] = v.b.buf
		s.Entries = es
		return zc + n, true
	}
	return zc, false
}

// BindFlat prepares w for writing the lists of a message on the flat path
// into dst (the SGA's head, whose header region ends at hdrEnd) with their
// zero-copy elements appended to sga: the list writers (PutBytesList,
// PutStringList) then check their writes as on the direct path, and
// Failed reports a write that did not fit.
func (w *DirectWriter) BindFlat(dst []byte, hdrEnd int, sga *SGA) {
	w.dst, w.hdrEnd, w.sga = dst, hdrEnd, sga
}

// Failed reports whether a write through w did not fit (ErrModified) or
// recorded an error.
func (w *DirectWriter) Failed() bool { return w.modified || w.err != nil }

// FlatDone reports whether a flat write ended where the sizes said: the
// list entries at hdr (the end of the header region), the copied values at
// head (the end of the head buffer), the zero-copy values at end and ents
// zero-copy entries in sga.
func (s *SGA) FlatDone(lh, hdr, cp, head, zc, end, ents int) bool {
	return (lh^hdr)|(cp^head)|(zc^end)|(len(s.Entries)^ents) == 0
}

// SizeFlat adds the list l (a decoded list is loaded first, with the
// arena a) to the header, copied and zero-copy cursors (from the list's
// kept totals when they hold, without a walk) and reports true:
// an absent (empty) list leaves hdr unchanged. When the list fails to
// load it reports false (the caller then takes the unfused path, which
// reports the error).
func (l *BytesList) SizeFlat(a *Arena, hdr, cp, zc, ents int) (int, int, int, int, bool) {
	if l.lz.src != nil {
		if l.lz.n == 0 {
			return hdr, cp, zc, ents, true
		}
		if l.Load(a) != nil {
			return hdr, cp, zc, ents, false
		}
		l.materialize()
	}
	items := l.items
	hdr += EntrySize * len(items)
	if l.tok { // the kept totals (a list built with Init and Append)
		return hdr, cp + l.tot.cp, zc + l.tot.zc, ents + int(l.tot.nz), true
	}
	cp, zc, ents = sizeItems(items, cp, zc, ents)
	return hdr, cp, zc, ents, true
}

// SizeFlat is BytesList.SizeFlat for a list of strings.
func (l *StringList) SizeFlat(a *Arena, hdr, cp, zc, ents int) (int, int, int, int, bool) {
	if l.lz.src != nil {
		if l.lz.n == 0 {
			return hdr, cp, zc, ents, true
		}
		if l.Load(a) != nil {
			return hdr, cp, zc, ents, false
		}
	}
	items := l.items
	hdr += EntrySize * len(items)
	cp, zc, ents = sizeStringItems(items, cp, zc, ents)
	return hdr, cp, zc, ents, true
}

// OneCopied returns the length of the only element of l when l is built
// (not a decoded list still to load) and holds one copied value, the
// common small list, and true; otherwise 0 and false (the caller then
// calls SizeFlat). The caller writes such a list with PutOneCopied. It is
// small enough to be inlined.
func (l *BytesList) OneCopied() (int, bool) {
	if items := l.items; len(items) == 1 && l.lz.src == nil && items[0].buf.IsZero() {
		return len(items[0].data), true
	}
	return 0, false
}

// PutOneCopied writes the list l when it holds one copied value (as
// OneCopiedValue reported for the sizes): the element's {size, offset}
// entry at lh (which must end by hdr, the end of the header region), the
// list's {count, offset} entry at `at` (before lh) and the value at cp (at
// or after hdr) in dst, and returns the advanced copied cursor and true. Otherwise (only a
// data race between the sizes and the write can make it so) it writes
// nothing and returns false. It is small enough to be inlined: the write
// of a one-element list costs no call but the copy.
func (l *BytesList) PutOneCopied(dst []byte, at, lh, hdr, cp int) (int, bool) {
	if items := l.items; len(items) == 1 {
		p := items[0].data // copied (the sizes' OneCopied), or sent copied all the same
		k := len(p)
		if uint(lh) <= uint(hdr-EntrySize) && uint(k) <= uint(len(dst)-cp) {
			// k, cp and lh are below 2^32: dst is at most MaxMessageSize.
			binary.LittleEndian.PutUint64(dst[lh:], uint64(k)|uint64(cp)<<32)
			binary.LittleEndian.PutUint64(dst[at:], 1|uint64(lh)<<32)
			copy(dst[cp:], p)
			return cp + k, true
		}
	}
	return cp, false
}

// PutFlat writes the present list l on the flat path in one walk of its
// elements: the list's {count, offset} entry at `at` in dst, the element
// entries from lh (they must end by hdr, the end of the header region),
// and for each element in the same step either its value, copied at the
// copied cursor cp (at or after hdr), or its reference, appended to
// sga.Entries (StartFlat reserved room for every zero-copy value the sizes
// counted) at the zero-copy cursor zc. It returns the advanced cursors
// (the element entries' end, cp, zc) and true. When a write does not fit
// (only a data race between the sizes and the write can make it so) it
// stops, leaves sga.Entries unchanged and returns false; the caller then
// reports ErrModified and sends nothing. The wire bytes are those of
// DirectWriter.PutBytesList.
func (l *BytesList) PutFlat(dst []byte, at, lh, hdr, cp, zc int, sga *SGA) (int, int, int, bool) {
	items := l.items
	n := len(items)
	end := lh + EntrySize*n
	if at < 0 || at > lh-EntrySize || end > hdr || hdr > cp || cp > len(dst) {
		return lh, cp, zc, false
	}
	// Few values live across the copy's call (each is reloaded after it):
	// the element entries are written at e in dst, and the references
	// appended to sga.Entries in place (cut back on a failure).
	j0 := len(sga.Entries)
	e := lh
	for i := range items {
		b := &items[i]
		k := len(b.data)
		if b.buf.IsZero() {
			if k > len(dst)-cp {
				sga.Entries = sga.Entries[:j0]
				return lh, cp, zc, false
			}
			binary.LittleEndian.PutUint64(dst[e:e+EntrySize], uint64(uint32(k))|uint64(uint32(cp))<<32)
			copy(dst[cp:], b.data)
			cp += k
		} else {
			es := sga.Entries
			j := len(es)
			if j >= cap(es) {
				sga.Entries = es[:j0]
				return lh, cp, zc, false
			}
			binary.LittleEndian.PutUint64(dst[e:e+EntrySize], uint64(uint32(k))|uint64(uint32(zc))<<32)
			zc += k
			sga.Entries = append(es, b.buf) // within its capacity: no growth
		}
		e += EntrySize
	}
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(lh))<<32)
	return end, cp, zc, true
}

// PutFlat is BytesList.PutFlat for a list of strings (the same wire form).
func (l *StringList) PutFlat(dst []byte, at, lh, hdr, cp, zc int, sga *SGA) (int, int, int, bool) {
	items := l.items
	n := len(items)
	end := lh + EntrySize*n
	if at < 0 || at > lh-EntrySize || end > hdr || hdr > cp || cp > len(dst) {
		return lh, cp, zc, false
	}
	ents := dst[lh:end]
	es := sga.Entries
	j := len(es)
	for i := range items {
		b := &items[i].b
		k := len(b.data)
		e := ents[EntrySize*i : EntrySize*i+EntrySize]
		if b.buf.IsZero() {
			if k > len(dst)-cp {
				return lh, cp, zc, false
			}
			binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(cp))<<32)
			copy(dst[cp:cp+k], b.data)
			cp += k
		} else {
			if j >= cap(es) {
				return lh, cp, zc, false
			}
			binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(zc))<<32)
			zc += k
			es = es[:j+1]
			es[j] = b.buf
			j++
		}
	}
	sga.Entries = es
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(lh))<<32)
	return end, cp, zc, true
}

// FlatWriter is implemented by the generated messages whose fields are
// all scalars, bytes or strings numbered 1..32 (no list, map or nested
// message: docs/CODEGEN.md, "Flat messages written in place"). Their
// WireWriteFlat writes the whole message, header and copied values, at the
// start of dst in one straight-line function, when it holds no zero-copy
// value: the bytes WireSerializeSGA would put in its head, with no entry.
// It returns the number of bytes written, or -1 having written nothing
// the caller may use (dst may hold garbage up to its length) when the
// message is not on the direct path (no arena, stale, kept unknown
// fields, the typed form, a borrowed value modified in the checked build),
// holds a zero-copy value, or does not fit in dst: the caller then calls
// WireSerializeSGA, which decides and reports every case.
type FlatWriter interface {
	WireWriteFlat(dst []byte) int
}

// StartWriteFlat begins WireWriteFlat: it writes at the start of dst the
// bitmap word count and bitmap b0 of a message with n present fields, all
// numbered 1..32 (as PutWord1), and returns the offset of the first entry
// and the end of the header (the copied values' cursor). When dst is too
// short for the header it writes nothing and returns at = -1. It is small
// enough to be inlined.
func StartWriteFlat(dst []byte, b0 uint32, n int) (at, hdr int) {
	if n == 0 {
		if len(dst) < 4 {
			return -1, 0
		}
		binary.LittleEndian.PutUint32(dst[:4], 0)
		return 4, 4
	}
	hdr = 8 + EntrySize*n // n <= 32
	if len(dst) < hdr {
		return -1, 0
	}
	binary.LittleEndian.PutUint64(dst[:8], 1|uint64(b0)<<32)
	return 8, hdr
}

// EndWriteFlat ends WireWriteFlat: it returns the message's length cp (the
// copied cursor after the last value) when the entries ended at hdr, the
// end of the header, and the message is at most MaxMessageSize; else -1.
// It is small enough to be inlined.
func EndWriteFlat(at, hdr, cp int) int {
	if at != hdr || cp > MaxMessageSize {
		return -1
	}
	return cp
}
