package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// dstMAC resolves the destination's MAC address.
func (e *Endpoint) dstMAC(dst netip.AddrPort) ([6]byte, error) {
	if !dst.Addr().Unmap().Is4() {
		return [6]byte{}, fmt.Errorf("%w: %v", ErrAddrFamily, dst)
	}
	if e.hasPeer {
		return e.peerMAC, nil
	}
	return e.neigh.lookup(dst.Addr().Unmap())
}

// Send implements datapath.Endpoint.
func (e *Endpoint) Send(dst netip.AddrPort, p []byte) error {
	if err := e.guard.Enter(); err != nil {
		return err
	}
	defer e.guard.Exit()
	if len(p) > e.maxPay {
		return datapath.ErrTooLarge
	}
	mac, err := e.dstMAC(dst)
	if err != nil {
		e.st.Errors++
		return err
	}
	tb, err := e.pool.Alloc(HeaderLen + len(p))
	if err != nil {
		e.st.Errors++
		return fmt.Errorf("xdp: TX buffer: %w", err)
	}
	tx := tb.Bytes()
	copy(tx[HeaderLen:], p)
	e.ipID++
	writeHeader(tx, e.mac, mac, e.local, dstAddr(dst), len(p), e.ipID)
	e.descs = e.descs[:0]
	e.txOwned = true
	e.addTxRun(tb, 0, HeaderLen+len(p)) // takes tb's reference
	if e.csum {
		udpChecksum(tx, append(e.parts[:0], tx[HeaderLen:HeaderLen+len(p)]))
	}
	if len(p) > 0 {
		e.st.CopiedEntries++
		e.st.CopiedBytes += uint64(len(p))
	}
	return e.enqueue(len(p))
}

func dstAddr(d netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(d.Addr().Unmap(), d.Port())
}

// addTxRun adds descriptors for tb.Bytes()[from:to] (split at ChunkSize),
// each holding a reference on tb: the first one made while e.txOwned is set
// takes over the caller's reference (clearing txOwned), the others clones.
func (e *Endpoint) addTxRun(tb mem.Buf, from, to int) {
	base, _ := e.space.Offset(tb.Bytes())
	for from < to {
		n := e.piece(base+uint64(from), to-from)
		r := tb
		if e.txOwned {
			e.txOwned = false
		} else {
			r = tb.Clone()
		}
		e.descs = append(e.descs, txDesc{addr: base + uint64(from), n: uint32(n), buf: r})
		from += n
	}
}

// piece is the length of the next descriptor for n bytes at UMEM address
// addr: at most ChunkSize, and not crossing a 4 KiB page when pageSplit.
func (e *Endpoint) piece(addr uint64, n int) int {
	n = min(n, ChunkSize)
	if e.pageSplit {
		n = min(n, ChunkSize-int(addr%ChunkSize))
	}
	return n
}

// addZC adds descriptors for a zero-copy entry, taking over the reference
// b (cloned for every extra descriptor when it is split).
func (e *Endpoint) addZC(b mem.Buf, off uint64) {
	n := b.Len()
	first := true
	for done := 0; done < n; {
		k := e.piece(off+uint64(done), n-done)
		r := b
		if !first {
			r = b.Clone()
		}
		first = false
		e.descs = append(e.descs, txDesc{addr: off + uint64(done), n: uint32(k), buf: r})
		done += k
	}
}

// dropDescs releases the references of the assembled descriptors.
func (e *Endpoint) dropDescs() {
	for i := range e.descs {
		_ = e.descs[i].buf.Release()
		e.descs[i] = txDesc{}
	}
	e.descs = e.descs[:0]
}

// enqueue writes the assembled descriptors of one packet to the TX ring
// (making room by flushing when needed) and records them in flight.
func (e *Endpoint) enqueue(payload int) error {
	if len(e.descs) > MaxDescs {
		// Only possible when descriptors are split at pages (zero-copy
		// bind without hugetlb): send the packet from one TX buffer.
		if err := e.linearize(); err != nil {
			return err
		}
	}
	n := uint32(len(e.descs))
	for try := 0; e.tx.prodFree(n) < n || len(e.inflight)-e.ifLen < int(n); try++ {
		if try >= 64 {
			e.dropDescs()
			e.st.Drops++
			return ErrRingFull
		}
		if err := e.flush(); err != nil {
			e.dropDescs()
			return err
		}
		if try > 8 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	for i, d := range e.descs {
		slot := e.tx.desc(e.tx.cachedProd)
		slot.Addr = d.addr
		slot.Len = d.n
		slot.Options = 0
		if i < len(e.descs)-1 {
			slot.Options = unix.XDP_PKT_CONTD
		}
		e.tx.cachedProd++
		e.inflight[(e.ifHead+e.ifLen)&(len(e.inflight)-1)] = txRec{addr: d.addr, buf: d.buf}
		e.ifLen++
		e.descs[i] = txDesc{}
	}
	e.descs = e.descs[:0]
	e.ct.TxDescs += uint64(n)
	e.st.TxPackets++
	e.st.TxBytes += uint64(payload)
	e.queued++
	if e.queued >= e.batch {
		return e.flush()
	}
	return nil
}

// linearize replaces the assembled descriptors by a copy of the packet in
// one TX buffer (headers included, so checksums stay valid).
func (e *Endpoint) linearize() error {
	total := 0
	for _, d := range e.descs {
		total += int(d.n)
	}
	tb, err := e.pool.Alloc(total)
	if err != nil {
		e.dropDescs()
		e.st.Errors++
		return fmt.Errorf("xdp: TX buffer: %w", err)
	}
	dst, w := tb.Bytes(), 0
	for _, d := range e.descs {
		p, _ := e.space.Slice(d.addr, int(d.n))
		w += copy(dst[w:], p)
	}
	e.dropDescs()
	e.txOwned = true
	e.addTxRun(tb, 0, total) // takes tb's reference
	e.ct.Linearized++
	return nil
}

// SendSegments implements datapath.Endpoint. Segments that lie in the
// endpoint's UMEM are sent zero-copy (their own descriptors); others are
// copied into the TX buffer.
func (e *Endpoint) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	if err := e.guard.Enter(); err != nil {
		return err
	}
	defer e.guard.Exit()
	if len(segs) > e.maxSeg-1 {
		return datapath.ErrTooManySegments
	}
	total := len(head)
	for i, s := range segs {
		if err := s.Check(); err != nil {
			return fmt.Errorf("xdp: segment %d: %w", i, err)
		}
		total += s.Len()
	}
	if total > e.maxPay {
		return datapath.ErrTooLarge
	}
	mac, err := e.dstMAC(dst)
	if err != nil {
		e.st.Errors++
		return err
	}
	tb, err := e.pool.Alloc(HeaderLen + total)
	if err != nil {
		e.st.Errors++
		return fmt.Errorf("xdp: TX buffer: %w", err)
	}
	copy(tb.Bytes()[HeaderLen:], head)
	e.segScratch = e.segScratch[:0]
	for _, s := range segs {
		e.segScratch = append(e.segScratch, s.Clone())
	}
	if len(head) > 0 {
		e.st.CopiedEntries++
		e.st.CopiedBytes += uint64(len(head))
	}
	err = e.assemble(tb, HeaderLen+len(head), e.segScratch, mac, dst, total, false)
	clear(e.segScratch)
	if err != nil {
		return err
	}
	return e.enqueue(total)
}

// SendObject implements datapath.Endpoint: head, the object's header and
// copied fields go into one TX buffer; each zero-copy entry that lies in
// the UMEM becomes one more descriptor (XDP_PKT_CONTD chain). When there
// are more than MaxSegments-1 entries, the smallest are copied.
func (e *Endpoint) SendObject(dst netip.AddrPort, head []byte, obj wire.Object) error {
	if err := e.guard.Enter(); err != nil {
		return err
	}
	defer e.guard.Exit()
	sz, total, err := driver.CheckSendObject(head, obj, e.maxPay)
	if err != nil {
		return err
	}
	mac, err := e.dstMAC(dst)
	if err != nil {
		e.st.Errors++
		return err
	}
	tb, err := e.pool.Alloc(HeaderLen + total)
	if err != nil {
		e.st.Errors++
		return fmt.Errorf("xdp: TX buffer: %w", err)
	}
	tx := tb.Bytes()
	copy(tx[HeaderLen:], head)
	hl := HeaderLen + len(head)
	if err := e.coll.Collect(obj, sz, tx[hl:hl+sz.Head()]); err != nil {
		_ = tb.Release()
		return err
	}
	if n := len(head) + sz.Head(); n > 0 {
		e.st.CopiedEntries++
		e.st.CopiedBytes += uint64(n)
	}
	err = e.assemble(tb, hl+sz.Head(), e.coll.Bufs, mac, dst, total, true)
	e.coll.Reset()
	if err != nil {
		return err
	}
	return e.enqueue(total)
}

// assemble lays out one packet: tb holds the headers and txLen bytes of
// head/copied data; entries (owned references, consumed) follow in wire
// order. Entries in the UMEM stay zero-copy within the segment budget
// (select: pick with the Selector when there are too many); the others are
// copied into tb. It writes the headers and fills e.descs. tb's reference
// is consumed.
func (e *Endpoint) assemble(tb mem.Buf, txLen int, entries []mem.Buf, mac [6]byte, dst netip.AddrPort, total int, sel bool) error {
	n := len(entries)
	e.zc = e.zc[:0]
	e.lens = e.lens[:0]
	elig := 0
	for _, b := range entries {
		_, ok := e.space.Offset(b.Bytes())
		e.zc = append(e.zc, ok)
		e.lens = append(e.lens, b.Len())
		if ok {
			elig++
		}
	}
	if sel && n > e.maxSeg-1 {
		keep := e.sel.Select(e.lens)
		k := 0
		for i := range n {
			in := k < len(keep) && keep[k] == i
			if in {
				k++
			}
			e.zc[i] = e.zc[i] && in
		}
	}
	tx := tb.Bytes()
	e.descs = e.descs[:0]
	e.txOwned = true // the first run on tb takes tb's reference
	off, runStart := txLen, 0
	for i, b := range entries {
		if !e.zc[i] {
			off += copy(tx[off:], b.Bytes())
			e.st.CopiedEntries++
			e.st.CopiedBytes += uint64(b.Len())
			_ = b.Release()
			continue
		}
		if off > runStart {
			e.addTxRun(tb, runStart, off)
		}
		runStart = off
		a, _ := e.space.Offset(b.Bytes())
		e.addZC(b, a)
		e.st.ZeroCopyEntries++
		e.st.ZeroCopyBytes += uint64(b.Len())
	}
	if off > runStart || runStart == 0 {
		e.addTxRun(tb, runStart, off)
	}
	e.ipID++
	writeHeader(tx, e.mac, mac, e.local, dstAddr(dst), total, e.ipID)
	if e.csum {
		e.parts = e.parts[:0]
		for i, d := range e.descs {
			p, _ := e.space.Slice(d.addr, int(d.n))
			if i == 0 {
				p = p[HeaderLen:]
			}
			e.parts = append(e.parts, p)
		}
		udpChecksum(tx, e.parts)
		clear(e.parts)
	}
	if e.txOwned { // not reached: the headers always make a run on tb
		e.txOwned = false
		_ = tb.Release()
	}
	return nil
}

// Flush implements datapath.Endpoint: it publishes queued descriptors,
// kicks the kernel until the TX ring is drained (bounded) and reaps
// completions.
func (e *Endpoint) Flush() error {
	if err := e.guard.Enter(); err != nil {
		return err
	}
	defer e.guard.Exit()
	return e.flush()
}

func (e *Endpoint) flush() error {
	e.tx.publish()
	e.queued = 0
	for range flushKicks {
		e.reap()
		if e.tx.pending() == 0 {
			break
		}
		if !e.tx.needWakeup() {
			// A zero-copy driver is polling the ring by itself (it clears
			// the flag while it does): no syscall needed.
			break
		}
		e.ct.Kicks++
		if err := kick(e.fd); err != nil {
			switch {
			case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.EINTR):
				e.ct.KickRetries++
				continue
			default:
				e.st.Errors++
				return fmt.Errorf("xdp: TX kick: %w", err)
			}
		}
	}
	e.reap()
	return nil
}

// reap processes the completion ring: every completed descriptor's
// reference is released.
func (e *Endpoint) reap() {
	n := e.comp.consAvail()
	if n == 0 {
		return
	}
	for range n {
		addr := *e.comp.addr(e.comp.cachedCons)
		e.comp.cachedCons++
		e.complete(addr)
	}
	e.comp.release()
	e.ct.Completions += uint64(n)
}

// complete releases the oldest in-flight descriptor with address addr.
// Completions arrive in submission order (the head matches at once, and
// the done records are popped right away, so a batch of completions costs
// O(1) each); out of order, the records with the same address hold
// references to the same item, so which one is released does not matter.
func (e *Endpoint) complete(addr uint64) {
	mask := len(e.inflight) - 1 // a power of two
	for i := range e.ifLen {
		r := &e.inflight[(e.ifHead+i)&mask]
		if r.done {
			continue // completed out of order earlier, not popped yet
		}
		if r.addr != addr {
			e.ct.CompletionSkips++
			continue
		}
		_ = r.buf.Release()
		r.buf = mem.Buf{}
		r.done = true
		if i == 0 {
			e.popDone()
		}
		return
	}
	e.st.Errors++ // a completion we did not submit: kernel bug or corruption
}

// popDone removes the completed records at the head of the in-flight FIFO.
func (e *Endpoint) popDone() {
	mask := len(e.inflight) - 1
	for e.ifLen > 0 && e.inflight[e.ifHead].done {
		e.inflight[e.ifHead] = txRec{}
		e.ifHead = (e.ifHead + 1) & mask
		e.ifLen--
	}
}
