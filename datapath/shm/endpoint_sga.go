package shm

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// SendObject implements datapath.Endpoint: head, the object's header and
// its copied fields are written straight into a TX slot shared with the
// peer; each zero-copy entry in a registered shared space becomes a
// descriptor into that space (no CPU copies it), others are copied into
// the slot. With more entries than MaxSegments-1 the smallest are copied
// (driver.Selector).
//
// A generated message (a datapath.SGAMessage: its typed SerializeSGA, one
// assertion here, none in wire.SerializeSGA) takes SendSGA. Any other
// wire.Object takes the checked generic path (sendObject).
//
// The packet holds one reference per run of entries of one item of
// registered memory that its descriptors point into, held by the slot
// until the peer completes it, dies, or the endpoint closes; copied
// entries keep none. On any error the slot is freed and nothing is
// posted.
func (ep *Endpoint) SendObject(dst netip.AddrPort, head []byte, obj wire.Object) error {
	if m, ok := obj.(datapath.SGAMessage); ok {
		return ep.SendSGA(dst, head, m)
	}
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	return ep.sendObject(dst, head, obj)
}

// SendSGA implements datapath.SGASender: SendObject of a generated message
// without its type assertion. The message serializes with its head
// written straight into the TX slot after head, and its zero-copy entries
// then become descriptors (or are copied into the slot) in one loop
// (writeSGA). Generated messages check their own consistency
// (wire.ErrModified when the sizes and the encode disagree), so the
// declared-count checks of directSink are not needed; every entry is
// still checked for liveness before anything is posted, and the packet's
// size against MaxPayload.
func (ep *Endpoint) SendSGA(dst netip.AddrPort, head []byte, m datapath.SGAMessage) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	if len(head) > ep.maxPay {
		return fmt.Errorf("%w: head %d > %d", datapath.ErrTooLarge, len(head), ep.maxPay)
	}
	c, s, err := ep.slotFor(dst)
	if err != nil {
		return err
	}
	t := &c.tx[s]
	data := t.data
	copyHead(data, head)
	sga := &ep.sga
	// The message's head is serialized in place: SerializeSGA reuses
	// sga.Head's array when it is large enough (the slot's data area).
	at := len(head)
	sga.Head = data[at:at:ep.maxPay]
	err = m.SerializeSGA(sga)
	hb, ents := sga.Head, sga.Entries
	sga.Head = nil
	var nseg, size int
	if err == nil {
		if len(hb) > 0 && &hb[0] != &data[at] {
			err = fmt.Errorf("%w: message head of %d bytes after %d > %d", datapath.ErrTooLarge, len(hb), at, ep.maxPay)
		} else if len(ents) <= ep.maxSegs-1 {
			nseg, size, err = ep.writeSGA(c, t, at+len(hb), ents)
		} else {
			b := ep.builder(c, s)
			if err = ep.writeSGASelect(&b, at, hb, ents); err == nil {
				b.flushSeg()
				nseg, size = b.nseg, at+len(hb)+b.zcSize
			}
		}
	}
	// The entries are borrowed handles: left in the scratch array as the
	// runtime's SGA leaves them (they hold no reference).
	sga.Entries = ents[:0]
	if err != nil {
		ep.st.Errors++
		c.freeSlot(s) // releases the references taken, returns the budget
		return err
	}
	return ep.post(c, s, nseg, size, true)
}

// writeSGA lays out a serialized message of at most MaxSegments-1 entries
// in slot t after the packet's head and the message's (headLen bytes,
// already in the data area). Each entry is checked (a live reference, the packet within
// MaxPayload) before it becomes a descriptor or is copied into the data
// area (not in a registered space, or over the peer's zero-copy budget).
// The slot holds one reference per run of entries of one item: an entry
// of the item whose reference the slot took last shares it (live while
// the slot holds it), and an entry whose window follows the previous
// entry's in its item, which ends the open zero-copy descriptor, extends
// that descriptor (one descriptor for adjacent values of one buffer, like
// a decoded request's) without resolving its address or searching the
// spaces. It returns the descriptors written and the packet's size.
// Statistics and the budget are counted only when it succeeds; on error
// the caller frees the slot (which releases the references taken).
func (ep *Endpoint) writeSGA(c *conn, t *txSlot, headLen int, ents []mem.Buf) (nseg, size int, err error) {
	size = headLen
	w := &ep.sw
	w.t = t
	w.used, w.nseg, w.cur, w.tail = size, 0, seg{n: uint32(size)}, false
	w.budget, w.copiedN, w.fallbacks = ep.opts.MaxZeroCopyBytes-c.zcBytes, 0, 0
	held := len(t.zc) // t.zc[held:] are this packet's references
	for i := range ents {
		e := &ents[i]
		n := e.Len()
		if size += n; size > ep.maxPay {
			return 0, 0, fmt.Errorf("%w: more than %d bytes", datapath.ErrTooLarge, ep.maxPay)
		}
		if w.tail && n > 0 && e.Follows(ents[i-1]) && int64(n) <= w.budget && w.cur.off+uint64(w.cur.n)+uint64(n) <= w.curLim {
			// The previous entry went zero-copy and ends the open
			// descriptor; e continues it in its item (live: the slot
			// holds a reference on it) and so in its space.
			w.cur.n += uint32(n)
			w.budget -= int64(n)
			continue
		}
		if k := len(t.zc); k > held && t.zc[k-1].SameItem(*e) {
			// e shares the reference this packet took last.
			w.place(ep, e.Bytes())
			continue
		}
		// The reference is taken now (which checks that e is live) and
		// kept in the slot, so that every error return below releases it
		// with the slot; it is dropped again if the entry is copied.
		r := *e
		if !r.TryCloneLive() {
			if err := r.Check(); err != nil {
				return 0, 0, fmt.Errorf("datapath: zero-copy entry %d: %w", i, err)
			}
			r = r.Clone() // the zero Buf, the checked build, Concurrent pools
		}
		t.zc = append(t.zc, r)
		if !w.place(ep, e.Bytes()) {
			if err := t.dropLastRef(i); err != nil {
				return 0, 0, err
			}
		}
	}
	if w.cur.n > 0 {
		putDesc(w.t.table, w.nseg, w.cur)
		w.nseg++
	}
	// Copied bytes are the data area's: the rest went zero-copy.
	zcB := size - w.used
	zcN := len(ents) - w.copiedN
	t.zcBytes += int64(zcB)
	c.zcBytes += int64(zcB)
	st := &ep.st
	st.ZeroCopyFallbacks += uint64(w.fallbacks)
	st.CopiedEntries += uint64(1 + w.copiedN)
	st.CopiedBytes += uint64(w.used)
	st.ZeroCopyEntries += uint64(zcN)
	st.ZeroCopyBytes += uint64(zcB)
	return w.nseg, size, nil
}

// sgaWriter is writeSGA's layout state in slot t, kept in the Endpoint so
// that the entry loop keeps only its own few values in registers.
type sgaWriter struct {
	t    *txSlot
	used int // data area bytes written
	nseg int // descriptors written to table
	// cur is the open descriptor (not yet in the table; none when its
	// length is 0), the head's at first. tail: it is a zero-copy one and
	// ends with the last entry laid out; curLim is then its space's size.
	cur       seg
	tail      bool
	curLim    uint64
	budget    int64 // zero-copy bytes the peer's budget still allows
	copiedN   int   // entries copied (or empty)
	fallbacks int   // entries copied for want of budget
}

// place lays out an entry of bytes p that does not extend the open
// descriptor: as a descriptor when p lies in a registered space and the
// peer's budget allows (merged with the open one when adjacent to it in
// its space), else copied into the data area. It reports whether p went
// zero-copy.
func (w *sgaWriter) place(ep *Endpoint, p []byte) bool {
	n := len(p)
	if n == 0 {
		w.copiedN++
		w.tail = false // a following entry may follow this one, not cur
		return false
	}
	if int64(n) <= w.budget {
		for j, sp := range ep.spaces {
			if off, ok := sp.Offset(p); ok {
				if sid := uint32(j + 1); w.cur.space == sid && w.cur.n > 0 && w.cur.off+uint64(w.cur.n) == off {
					w.cur.n += uint32(n) // adjacent items of one space
				} else {
					w.open(seg{space: sid, n: uint32(n), off: off})
				}
				w.tail = true
				w.curLim = uint64(sp.Len())
				w.budget -= int64(n)
				return true
			}
		}
	} else {
		w.fallbacks++
	}
	// Copied: into the data area, extending the open data descriptor.
	copy(w.t.data[w.used:], p)
	if w.cur.space == 0 && w.cur.n > 0 && w.cur.off+uint64(w.cur.n) == uint64(w.used) {
		w.cur.n += uint32(n)
	} else {
		w.open(seg{n: uint32(n), off: uint64(w.used)})
	}
	w.tail = false
	w.used += n
	w.copiedN++
	return false
}

// open writes the open descriptor to the table and makes s the open one.
func (w *sgaWriter) open(s seg) {
	if w.cur.n > 0 {
		putDesc(w.t.table, w.nseg, w.cur)
		w.nseg++
	}
	w.cur = s
}

// writeSGASelect is writeSGA for a message of more entries than
// MaxSegments-1, built in b: the driver's Selector picks the entries that
// go zero-copy and the others are copied. The message's head must lie at
// b.data[at:] (else it did not fit the slot), and each entry is checked (a
// live reference, at most datapath.MaxObjectEntries of them, the packet
// within MaxPayload) before it becomes a descriptor (the slot then holds
// a reference on its item: one per run of entries of the same item) or is
// copied.
// Statistics are counted only when it succeeds; on error the caller frees
// the slot.
func (ep *Endpoint) writeSGASelect(b *txBuilder, at int, hb []byte, ents []mem.Buf) error {
	if len(hb) > 0 && &hb[0] != &b.data[at] {
		return fmt.Errorf("%w: message head of %d bytes after %d > %d", datapath.ErrTooLarge, len(hb), at, ep.maxPay)
	}
	if len(ents) > datapath.MaxObjectEntries {
		return fmt.Errorf("%w: %d zero-copy entries (limit %d)", datapath.ErrBadObject, len(ents), datapath.MaxObjectEntries)
	}
	headLen := at + len(hb)
	b.reserve(headLen)
	lens := ep.lens[:0]
	for i := range ents {
		lens = append(lens, ents[i].Len())
	}
	ep.lens = lens
	keep := ep.sel.Select(lens)
	size := headLen
	var zcN, zcB int
	k := 0
	t := b.slot
	held := len(t.zc) // t.zc[held:] are this packet's references
	for i := range ents {
		e := &ents[i]
		// One reference per item per packet: an entry of the item whose
		// reference this packet took last (adjacent values of one
		// received buffer) is live while that reference is held, and
		// shares it. Otherwise the reference is taken now (which checks
		// that e is live) and kept in the slot, so that every error
		// return below releases it with the slot; it is dropped again if
		// the entry is copied.
		took := false
		if n := len(t.zc); n == held || !t.zc[n-1].SameItem(*e) {
			r := *e
			if !r.TryCloneLive() {
				if err := r.Check(); err != nil {
					return fmt.Errorf("datapath: zero-copy entry %d: %w", i, err)
				}
				r = r.Clone() // the zero Buf, the checked build, Concurrent pools
			}
			t.zc = append(t.zc, r)
			took = true
		}
		n := e.Len()
		if size += n; size > ep.maxPay {
			return fmt.Errorf("%w: more than %d bytes", datapath.ErrTooLarge, ep.maxPay)
		}
		zc := false
		if k >= len(keep) || keep[k] != i {
			b.copied(e.Bytes())
		} else {
			k++
			zc = b.zeroCopy(e.Bytes())
		}
		if zc {
			zcN++
			zcB += n
		} else if took {
			if err := t.dropLastRef(i); err != nil {
				return err
			}
		}
	}
	b.zcSize = size - headLen
	st := &ep.st
	st.CopiedEntries += uint64(1 + len(ents) - zcN)
	st.CopiedBytes += uint64(size - zcB)
	st.ZeroCopyEntries += uint64(zcN)
	st.ZeroCopyBytes += uint64(zcB)
	return nil
}

// dropLastRef releases the reference t.zc's last element holds, taken for
// entry i of the packet being written and not needed after all (the entry
// was copied, or merged into the previous descriptor).
func (t *txSlot) dropLastRef(i int) error {
	last := len(t.zc) - 1
	r := t.zc[last]
	t.zc[last] = mem.Buf{}
	t.zc = t.zc[:last]
	if !r.TryRelease() {
		if err := r.Release(); err != nil {
			return fmt.Errorf("datapath: zero-copy entry %d: %w", i, err)
		}
	}
	return nil
}
