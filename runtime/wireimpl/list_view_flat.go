package wireimpl

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// serializeOnlyView is SerializeOnlyOr's flat path for a live checked view
// l (vep current; its input in one segment): the message whose only field
// is l, written from the view's entries rather than from Bytes values, with
// the bytes, the entries and the errors of materialize followed by the
// items path (each value zero-copy on the input's window when at least the
// input's decode threshold, see source.window). It reports false, having
// written nothing, when the message would be larger than MaxMessageSize
// (the caller then takes the unfused path, which reports it), and on a
// platform without unaligned little-endian loads or for a segmented input
// (the unfused path materializes the list).
func (l *BytesList) serializeOnlyView(bit uint32, sga *SGA) (bool, error) {
	z := &l.lz
	s := z.src
	d := s.data
	n := int(z.n)
	zcFrom := max(s.thr, 1) // source.window's rule
	if s.buf.IsZero() {
		zcFrom = math.MaxInt
	}
	if !leUnaligned || s.segs != nil {
		return false, nil // the unfused path (materialize): other platforms, a segmented input
	}
	// The entries lie within d (checked by the decoder): read at their
	// address, with no slice expression.
	ents := unsafe.Add(unsafe.Pointer(unsafe.SliceData(d)), z.off)
	// A list of zero-copy values only (the hybrid response of large
	// values) in one pass: the head is the header, each value an SGA
	// entry. The first value below zcFrom sends the rest to the general
	// passes below, which write everything again.
	if hdr := 16 + EntrySize*n; sga.StartFlat(hdr, n) {
		dst, es := sga.Head, sga.Entries[:n]
		binary.LittleEndian.PutUint64(dst[0:8], 1|uint64(bit)<<32)
		binary.LittleEndian.PutUint64(dst[8:16], uint64(uint32(n))|uint64(16)<<32)
		hents := dst[16:hdr]
		zc := uint64(hdr)
		i := 0
		for ; i < n; i++ {
			e := *(*uint64)(unsafe.Add(ents, i*EntrySize))
			k, off := int(uint32(e)), int(e>>32)
			if k < zcFrom {
				break
			}
			putEntryWord(hents, i, uint64(uint32(k))|zc<<32)
			zc += uint64(k)
			es[i] = s.buf.SliceTrusted(off, k)
		}
		if i == n {
			if zc > MaxMessageSize {
				clear(es)
				return false, nil
			}
			sga.Entries = es
			return true, nil
		}
		clear(es[:i])
	}
	// The totals first (the head's size): a copied value's bytes go into
	// the head.
	cpn, zcn, nz := 0, 0, 0
	for i := range n {
		e := *(*uint64)(unsafe.Add(ents, i*EntrySize))
		if k := int(uint32(e)); k < zcFrom {
			cpn += k
		} else {
			zcn += k
			nz++
		}
	}
	hdr := 16 + EntrySize*n
	head := hdr + cpn
	if uint64(head)+uint64(zcn) > MaxMessageSize {
		return false, nil
	}
	if !sga.StartFlat(head, nz) {
		sga.GrowFlat(head, nz)
	}
	dst := sga.Head
	out := sga.Entries
	if len(dst) != head || cap(out) < nz { // a data race on sga
		return true, ErrModified
	}
	out = out[:nz]
	binary.LittleEndian.PutUint64(dst[0:8], 1|uint64(bit)<<32)
	binary.LittleEndian.PutUint64(dst[8:16], uint64(uint32(n))|uint64(16)<<32)
	hents := dst[16:hdr] // the element entries: one bounds check
	cp, zc, j := hdr, head, 0
	for i := range n {
		e := *(*uint64)(unsafe.Add(ents, i*EntrySize))
		k, off := int(uint32(e)), int(e>>32)
		if k < zcFrom {
			if k > len(dst)-cp {
				return true, ErrModified
			}
			putEntryWord(hents, i, uint64(uint32(k))|uint64(uint32(cp))<<32)
			if k != 0 {
				copy(dst[cp:cp+k], d[off:off+k]) // checked by the decoder or Load
			}
			cp += k
		} else {
			if j >= len(out) {
				return true, ErrModified
			}
			putEntryWord(hents, i, uint64(uint32(k))|uint64(uint32(zc))<<32)
			zc += k
			out[j] = s.buf.SliceTrusted(off, k)
			j++
		}
	}
	sga.Entries = out
	if (cp^head)|(zc^(head+zcn))|(j^nz) != 0 {
		return true, ErrModified
	}
	return true, nil
}

// putEntryWord writes entry i of ents (whole entries, bounds-checked by
// the caller once for the loop): entryWord's store.
func putEntryWord(ents []byte, i int, v uint64) {
	if leUnaligned {
		*(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(ents)), i*EntrySize)) = v
		return
	}
	binary.LittleEndian.PutUint64(ents[i*EntrySize:], v)
}
