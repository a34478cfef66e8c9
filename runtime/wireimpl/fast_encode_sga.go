package wireimpl

import (
	"encoding/binary"
	"slices"
)

// The fused direct serialization into the runtime's own SGA: the sizes and
// the encode of a message on the direct path in one generated method, with
// no interface call and no sizes cached in the arena between them.
//
// The generated method is
//
//	func (x *M) WireSerializeSGA(sga *SGA) error {
//		var ds DirectSizer
//		if x.cf.StartDirectSizes(&ds) {
//			hdr, cp, zc, ents := x.wireSizeDirect(&ds, 0, 0, 0, 0, 0)
//			var dw DirectWriter
//			if x.cf.StartDirectSGA(&dw, &ds, sga, hdr, cp, zc, ents) ||
//				x.cf.StartDirectSGAGrow(&dw, &ds, sga, hdr, cp, zc, ents) {
//				hdr, cp, zc = x.wireEncDirect(&dw, 0, hdr, hdr+cp, 0)
//				return dw.FinishSGA(hdr, cp, zc)
//			}
//		}
//		sz := x.Sizes()
//		sga.Reset(sz.Header + sz.Copied)
//		return x.Serialize(sga.Head, sga)
//	}
//
// The last three lines are the unfused path (Sizes, then Serialize): a
// message without an arena, made before its arena's last Reset, keeping
// unknown fields, or holding a nested message that does, and every error
// (which the unfused path finds again and reports as before).

// SGAWriter is implemented by generated messages on the direct encode
// path: WireSerializeSGA computes the message's sizes, sizes sga.Head to
// its head and empties sga.Entries, and serializes the message into sga
// (wire.SerializeSGA calls it). Its errors are those of Sizes followed by
// Serialize.
type SGAWriter interface {
	WireSerializeSGA(sga *SGA) error
}

// Reset sizes s.Head to head bytes (reusing its array when it is large
// enough) and empties s.Entries. The previous entries are not cleared:
// they are borrowed handles the SGA never releases.
func (s *SGA) Reset(head int) {
	if cap(s.Head) < head {
		s.Head = make([]byte, head)
	}
	s.Head = s.Head[:head]
	s.Entries = s.Entries[:0]
}

// StartDirectSGA prepares w for writing c's message into sga once the
// direct sizes methods have returned the cursors hdr, cp, zc and ents, and
// reports whether it did. It does only in the common case, where it is
// small enough to be inlined: no sizing error, no nested message on the
// Sizer path, the message not too large, sga.Head's array holding hdr+cp
// bytes and sga.Entries room for ents entries. It then sizes sga.Head to
// hdr+cp bytes and empties sga.Entries; the encode cursors start at 0
// (header), hdr (copied) and hdr+cp (zero-copy). Otherwise it changes
// nothing and the caller tries StartDirectSGAGrow.
func (c *Core) StartDirectSGA(w *DirectWriter, s *DirectSizer, sga *SGA, hdr, cp, zc, ents int) bool {
	head := hdr + cp
	if s.err != nil || s.slow || uint64(head)+uint64(zc) > MaxMessageSize || cap(sga.Head) < head || cap(sga.Entries) < ents {
		return false
	}
	sga.Head = sga.Head[:head]
	sga.Entries = sga.Entries[:0]
	w.dst, w.hdrEnd, w.sga, w.zEnd, w.nEnts = sga.Head, hdr, sga, head+zc, ents
	return true
}

// StartDirectSGAGrow is StartDirectSGA for every case: it grows sga.Head
// and sga.Entries when they are too small, and reports false (changing
// nothing) when the sizing recorded an error, the message is too large, or
// a nested message needs the Sizer path; the caller then takes the unfused
// path.
func (c *Core) StartDirectSGAGrow(w *DirectWriter, s *DirectSizer, sga *SGA, hdr, cp, zc, ents int) bool {
	if s.err != nil || s.slow {
		return false
	}
	if uint64(hdr)+uint64(cp)+uint64(zc) > MaxMessageSize {
		return false
	}
	head := hdr + cp
	sga.Reset(head)
	w.dst = sga.Head
	if cap(sga.Entries) < ents { // room for every zero-copy entry (TryZeroCopy)
		sga.grow(ents)
	}
	w.hdrEnd, w.sga, w.zEnd, w.nEnts = hdr, sga, head+zc, ents
	return true
}

// FinishSGA ends a fused direct serialization: the first recorded error,
// or ErrModified when the final cursors or the number of zero-copy entries
// differ from the sizes StartDirectSGA was given (which cannot happen
// unless the message changed while it was written: another goroutine,
// which is a data race).
func (w *DirectWriter) FinishSGA(hdr, cp, zc int) error {
	if w.err != nil {
		return w.err
	}
	if w.modified || (hdr^w.hdrEnd)|(cp^len(w.dst))|(zc^w.zEnd)|(len(w.sga.Entries)-w.nEnts) != 0 {
		return ErrModified
	}
	return nil
}

// TryZeroCopy writes the entry at `at` of the present value b and appends
// b's reference to the SGA when b is a zero-copy value and the SGA's
// entries have room (StartDirectSGA reserves it for every zero-copy entry
// the sizes counted), returning the advanced zero-copy cursor and true;
// otherwise it writes nothing and returns false (the generated code then
// calls PutBytes). It is small enough to be inlined.
func (w *DirectWriter) TryZeroCopy(at, zc int, b *Bytes) (int, bool) {
	es := w.sga.Entries
	if j := len(es); j < cap(es) && !b.buf.IsZero() {
		n := len(b.data)
		binary.LittleEndian.PutUint64(w.dst[at:], uint64(uint32(n))|uint64(uint32(zc))<<32)
		es = es[:j+1]
		es[j] = b.buf
		w.sga.Entries = es
		return zc + n, true
	}
	return zc, false
}

// grow gives s.Entries (empty) room for n entries.
func (s *SGA) grow(n int) { s.Entries = slices.Grow(s.Entries, n) }
