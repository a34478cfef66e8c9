package wireimpl

import "encoding/binary"

// CopyTyped appends to dst a copy of the object obj, every message of
// which must be in the typed header form, laid out afresh: the header
// (every message, list region and nested header, in the canonical
// depth-first order) followed by the copied region holding every bytes
// value, with no zero-copy region (out-of-line lists are moved into the
// header). Because the kinds say which entries are offsets, it needs no
// schema: it is how a field that the reader's schema does not know can
// be moved into another object.
//
// obj is checked with the reader rules of docs/WIRE_FORMAT.md (every
// range in bounds; regions disjoint and in field order; counts at most
// MaxListLen; depth at most MaxDepth; valid kinds): a violation is a
// *DecodeError wrapping ErrMalformed (ErrTooDeep for depth). A copy
// larger than limit bytes (a hostile object may reference one value from
// many entries) fails with ErrTooLarge before anything is allocated. On
// error dst is returned unchanged.
func CopyTyped(dst, obj []byte, limit int) ([]byte, error) {
	if uint64(len(obj)) > MaxMessageSize {
		return dst, malformed(0, 0, "input larger than MaxMessageSize")
	}
	m := relocator{obj: obj, limit: min(uint64(limit), MaxMessageSize)}
	if err := m.walk(0, len(obj), 0); err != nil {
		return dst, err
	}
	if m.hdr+m.cp > m.limit {
		return dst, ErrTooLarge
	}
	h, c := int(m.hdr), int(m.cp)
	n := len(dst)
	dst = append(dst, make([]byte, h+c)...)
	w := relocator{obj: obj, limit: m.limit, out: dst[n:], cpAt: uint64(h)}
	if err := w.walk(0, len(obj), 0); err != nil { // cannot fail: the same walk
		return dst[:n], err
	}
	return dst, nil
}

// relocator walks a typed object twice: measuring (out == nil: hdr and cp
// are the sizes) and writing (hdr and cp are cursors into out).
type relocator struct {
	obj   []byte
	out   []byte
	limit uint64
	hdr   uint64 // header bytes so far
	cp    uint64 // copied bytes so far
	cpAt  uint64 // start of the copied region in out (write pass)
}

func (r *relocator) over() bool { return r.hdr+r.cp > r.limit }

// value copies obj[off:off+n] into the copied region and returns its
// offset in the copy.
// An empty value's offset is ignored (it need not be in bounds).
func (r *relocator) value(off, n uint32) uint64 {
	at := r.cpAt + r.cp
	if n == 0 {
		return at
	}
	if r.out != nil {
		copy(r.out[at:at+uint64(n)], r.obj[off:off+n])
	}
	r.cp += uint64(n)
	return at
}

func (r *relocator) inObj(off, n uint32) bool {
	return n == 0 || uint64(off)+uint64(n) <= uint64(len(r.obj))
}

// walk relocates the message whose header is obj[start:end].
func (r *relocator) walk(start, end, depth int) error {
	if depth > MaxDepth {
		return &DecodeError{Off: start, Reason: "nesting deeper than MaxDepth", Err: ErrTooDeep}
	}
	fields, fixed, err := ReadTypedHeader(r.obj[start:end], nil)
	if err != nil {
		if de, ok := err.(*DecodeError); ok {
			de.Off += start
		}
		return err
	}
	outStart := r.hdr
	r.hdr += uint64(typedFixedSize(fields)) // the minimal form (the input's W may be larger)
	dyn := start + fixed
	// region checks a region [off, off+n) of this message's dynamic part.
	region := func(f TypedField, off, n int) error {
		if off < dyn || off > end || n > end-off {
			return malformed(start, f.Num, "list region or nested message out of range or overlapping")
		}
		dyn = off + n
		return nil
	}
	le := binary.LittleEndian
	for i := range fields {
		f := &fields[i]
		lo, hi := uint32(f.Entry), uint32(f.Entry>>32)
		switch f.Kind {
		case KindScalar:
		case KindBytes:
			if !r.inObj(hi, lo) {
				return malformed(start, f.Num, "data range out of bounds")
			}
			f.Entry = uint64(lo) | r.value(hi, lo)<<32
		case KindList1, KindList4, KindList8:
			w := uint32(1)
			if f.Kind == KindList4 {
				w = 4
			} else if f.Kind == KindList8 {
				w = 8
			}
			n := lo &^ PackedFlag
			if n > MaxListLen {
				return malformed(start, f.Num, "list count exceeds MaxListLen")
			}
			if lo&PackedFlag != 0 {
				if n == 0 || f.Kind == KindList1 || !r.inObj(hi, n*w) {
					return malformed(start, f.Num, "out-of-line list invalid or out of bounds")
				}
			} else if err := region(*f, int(hi), int(n*w)); err != nil {
				return err
			}
			at := r.hdr
			if r.out != nil {
				copy(r.out[at:at+uint64(n*w)], r.obj[hi:hi+n*w])
			}
			r.hdr += uint64(n * w)
			f.Entry = uint64(n) | at<<32
		case KindBytesList:
			if lo > MaxListLen {
				return malformed(start, f.Num, "list count exceeds MaxListLen")
			}
			if err := region(*f, int(hi), int(lo)*EntrySize); err != nil {
				return err
			}
			at := r.hdr
			r.hdr += uint64(lo) * EntrySize
			for j := range lo {
				e := le.Uint64(r.obj[hi+EntrySize*j:])
				n, off := uint32(e), uint32(e>>32)
				if !r.inObj(off, n) {
					return malformed(int(hi+EntrySize*j), f.Num, "data range out of bounds")
				}
				if r.over() {
					return ErrTooLarge
				}
				v := r.value(off, n)
				if r.out != nil {
					le.PutUint64(r.out[at+EntrySize*uint64(j):], uint64(n)|v<<32)
				}
			}
			f.Entry = uint64(lo) | at<<32
		case KindMessage:
			if lo < 4 {
				return malformed(start, f.Num, "nested message too small")
			}
			if err := region(*f, int(hi), int(lo)); err != nil {
				return err
			}
			at := r.hdr
			if err := r.walk(int(hi), int(hi+lo), depth+1); err != nil {
				return err
			}
			f.Entry = (r.hdr - at) | at<<32
		case KindMessageList:
			if lo > MaxListLen {
				return malformed(start, f.Num, "list count exceeds MaxListLen")
			}
			if err := region(*f, int(hi), int(lo)*EntrySize); err != nil {
				return err
			}
			at := r.hdr
			r.hdr += uint64(lo) * EntrySize
			for j := range lo {
				e := le.Uint64(r.obj[hi+EntrySize*j:])
				n, off := uint32(e), uint32(e>>32)
				if n < 4 {
					return malformed(int(hi+EntrySize*j), f.Num, "list element too small")
				}
				if err := region(*f, int(off), int(n)); err != nil {
					return err
				}
				el := r.hdr
				if err := r.walk(int(off), int(off+n), depth+1); err != nil {
					return err
				}
				if r.out != nil {
					le.PutUint64(r.out[at+EntrySize*uint64(j):], (r.hdr-el)|el<<32)
				}
			}
			f.Entry = uint64(lo) | at<<32
		}
		if r.over() {
			return ErrTooLarge
		}
	}
	if r.out != nil {
		if _, err := AppendTypedHeader(r.out[outStart:outStart], fields); err != nil {
			return err
		}
	}
	return nil
}

// typedFixedSize is the size of the fixed part AppendTypedHeader writes
// for fields (ascending numbers).
func typedFixedSize(fields []TypedField) int {
	p := len(fields)
	last := 0
	if p > 0 {
		last = fields[p-1].Num
	}
	if last > MaxFieldNumber {
		return 4 + 4*p + kindBytes(p) + EntrySize*p
	}
	return 4 + 4*bitmapWords(last) + kindBytes(p) + EntrySize*p
}
