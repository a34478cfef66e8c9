package shm

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// sgaSerializer is what SendObject takes its generated-message path for:
// the typed SerializeSGA every generated message has (wire.SerializeSGA
// without its interface assertion). Any other wire.Object, and a wire.Msg
// without it, takes the checked generic path.
type sgaSerializer interface {
	SerializeSGA(sga *wire.SGA) error
}

// sendSGA is SendObject's path for a generated message: the
// message serializes with its SerializeSGA (sizes and encode in one
// generated call, no interface call per entry) with its head written
// straight into the TX slot after head, and its zero-copy entries then
// become descriptors (or are copied into the slot) in one loop. Generated
// messages check their own consistency (wire.ErrModified when the sizes
// and the encode disagree), so the declared-count checks of directSink
// are not needed; every entry is still checked for liveness before
// anything is posted, and the packet's size against MaxPayload.
//
// The packet holds one reference per item of registered memory that its
// descriptors point into (adjacent entries of one item share it), held by
// the slot until the peer completes it, dies, or the endpoint closes;
// copied entries keep none. On any error the slot is freed and nothing is
// posted.
func (ep *Endpoint) sendSGA(dst netip.AddrPort, head []byte, m sgaSerializer) error {
	if len(head) > ep.maxPay {
		return fmt.Errorf("%w: head %d > %d", datapath.ErrTooLarge, len(head), ep.maxPay)
	}
	c, s, err := ep.slotFor(dst)
	if err != nil {
		return err
	}
	b := ep.builder(c, s)
	copy(b.data, head)
	sga := &ep.sga
	// The message's head is serialized in place: SerializeSGA reuses
	// sga.Head's array when it is large enough (the slot's data area).
	at := len(head)
	sga.Head = b.data[at:at:ep.maxPay]
	err = m.SerializeSGA(sga)
	hb, ents := sga.Head, sga.Entries
	sga.Head = nil
	if err == nil {
		err = ep.writeSGA(&b, at, hb, ents)
	}
	// The entries are borrowed handles: left in the scratch array as the
	// runtime's SGA leaves them (they hold no reference).
	sga.Entries = ents[:0]
	if err != nil {
		ep.st.Errors++
		c.freeSlot(s) // releases the references taken, returns the budget
		return err
	}
	b.flushSeg()
	return ep.post(c, s, b.nseg, at+len(hb)+b.zcSize, true)
}

// writeSGA lays out a serialized message after the packet's head (at
// bytes): the message's head must lie at b.data[at:] (else it did not fit
// the slot), and each entry is checked (a live reference, at most
// datapath.MaxObjectEntries of them, the packet within MaxPayload) before
// it becomes a descriptor (the slot then holds a reference on its item:
// one per run of entries of the same item) or is copied.
// Statistics are counted only when it succeeds; on error the caller frees
// the slot.
func (ep *Endpoint) writeSGA(b *txBuilder, at int, hb []byte, ents []mem.Buf) error {
	if len(hb) > 0 && &hb[0] != &b.data[at] {
		return fmt.Errorf("%w: message head of %d bytes after %d > %d", datapath.ErrTooLarge, len(hb), at, ep.maxPay)
	}
	if len(ents) > datapath.MaxObjectEntries {
		return fmt.Errorf("%w: %d zero-copy entries (limit %d)", datapath.ErrBadObject, len(ents), datapath.MaxObjectEntries)
	}
	headLen := at + len(hb)
	b.reserve(headLen)
	var keep []int
	if len(ents) > ep.maxSegs-1 {
		lens := ep.lens[:0]
		for i := range ents {
			lens = append(lens, ents[i].Len())
		}
		ep.lens = lens
		keep = ep.sel.Select(lens)
	}
	size := headLen
	var zcN, zcB int
	k := 0
	t := b.slot
	held := len(t.zc) // t.zc[held:] are this packet's references
	for i := range ents {
		e := &ents[i]
		if keep == nil && b.open && b.last.space != 0 && len(t.zc) > held && t.zc[len(t.zc)-1].SameItem(*e) {
			// e continues the open descriptor: of the item whose
			// reference this packet took last (live while the slot holds
			// it) and starting where the descriptor ends. Adjacent values
			// of one buffer (a decoded request's) become one descriptor
			// with one bounds check against that descriptor's space, not
			// a search of every space (zeroCopy, below, does the same
			// merge the long way).
			p := e.Bytes()
			n := len(p)
			l := &b.last
			if off, ok := ep.spaces[l.space-1].Offset(p); ok && off == l.off+uint64(l.n) &&
				uint64(l.n)+uint64(n) <= uint64(ep.maxPay) && b.c.zcBytes+int64(n) <= ep.opts.MaxZeroCopyBytes {
				if size += n; size > ep.maxPay {
					return fmt.Errorf("%w: more than %d bytes", datapath.ErrTooLarge, ep.maxPay)
				}
				l.n += uint32(n)
				t.zcBytes += int64(n)
				b.c.zcBytes += int64(n)
				zcN++
				zcB += n
				continue
			}
		}
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
		if keep != nil && (k >= len(keep) || keep[k] != i) {
			b.copied(e.Bytes())
		} else {
			if keep != nil {
				k++
			}
			zc = b.zeroCopy(e.Bytes())
		}
		if zc {
			zcN++
			zcB += n
		} else if took {
			last := len(t.zc) - 1
			r := t.zc[last]
			t.zc[last] = mem.Buf{}
			t.zc = t.zc[:last]
			if !r.TryRelease() {
				if err := r.Release(); err != nil {
					return fmt.Errorf("datapath: zero-copy entry %d: %w", i, err)
				}
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
