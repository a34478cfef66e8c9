package shm

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// sendSGA is SendObject's path for a generated message (wire.Msg): the
// message serializes with wire.SerializeSGA (sizes and encode in one
// generated call, no interface call per entry) with its head written
// straight into the TX slot after head, and its zero-copy entries then
// become descriptors (or are copied into the slot) in one loop. Generated
// messages check their own consistency (wire.ErrModified when the sizes
// and the encode disagree), so the declared-count checks of directSink
// are not needed; every entry is still checked for liveness before
// anything is posted, and the packet's size against MaxPayload.
//
// Only entries sent as descriptors take a reference (held by the slot
// until the peer completes it, dies, or the endpoint closes). On any error
// the slot is freed and nothing is posted.
func (ep *Endpoint) sendSGA(dst netip.AddrPort, head []byte, m wire.Msg) error {
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
	err = wire.SerializeSGA(m, sga)
	hb, ents := sga.Head, sga.Entries
	sga.Head = nil
	if err == nil {
		err = ep.checkSGA(at, hb, b.data, ents)
	}
	if err != nil {
		clear(ents)
		sga.Entries = ents[:0]
		ep.st.Errors++
		c.freeSlot(s)
		return err
	}
	headLen := at + len(hb)
	size := headLen
	for _, e := range ents {
		size += e.Len()
	}
	// checkSGA bounded the total by maxPay.
	b.reserve(headLen)
	var keep []int
	if len(ents) > ep.maxSegs-1 {
		lens := ep.lens[:0]
		for _, e := range ents {
			lens = append(lens, e.Len())
		}
		ep.lens = lens
		keep = ep.sel.Select(lens)
	}
	st := &ep.st
	st.CopiedEntries++
	st.CopiedBytes += uint64(headLen)
	k := 0
	for i, e := range ents {
		ents[i] = mem.Buf{}
		p := e.Bytes()
		if keep != nil {
			if k < len(keep) && keep[k] == i {
				k++
			} else {
				b.copied(p)
				st.CopiedEntries++
				st.CopiedBytes += uint64(len(p))
				continue
			}
		}
		if b.zeroCopy(p) {
			if !e.TryClone() {
				e = e.Clone() // checked build, Concurrent pools (checkSGA saw it live)
			}
			b.slot.zc = append(b.slot.zc, e)
			st.ZeroCopyEntries++
			st.ZeroCopyBytes += uint64(len(p))
		} else {
			st.CopiedEntries++
			st.CopiedBytes += uint64(len(p))
		}
	}
	sga.Entries = ents[:0]
	b.flushSeg()
	return ep.post(c, s, b.nseg, size, true)
}

// checkSGA checks a serialized message before anything of it is sent:
// its head lies where it was asked to (at data[at:], else it did not fit
// the slot), it has at most datapath.MaxObjectEntries entries, each of
// them is a live reference, and the whole packet fits MaxPayload.
func (ep *Endpoint) checkSGA(at int, hb, data []byte, ents []mem.Buf) error {
	if len(hb) > 0 && &hb[0] != &data[at] {
		return fmt.Errorf("%w: message head of %d bytes after %d > %d", datapath.ErrTooLarge, len(hb), at, ep.maxPay)
	}
	if len(ents) > datapath.MaxObjectEntries {
		return fmt.Errorf("%w: %d zero-copy entries (limit %d)", datapath.ErrBadObject, len(ents), datapath.MaxObjectEntries)
	}
	size := at + len(hb)
	for i, e := range ents {
		if err := e.Check(); err != nil {
			return fmt.Errorf("datapath: zero-copy entry %d: %w", i, err)
		}
		size += e.Len()
		if size > ep.maxPay {
			return fmt.Errorf("%w: more than %d bytes", datapath.ErrTooLarge, ep.maxPay)
		}
	}
	return nil
}
