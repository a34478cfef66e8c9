package wireimpl

import (
	"encoding/binary"
	"errors"
)

// The flat path of a message whose only field is a bytes list (the
// generated WireSerializeSGA of such a message is one call of
// BytesList.SerializeOnlyOr; docs/CODEGEN.md, "Flat messages"). The
// sizes and the write are one function with the cursors in registers and
// no call but the copies', a one-element copied list is written with no
// loop, and a built list of zero-copy values only (the hybrid response of
// large values) first, with a loop that copies nothing.

// SGAUnfused is the unfused path of a generated message's
// WireSerializeSGA (its sizes, then its encode), which SerializeOnlyOr
// takes when the flat path does not apply.
type SGAUnfused interface {
	WireSerializeSGAUnfused(sga *SGA) error
}

// SerializeOnly is SerializeOnlyOr for code of an older generator, whose
// WireSerializeSGA checks Core.DirectOK, calls it, and takes the unfused
// path itself when it reports false. a is the message's arena.
func (l *BytesList) SerializeOnly(a *Arena, bit uint32, sga *SGA) (bool, error) {
	c := Core{a: a, epoch: uint32(a.epoch)} // DirectOK holds: the caller checked it
	if err := l.SerializeOnlyOr(&c, bit, sga, notFlat{}); err != errNotFlat {
		return true, err
	}
	return false, nil
}

// errNotFlat is notFlat's result: SerializeOnlyOr did not apply.
var errNotFlat = errors.New("wire: the flat path does not apply")

// notFlat is SerializeOnly's SGAUnfused: it only reports errNotFlat.
type notFlat struct{}

func (notFlat) WireSerializeSGAUnfused(*SGA) error { return errNotFlat }

// SerializeOnlyOr writes, on the flat path, the message whose only field
// is the list l, numbered 1..32 with the bitmap bit `bit`
// (1<<(number-1)), into sga (its head sized to the message's head, its
// entries emptied, then the zero-copy elements' references), and returns
// nil. c is the message's Core and m the message. An empty list is an
// absent field (the message is its 4-byte bitmap word count). The wire
// bytes are those of the flat path's PutFlat and of the direct path. A
// decoded list is loaded first, with c's arena.
//
// When the path does not apply (Core.DirectOK does not hold, the list
// fails to load, or the message is larger than MaxMessageSize), it writes
// nothing and returns m.WireSerializeSGAUnfused(sga): the unfused path,
// which reports the error. It returns ErrModified when a write does not
// fit or the cursors do not end where the sizes said (only a data race on
// the list between the sizes and the write can make it so); sga is then
// not to be sent.
//
// The generated WireSerializeSGA is this one call, so that it is inlined
// into its callers (SerializeSGA, and a caller of it).
func (l *BytesList) SerializeOnlyOr(c *Core, bit uint32, sga *SGA, m SGAUnfused) error {
	if !c.DirectOK() {
		return m.WireSerializeSGAUnfused(sga)
	}
	if n := len(l.items); l.tok && int(l.tot.nz) == n && n > 0 {
		items := l.items
		// A built list (its kept totals) of zero-copy values only (the
		// hybrid response of large values): a loop without a copy, whose
		// cursors stay in registers. The handles go to sga.Entries only
		// when the lengths agree with the totals.
		zcn := l.tot.zc
		hdr := 16 + EntrySize*n
		if uint64(hdr)+uint64(zcn) > MaxMessageSize {
			return m.WireSerializeSGAUnfused(sga)
		}
		if !sga.StartFlat(hdr, n) {
			sga.GrowFlat(hdr, n)
		}
		dst, es := sga.Head, sga.Entries
		if len(dst) != hdr || n > cap(es) {
			return ErrModified
		}
		binary.LittleEndian.PutUint64(dst[0:8], 1|uint64(bit)<<32)
		binary.LittleEndian.PutUint64(dst[8:16], uint64(uint32(n))|uint64(16)<<32)
		ents := dst[16:hdr]
		es = es[:n]
		zc := hdr
		for i := range es {
			b := &items[i]
			if b.buf.IsZero() {
				return ErrModified
			}
			k := len(b.data)
			binary.LittleEndian.PutUint64(ents[i*EntrySize:i*EntrySize+EntrySize], uint64(uint32(k))|uint64(uint32(zc))<<32)
			zc += k
			es[i] = b.buf
		}
		if zc != hdr+zcn {
			return ErrModified
		}
		sga.Entries = sga.Entries[:n] // es: the same array
		return nil
	}
	a := c.a
	if l.lz.src != nil {
		if l.lz.n == 0 {
			return putEmptyFlat(sga)
		}
		if v := l.vep; v != 0 && v == l.a.epoch+1 { // a live checked view: from its entries
			if ok, err := l.serializeOnlyView(bit, sga); ok {
				return err
			}
			return m.WireSerializeSGAUnfused(sga)
		}
		if l.Load(a) != nil {
			return m.WireSerializeSGAUnfused(sga)
		}
		l.materialize()
	}
	items := l.items
	n := len(items)
	if n == 1 && items[0].buf.IsZero() { // one copied value: no loop
		p := items[0].data
		k := len(p)
		const hdr = 8 + 2*EntrySize
		if uint64(k) > MaxMessageSize-hdr {
			return m.WireSerializeSGAUnfused(sga)
		}
		head := hdr + k
		if !sga.StartFlat(head, 0) {
			sga.GrowFlat(head, 0)
		}
		dst := sga.Head
		if len(dst) != head { // a data race on sga
			return ErrModified
		}
		binary.LittleEndian.PutUint64(dst[0:8], 1|uint64(bit)<<32)
		binary.LittleEndian.PutUint64(dst[8:16], 1|uint64(16)<<32)
		binary.LittleEndian.PutUint64(dst[16:24], uint64(k)|uint64(hdr)<<32)
		copy(dst[hdr:], p)
		return nil
	}
	if n == 0 {
		return putEmptyFlat(sga)
	}
	var cpn, zcn, nz int
	if l.tok { // the kept totals (a list built with Init and Append)
		cpn, zcn, nz = l.tot.cp, l.tot.zc, int(l.tot.nz)
	} else {
		cpn, zcn, nz = sizeItems(items, 0, 0, 0)
	}
	hdr := 16 + EntrySize*n
	head := hdr + cpn
	if uint64(head)+uint64(zcn) > MaxMessageSize {
		return m.WireSerializeSGAUnfused(sga)
	}
	if !sga.StartFlat(head, nz) {
		sga.GrowFlat(head, nz)
	}
	dst := sga.Head
	if len(dst) < hdr {
		return ErrModified
	}
	binary.LittleEndian.PutUint64(dst[0:8], 1|uint64(bit)<<32)
	binary.LittleEndian.PutUint64(dst[8:16], uint64(uint32(n))|uint64(16)<<32)
	// As PutFlat: the element entries at e, the copied values at cp, the
	// references appended to sga.Entries within the room StartFlat made.
	cp, zc, e := hdr, head, 16
	for i := range items {
		b := &items[i]
		p := b.data
		k := len(p)
		if b.buf.IsZero() {
			if k > len(dst)-cp {
				return ErrModified
			}
			d := dst[cp : cp+k]
			binary.LittleEndian.PutUint64(dst[e:e+EntrySize], uint64(uint32(k))|uint64(uint32(cp))<<32)
			// The copy: word loads and stores for a short value (see
			// shortCopy), memmove for a longer one.
			switch {
			case k > shortCopy:
				copy(d, p)
			case k > 16:
				w0, w1 := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
				w2, w3 := binary.LittleEndian.Uint64(p[k-16:]), binary.LittleEndian.Uint64(p[k-8:])
				binary.LittleEndian.PutUint64(d, w0)
				binary.LittleEndian.PutUint64(d[8:], w1)
				binary.LittleEndian.PutUint64(d[k-16:], w2)
				binary.LittleEndian.PutUint64(d[k-8:], w3)
			case k >= 8:
				lo, hi := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[k-8:])
				binary.LittleEndian.PutUint64(d, lo)
				binary.LittleEndian.PutUint64(d[k-8:], hi)
			case k >= 4:
				lo, hi := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[k-4:])
				binary.LittleEndian.PutUint32(d, lo)
				binary.LittleEndian.PutUint32(d[k-4:], hi)
			case k > 0:
				d[0], d[k>>1], d[k-1] = p[0], p[k>>1], p[k-1]
			}
			cp += k
		} else {
			es := sga.Entries
			if len(es) >= cap(es) {
				return ErrModified
			}
			binary.LittleEndian.PutUint64(dst[e:e+EntrySize], uint64(uint32(k))|uint64(uint32(zc))<<32)
			zc += k
			sga.Entries = append(es, b.buf) // within its capacity: no growth
		}
		e += EntrySize
	}
	if (cp^head)|(zc^(head+zcn))|(len(sga.Entries)^nz) != 0 {
		return ErrModified
	}
	return nil
}

// putEmptyFlat writes the message without a present field (its bitmap
// word count, 0) into sga.
func putEmptyFlat(sga *SGA) error {
	if !sga.StartFlat(4, 0) {
		sga.GrowFlat(4, 0)
	}
	dst := sga.Head
	if len(dst) != 4 {
		return ErrModified
	}
	binary.LittleEndian.PutUint32(dst, 0)
	return nil
}

// shortCopy is the longest value the flat writers copy with word loads and
// stores (overlapping where the length is not a power of two) instead of a
// call to memmove: a loop over small values then keeps its cursors in
// registers (every live value is reloaded after a call). The stores go
// through checked slices.
const shortCopy = 32
