package driver

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// EntryCollector is a wire.EntrySink that takes a reference (Clone) on every
// zero-copy entry an object reports, into a slice that is reused from packet
// to packet, so that a datapath can keep the memory alive until the send
// completes. It enforces the object's declared Sizes: an entry beyond the
// declared count or bytes aborts Serialize with datapath.ErrBadObject.
//
// The zero value is ready to use. It is not safe for concurrent use.
type EntryCollector struct {
	// Bufs are the collected references, in wire order; the collector owns
	// them until Release, or until Reset hands them to the caller.
	Bufs []mem.Buf
	// Lens[i] is Bufs[i].Len(), kept for Selector.Select.
	Lens []int
	// Bytes is the sum of Lens.
	Bytes int

	maxEntries, maxBytes int
}

// ZeroCopyEntry implements wire.EntrySink: it clones b and appends it.
func (c *EntryCollector) ZeroCopyEntry(b mem.Buf) error {
	n := b.Len()
	if len(c.Bufs) >= c.maxEntries || c.Bytes+n > c.maxBytes {
		return fmt.Errorf("%w: more entries or bytes than declared (%d entries, %d bytes)",
			datapath.ErrBadObject, c.maxEntries, c.maxBytes)
	}
	if err := b.Check(); err != nil {
		return fmt.Errorf("datapath: zero-copy entry %d: %w", len(c.Bufs), err)
	}
	c.Bufs = append(c.Bufs, b.Clone())
	c.Lens = append(c.Lens, n)
	c.Bytes += n
	return nil
}

// Collect runs obj.Serialize(dst, c) after checking len(dst) against sz
// (obtained from obj.Sizes()), and checks that the entries match sz. On any
// error every reference taken is released and the collector is empty. On
// success c holds one reference per entry.
func (c *EntryCollector) Collect(obj wire.Object, sz wire.Sizes, dst []byte) error {
	if len(c.Bufs) != 0 {
		return errors.New("datapath: EntryCollector.Collect on a non-empty collector")
	}
	if len(dst) != sz.Head() || sz.Entries < 0 || sz.ZeroCopy < 0 {
		return fmt.Errorf("%w: bad sizes %+v for a %d-byte head", datapath.ErrBadObject, sz, len(dst))
	}
	c.maxEntries, c.maxBytes = sz.Entries, sz.ZeroCopy
	err := obj.Serialize(dst, c)
	if err == nil && (len(c.Bufs) != sz.Entries || c.Bytes != sz.ZeroCopy) {
		err = fmt.Errorf("%w: got %d entries / %d bytes, declared %d / %d",
			datapath.ErrBadObject, len(c.Bufs), c.Bytes, sz.Entries, sz.ZeroCopy)
	}
	if err != nil {
		if rerr := c.Release(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Release releases every collected reference and empties the collector.
func (c *EntryCollector) Release() error {
	var err error
	for i, b := range c.Bufs {
		if e := b.Release(); e != nil && err == nil {
			err = e
		}
		c.Bufs[i] = mem.Buf{}
	}
	c.Bufs = c.Bufs[:0]
	c.Lens = c.Lens[:0]
	c.Bytes = 0
	return err
}

// Reset empties the collector WITHOUT releasing (the caller took ownership
// of the references, e.g. by copying Bufs elsewhere).
func (c *EntryCollector) Reset() {
	clear(c.Bufs)
	c.Bufs = c.Bufs[:0]
	c.Lens = c.Lens[:0]
	c.Bytes = 0
}

// Len is the number of collected entries.
func (c *EntryCollector) Len() int { return len(c.Bufs) }

// Gather plans the packet made of tx[:headLen] (already holding the head)
// followed by the collected entries, within maxSegments segments (sel must
// have been created for that budget). Entries that do not stay zero-copy
// are copied into tx after the head, and their references released at once;
// the collector then holds only the zero-copy references, in order.
//
// It appends the packet's scatter-gather list to sg (slices of tx and of the
// zero-copy entries, in wire order) and returns it with the number of tx
// bytes used and the number of entries and bytes it copied. tx must have
// room for headLen plus the bytes of every copied entry (len(tx) >=
// headLen+c.Bytes always suffices); when all entries fit, nothing is copied
// and tx may be just headLen long.
//
// The slices in sg alias memory the caller must keep alive until the send
// completes: tx and the collector's references.
func (c *EntryCollector) Gather(sel *Selector, tx []byte, headLen int, sg [][]byte) (_ [][]byte, txLen, copiedEntries, copiedBytes int, err error) {
	keep := sel.Select(c.Lens)
	n := len(c.Bufs)
	if len(keep) == n {
		sg = append(sg, tx[:headLen])
		for _, b := range c.Bufs {
			sg = append(sg, b.Bytes())
		}
		return sg, headLen, 0, 0, nil
	}
	need := headLen
	for i, k := 0, 0; i < n; i++ {
		if k < len(keep) && keep[k] == i {
			k++
			continue
		}
		need += c.Lens[i]
	}
	if need > len(tx) {
		return sg, 0, 0, 0, fmt.Errorf("datapath: Gather needs a %d-byte TX buffer, got %d", need, len(tx))
	}
	off := headLen
	segStart := 0 // start in tx of the current copied run (the head run first)
	inRun := true
	w := 0 // next slot of kept references
	for i, k := 0, 0; i < n; i++ {
		b := c.Bufs[i]
		if k < len(keep) && keep[k] == i {
			k++
			if inRun {
				sg = append(sg, tx[segStart:off])
				inRun = false
			}
			sg = append(sg, b.Bytes())
			c.Bufs[w] = b
			c.Lens[w] = c.Lens[i]
			w++
			continue
		}
		if !inRun {
			segStart = off
			inRun = true
		}
		off += copy(tx[off:], b.Bytes())
		copiedEntries++
		copiedBytes += c.Lens[i]
		if e := b.Release(); e != nil && err == nil {
			err = e
		}
	}
	if inRun {
		sg = append(sg, tx[segStart:off])
	}
	clear(c.Bufs[w:])
	c.Bufs = c.Bufs[:w]
	c.Lens = c.Lens[:w]
	c.Bytes -= copiedBytes
	return sg, off, copiedEntries, copiedBytes, err
}
