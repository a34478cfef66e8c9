package wireimpl

import "github.com/cornflakes-go/cornflakes/mem"

// A segmented input is a serialized object that arrives as a head (its
// header and copied fields, contiguous) followed by further segments that
// live elsewhere, for example in another process's memory mapped
// read-only (datapath/shm): the zero-copy entries of the sender, each one
// segment. DecodeSegments decodes it in place. The head is parsed exactly
// as by Decode (every header, list and nested message lies in it); a bytes
// or string field whose range lies beyond the head is resolved into the
// segment holding it and aliases that segment's memory. A field that
// straddles two segments (a sender never produces one) is copied into the
// arena.
//
// The hooks in the decoder core are two: source.segs, and the calls to
// segRef/segHas from source.checkRef and source.ref (list.go) for ranges
// beyond the head.

// segPart is one segment of a segmented input: its start in the object's
// offset space and its bytes.
type segPart struct {
	start uint32
	data  []byte
}

var segPartType = NewType[segPart]()

// DecodeSegments decodes m from the object that starts at offset off of
// segs[0] and continues, in order, through segs[1:] (the payload is the
// concatenation of segs). hold is a reference that keeps every segment
// alive and unchanged: the arena takes its own reference (Clone), released
// at Reset, and the caller keeps and must still release its own. Decoded
// fields alias the segments until the arena's Reset.
//
// Fields of a segmented input are never zero-copy when the message (or a
// value taken from it) is serialized again: memory outside this process's
// registered spaces is copied (mem.Recover does not know it).
//
// Errors are those of Decode; an object longer than MaxMessageSize, or an
// off beyond segs[0], is malformed.
func DecodeSegments(m Msg, segs [][]byte, off int, hold mem.Buf) error {
	c := m.WireCore()
	a := c.a
	if a == nil {
		return ErrNoArena
	}
	if c.stale() {
		return ErrArenaReset
	}
	if len(segs) == 0 || off < 0 || off > len(segs[0]) {
		return malformed(0, 0, "object offset outside the head segment")
	}
	if !hold.IsZero() {
		if err := hold.Check(); err != nil {
			return err
		}
		a.refs = append(a.refs, hold.Clone())
	}
	head := segs[0][off:]
	total := uint64(len(head))
	for _, s := range segs[1:] {
		total += uint64(len(s))
	}
	if total > MaxMessageSize {
		return malformed(0, 0, "input larger than MaxMessageSize")
	}
	src := a.newSource()
	src.data, src.thr = head, a.Threshold
	if len(segs) > 1 {
		parts := segPartType.NewSlice(a, len(segs)-1)
		at := uint32(len(head))
		for i, s := range segs[1:] {
			parts[i] = segPart{start: at, data: s}
			at += uint32(len(s))
		}
		src.segs = parts
	}
	return decodeAt(m, a, src, 0, len(head), 0)
}

// segFind returns the index of the segment holding [off, off+n), or -1.
func (src *source) segFind(off, n uint32) int {
	end := uint64(off) + uint64(n)
	parts := src.segs
	// Binary search for the last segment starting at or before off.
	lo, hi := 0, len(parts)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if parts[mid].start <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	i := lo - 1
	if i < 0 {
		return -1
	}
	if end > uint64(parts[i].start)+uint64(len(parts[i].data)) {
		return -2 // straddles (or runs past the last segment)
	}
	return i
}

// segHas reports whether [off, off+n), which ends beyond the head, lies
// within the input (across the head and segments, or several segments:
// such a value is copied by segRef).
func (src *source) segHas(off, n uint32) bool {
	if len(src.segs) == 0 {
		return false
	}
	last := src.segs[len(src.segs)-1]
	return uint64(off)+uint64(n) <= uint64(last.start)+uint64(len(last.data))
}

// segRef returns [off, off+n) of the segments (checked by segHas) as a
// copied (never zero-copy) Bytes: aliasing its segment, or a copy in the
// arena when it straddles segments.
func (src *source) segRef(off, n uint32) Bytes {
	if i := src.segFind(off, n); i >= 0 {
		p := src.segs[i]
		o := int(off - p.start)
		return Bytes{data: p.data[o : o+int(n) : o+int(n)]}
	}
	out := src.a.alloc(int(n))
	w := 0
	if uint64(off) < uint64(len(src.data)) { // starts in the head
		w = copy(out, src.data[off:])
	}
	for _, p := range src.segs {
		pend := uint64(p.start) + uint64(len(p.data))
		if pend <= uint64(off) || w == len(out) {
			continue
		}
		from := 0
		if uint64(p.start) < uint64(off)+uint64(w) {
			from = int(uint64(off) + uint64(w) - uint64(p.start))
		}
		w += copy(out[w:], p.data[from:])
	}
	return Bytes{data: out[:n:n]}
}

// loadSegmented is BytesList.Load for a list of a segmented input: its
// elements may lie in later segments, which the in-place view (At reading
// the head) cannot reach, so a checked list is materialized at once.
func (l *BytesList) loadSegmented() error {
	z := &l.lz
	d := z.src.data
	start := int(z.off)
	for i := range int(z.n) {
		at := start + EntrySize*i // the entries were checked by the decoder
		n, off := le32(d[at:]), le32(d[at+4:])
		if !z.src.checkRef(off, n) {
			return malformed(at, z.field(), "list element out of range")
		}
	}
	l.a, l.vep = z.src.a, z.src.epoch+1 // a view for materialize
	l.materialize()
	return nil
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
