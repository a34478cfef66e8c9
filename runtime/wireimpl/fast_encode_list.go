package wireimpl

import "encoding/binary"

// The direct path's lists (fast_encode.go): sizes and writes of lists of
// bytes and strings, each element's entry written in one loop with the
// cursors in registers.

// SizeDirect adds the list l (a decoded list is loaded first) to the
// cursors and reports whether it is present (not empty). A load error is
// recorded in s and the list counts as absent.
func (l *BytesList) SizeDirect(s *DirectSizer, hdr, cp, zc, ents int) (int, int, int, int, bool) {
	if l.lz.src != nil {
		if l.lz.n == 0 {
			return hdr, cp, zc, ents, false
		}
		if err := l.Load(s.a); err != nil {
			s.Fail(err)
			return hdr, cp, zc, ents, false
		}
		l.materialize()
	}
	items := l.items
	if len(items) == 0 {
		return hdr, cp, zc, ents, false
	}
	hdr += EntrySize * len(items)
	for i := range items {
		b := &items[i]
		if b.buf.IsZero() {
			cp += len(b.data)
		} else {
			zc += len(b.data)
			ents++
		}
	}
	return hdr, cp, zc, ents, true
}

// SizeDirect adds the list l (a decoded list is loaded first) to the
// cursors and reports whether it is present (not empty). A load error is
// recorded in s and the list counts as absent.
func (l *StringList) SizeDirect(s *DirectSizer, hdr, cp, zc, ents int) (int, int, int, int, bool) {
	if l.lz.src != nil {
		if l.lz.n == 0 {
			return hdr, cp, zc, ents, false
		}
		if err := l.Load(s.a); err != nil {
			s.Fail(err)
			return hdr, cp, zc, ents, false
		}
	}
	items := l.items
	if len(items) == 0 {
		return hdr, cp, zc, ents, false
	}
	hdr += EntrySize * len(items)
	for i := range items {
		b := &items[i].b
		if b.buf.IsZero() {
			cp += len(b.data)
		} else {
			zc += len(b.data)
			ents++
		}
	}
	return hdr, cp, zc, ents, true
}

// PutBytesList writes the entry at `at` of the present list l, its element
// entries at the header cursor hdr and each element's value (copied or
// zero-copy), and returns the advanced cursors. A list whose region or
// copied values do not fit records ErrModified and leaves the cursors (and
// the SGA's entries) unchanged.
//
// One pass with the cursors in registers: each element's entry, then its
// copy into the head (checked against the head buffer first) or its SGA
// entry (appended into the room StartDirectSGA reserved, so no allocation
// once the sink has grown). The SGA's entry slice is stored once, at the
// end, and only when a zero-copy element was appended.
func (w *DirectWriter) PutBytesList(at, hdr, cp, zc int, l *BytesList) (int, int, int) {
	items := l.items
	r := hdr + EntrySize*len(items)
	dst := w.dst
	if hdr < 0 || r > w.hdrEnd || cp < w.hdrEnd || cp > len(dst) {
		w.modified = true
		return hdr, cp, zc
	}
	ents := dst[hdr:r]
	es := w.sga.Entries
	j0 := len(es)
	c, z := cp, zc
	for i := range items {
		b := &items[i]
		k := len(b.data)
		e := ents[EntrySize*i : EntrySize*i+EntrySize]
		if b.buf.IsZero() {
			if k > len(dst)-c { // the SGA's entries are not stored yet
				w.modified = true
				return hdr, cp, zc
			}
			binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(c))<<32)
			c += copy(dst[c:], b.data)
		} else {
			binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(z))<<32)
			z += k
			es = append(es, b.buf)
		}
	}
	if len(es) != j0 {
		w.sga.Entries = es
	}
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(len(items)))|uint64(uint32(hdr))<<32)
	return r, c, z
}

// PutStringList is PutBytesList for a list of strings (the same wire
// form).
func (w *DirectWriter) PutStringList(at, hdr, cp, zc int, l *StringList) (int, int, int) {
	items := l.items
	r := hdr + EntrySize*len(items)
	dst := w.dst
	if hdr < 0 || r > w.hdrEnd || cp < w.hdrEnd || cp > len(dst) {
		w.modified = true
		return hdr, cp, zc
	}
	ents := dst[hdr:r]
	es := w.sga.Entries
	j0 := len(es)
	c, z := cp, zc
	for i := range items {
		b := &items[i].b
		k := len(b.data)
		e := ents[EntrySize*i : EntrySize*i+EntrySize]
		if b.buf.IsZero() {
			if k > len(dst)-c { // the SGA's entries are not stored yet
				w.modified = true
				return hdr, cp, zc
			}
			binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(c))<<32)
			c += copy(dst[c:], b.data)
		} else {
			binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(z))<<32)
			z += k
			es = append(es, b.buf)
		}
	}
	if len(es) != j0 {
		w.sga.Entries = es
	}
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(len(items)))|uint64(uint32(hdr))<<32)
	return r, c, z
}
