package shm

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// directSink is the wire.EntrySink of SendObject when the object's entries
// all fit in the packet's segment budget (no driver.Selector decision is
// needed): each zero-copy entry becomes a descriptor, or is copied into the
// TX slot, while the object serializes, with no intermediate list. Only an
// entry that goes zero-copy is cloned (into the slot's references, released
// when the peer completes the packet or the connection dies); a copied entry
// takes no reference. Like driver.EntryCollector it enforces the object's
// declared entry count and bytes, so that a lying object can neither write
// past the slot nor exceed the declared packet size.
type directSink struct {
	b                    txBuilder
	maxEntries, maxBytes int
	entries, bytes       int
	zcEntries, zcBytes   int // of entries and bytes, those sent as descriptors
}

// ZeroCopyEntry implements wire.EntrySink.
func (d *directSink) ZeroCopyEntry(buf mem.Buf) error {
	n := buf.Len()
	if d.entries >= d.maxEntries || d.bytes+n > d.maxBytes {
		return fmt.Errorf("%w: more entries or bytes than declared (%d entries, %d bytes)",
			datapath.ErrBadObject, d.maxEntries, d.maxBytes)
	}
	if err := buf.Check(); err != nil {
		return fmt.Errorf("datapath: zero-copy entry %d: %w", d.entries, err)
	}
	d.entries++
	d.bytes += n
	if d.b.zeroCopy(buf.Bytes()) {
		d.b.slot.zc = append(d.b.slot.zc, buf.Clone())
		d.zcEntries++
		d.zcBytes += n
	}
	return nil
}

// sendDirect is SendObject's path when sz.Entries <= maxSegs-1: the head is
// already in b.data[:len(head)]; the object serializes its header and copied
// region in place after it and its entries straight into descriptors. On
// error the slot is freed (its references released) and nothing is posted.
func (ep *Endpoint) sendDirect(c *conn, s uint32, headLen, size int, head []byte, obj wire.Object, entries, zcBytes int) error {
	d := &ep.ds
	d.b = ep.builder(c, s)
	d.maxEntries, d.maxBytes = entries, zcBytes
	d.entries, d.bytes, d.zcEntries, d.zcBytes = 0, 0, 0, 0
	copy(d.b.data, head)
	d.b.reserve(headLen)
	err := obj.Serialize(d.b.data[len(head):headLen], d)
	if err == nil && (d.entries != entries || d.bytes != zcBytes) {
		err = fmt.Errorf("%w: got %d entries / %d bytes, declared %d / %d",
			datapath.ErrBadObject, d.entries, d.bytes, entries, zcBytes)
	}
	if err != nil {
		ep.st.Errors++
		d.b = txBuilder{}
		c.freeSlot(s)
		return err
	}
	d.b.flushSeg()
	st := &ep.st
	st.CopiedEntries += uint64(1 + d.entries - d.zcEntries)
	st.CopiedBytes += uint64(headLen + d.bytes - d.zcBytes)
	st.ZeroCopyEntries += uint64(d.zcEntries)
	st.ZeroCopyBytes += uint64(d.zcBytes)
	nseg := d.b.nseg
	d.b = txBuilder{}
	return ep.post(c, s, nseg, size, true)
}
