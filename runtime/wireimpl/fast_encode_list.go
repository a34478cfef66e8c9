package wireimpl

import (
	"encoding/binary"
	"slices"
)

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
	if l.tok { // the kept totals (a list built with Init and Append)
		return hdr, cp + l.tot.cp, zc + l.tot.zc, ents + int(l.tot.nz), true
	}
	cp, zc, ents = sizeItems(items, cp, zc, ents)
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
	cp, zc, ents = sizeStringItems(items, cp, zc, ents)
	return hdr, cp, zc, ents, true
}

// PutBytesList writes the entry at `at` of the present list l, its element
// entries at the header cursor hdr and each element's value (copied or
// zero-copy), and returns the advanced cursors. A list whose region or
// copied values do not fit records ErrModified and leaves the cursors
// unchanged.
//
// A one-element copied list is written without a loop. Otherwise, tight
// loops rather than one with a call per element: the first writes the
// entries of the copied prefix (the whole of a list of small values) and
// touches no SGA; from the first zero-copy element on, the SGA's room is
// reserved once and the next loops write the zero-copy run (the whole of
// a list of large values) and then the rest, mixed, storing the zero-copy
// elements' SGA entries (no call, so the cursors stay in registers). Once
// the copied total is checked against the head buffer, the last loop
// copies the copied values.
func (w *DirectWriter) PutBytesList(at, hdr, cp, zc int, l *BytesList) (int, int, int) {
	items := l.items
	n := len(items)
	r := hdr + EntrySize*n
	dst := w.dst
	if hdr < 0 || r > w.hdrEnd || cp < w.hdrEnd {
		w.modified = true
		return hdr, cp, zc
	}
	ents := dst[hdr:r]
	if n == 1 { // one copied element (the common small list): no loops
		if b := &items[0]; b.buf.IsZero() {
			k := len(b.data)
			if k > len(dst)-cp {
				w.modified = true
				return hdr, cp, zc
			}
			binary.LittleEndian.PutUint64(ents, uint64(uint32(k))|uint64(uint32(cp))<<32)
			binary.LittleEndian.PutUint64(dst[at:at+EntrySize], 1|uint64(uint32(hdr))<<32)
			copy(dst[cp:cp+k], b.data)
			return r, cp + k, zc
		}
	}
	c, z := cp, zc
	i := 0
	for ; i < len(items); i++ {
		b := &items[i]
		if !b.buf.IsZero() {
			break
		}
		k := len(b.data)
		binary.LittleEndian.PutUint64(ents[EntrySize*i:EntrySize*i+EntrySize], uint64(uint32(k))|uint64(uint32(c))<<32)
		c += k
	}
	mixed := i < n
	if mixed {
		sga := w.sga
		es := sga.Entries
		j0 := len(es)
		if cap(es)-j0 < n-i {
			es = slices.Grow(es, n-i)
		}
		es = es[:j0+n-i]
		j := j0
		for ; i < len(items); i++ { // the zero-copy run (every element of a list of large values)
			b := &items[i]
			if b.buf.IsZero() {
				break
			}
			k := len(b.data)
			binary.LittleEndian.PutUint64(ents[EntrySize*i:EntrySize*i+EntrySize], uint64(uint32(k))|uint64(uint32(z))<<32)
			z += k
			es[j] = b.buf
			j++
		}
		for ; i < len(items); i++ {
			b := &items[i]
			k := len(b.data)
			e := ents[EntrySize*i : EntrySize*i+EntrySize]
			if b.buf.IsZero() {
				binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(c))<<32)
				c += k
			} else {
				binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(z))<<32)
				z += k
				es[j] = b.buf
				j++
			}
		}
		if c > len(dst) { // element lengths are below 2^32: no overflow
			w.modified = true
			sga.Entries = es[:j0]
			return hdr, cp, zc
		}
		sga.Entries = es[:j]
	} else if c > len(dst) {
		w.modified = true
		return hdr, cp, zc
	}
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(hdr))<<32)
	if c != cp {
		if mixed {
			for i := range items {
				if b := &items[i]; b.buf.IsZero() {
					cp += copy(dst[cp:], b.data)
				}
			}
		} else {
			for i := range items {
				cp += copy(dst[cp:], items[i].data)
			}
		}
	}
	return r, c, z
}

// PutStringList is PutBytesList for a list of strings (the same wire
// form).
func (w *DirectWriter) PutStringList(at, hdr, cp, zc int, l *StringList) (int, int, int) {
	items := l.items
	n := len(items)
	r := hdr + EntrySize*n
	dst := w.dst
	if hdr < 0 || r > w.hdrEnd || cp < w.hdrEnd {
		w.modified = true
		return hdr, cp, zc
	}
	ents := dst[hdr:r]
	if n == 1 { // one copied element (the common small list): no loops
		if b := &items[0].b; b.buf.IsZero() {
			k := len(b.data)
			if k > len(dst)-cp {
				w.modified = true
				return hdr, cp, zc
			}
			binary.LittleEndian.PutUint64(ents, uint64(uint32(k))|uint64(uint32(cp))<<32)
			binary.LittleEndian.PutUint64(dst[at:at+EntrySize], 1|uint64(uint32(hdr))<<32)
			copy(dst[cp:cp+k], b.data)
			return r, cp + k, zc
		}
	}
	c, z := cp, zc
	i := 0
	for ; i < len(items); i++ {
		b := &items[i].b
		if !b.buf.IsZero() {
			break
		}
		k := len(b.data)
		binary.LittleEndian.PutUint64(ents[EntrySize*i:EntrySize*i+EntrySize], uint64(uint32(k))|uint64(uint32(c))<<32)
		c += k
	}
	mixed := i < n
	if mixed {
		sga := w.sga
		es := sga.Entries
		j0 := len(es)
		if cap(es)-j0 < n-i {
			es = slices.Grow(es, n-i)
		}
		es = es[:j0+n-i]
		j := j0
		for ; i < len(items); i++ { // the zero-copy run (every element of a list of large values)
			b := &items[i].b
			if b.buf.IsZero() {
				break
			}
			k := len(b.data)
			binary.LittleEndian.PutUint64(ents[EntrySize*i:EntrySize*i+EntrySize], uint64(uint32(k))|uint64(uint32(z))<<32)
			z += k
			es[j] = b.buf
			j++
		}
		for ; i < len(items); i++ {
			b := &items[i].b
			k := len(b.data)
			e := ents[EntrySize*i : EntrySize*i+EntrySize]
			if b.buf.IsZero() {
				binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(c))<<32)
				c += k
			} else {
				binary.LittleEndian.PutUint64(e, uint64(uint32(k))|uint64(uint32(z))<<32)
				z += k
				es[j] = b.buf
				j++
			}
		}
		if c > len(dst) {
			w.modified = true
			sga.Entries = es[:j0]
			return hdr, cp, zc
		}
		sga.Entries = es[:j]
	} else if c > len(dst) {
		w.modified = true
		return hdr, cp, zc
	}
	binary.LittleEndian.PutUint64(dst[at:at+EntrySize], uint64(uint32(n))|uint64(uint32(hdr))<<32)
	if c != cp {
		if mixed {
			for i := range items {
				if b := &items[i].b; b.buf.IsZero() {
					cp += copy(dst[cp:], b.data)
				}
			}
		} else {
			for i := range items {
				cp += copy(dst[cp:], items[i].b.data)
			}
		}
	}
	return r, c, z
}

// sizeItems adds the values of a bytes list to the copied and zero-copy
// cursors: a value without a buffer is copied, one with a buffer is a
// zero-copy entry. Small enough to be inlined into the size passes.
func sizeItems(items []Bytes, cp, zc, ents int) (int, int, int) {
	for i := range items {
		if b := &items[i]; b.buf.IsZero() {
			cp += len(b.data)
		} else {
			zc += len(b.data)
			ents++
		}
	}
	return cp, zc, ents
}

// sizeStringItems is sizeItems for a list of strings.
func sizeStringItems(items []String, cp, zc, ents int) (int, int, int) {
	for i := range items {
		if b := &items[i].b; b.buf.IsZero() {
			cp += len(b.data)
		} else {
			zc += len(b.data)
			ents++
		}
	}
	return cp, zc, ents
}
