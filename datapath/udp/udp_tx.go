package udp

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// reserve queues an empty packet to dst with room for nseg iovecs,
// flushing first when the batch is full.
func (e *Endpoint) reserve(dst netip.AddrPort, nseg, size int) (*txPkt, error) {
	if size > e.maxPay {
		return nil, datapath.ErrTooLarge
	}
	if nseg > e.maxSeg {
		return nil, datapath.ErrTooManySegments
	}
	if !dst.IsValid() {
		return nil, fmt.Errorf("udp: invalid destination %v", dst)
	}
	if e.txn == e.batch || e.iovN+nseg > len(e.iov) {
		if err := e.flush(); err != nil {
			return nil, err
		}
	}
	nl, ok := putSockaddr(&e.names[e.txn], e.v6, dst)
	if !ok {
		return nil, ErrAddrFamily
	}
	// Field by field, not as one composite literal: a literal is built on
	// the stack and copied with 16-byte loads that stall on the narrower
	// stores that just wrote dst there (store forwarding, ~10 ns a packet).
	p := &e.tx[e.txn]
	p.dst, p.nameLen, p.size = dst, nl, size
	p.iov0, p.iovN, p.ref0, p.refN, p.stage0 = e.iovN, 0, e.refN, 0, e.stageOff
	p.zc, p.zcEntries, p.zcBytes, p.cpEntries, p.cpBytes = false, 0, 0, 0, 0
	return p, nil
}

// push adds b (an owned reference) as the packet's next segment.
func (e *Endpoint) push(p *txPkt, b mem.Buf) {
	e.pushIov(p, b.Bytes())
	e.refs[e.refN] = b
	e.refN++
	p.refN++
}

// pushIov adds b as the packet's next segment without a reference to
// hold (bytes in the TX stage).
func (e *Endpoint) pushIov(p *txPkt, b []byte) {
	e.iov[e.iovN] = iovec(b)
	e.iovN++
	p.iovN++
}

// commit makes the reserved packet part of the batch.
func (e *Endpoint) commit(p *txPkt) {
	e.txn++
	e.stats.ZeroCopyEntries += uint64(p.zcEntries)
	e.stats.ZeroCopyBytes += uint64(p.zcBytes)
	e.stats.CopiedEntries += uint64(p.cpEntries)
	e.stats.CopiedBytes += uint64(p.cpBytes)
}

// abort drops the reserved packet, releasing what it took.
func (e *Endpoint) abort(p *txPkt) {
	for i := p.ref0; i < p.ref0+p.refN; i++ {
		e.refs[i].Release()
		e.refs[i] = mem.Buf{}
	}
	e.iovN, e.refN, e.stageOff = p.iov0, p.ref0, p.stage0
}

// copyHead takes n bytes of TX memory (from the stage, or else a pool
// buffer), copies src into its start and appends it to the packet. n may
// exceed len(src) (room for an object). The result is valid until the
// next flush.
func (e *Endpoint) copyHead(p *txPkt, src []byte, n int) ([]byte, error) {
	var b []byte
	if o := e.stageOff; n <= len(e.stage)-o {
		b = e.stage[o : o+n : o+n]
		e.stageOff += n
		e.pushIov(p, b)
	} else {
		tb, err := e.pool.Alloc(n)
		if err != nil {
			return nil, fmt.Errorf("udp: TX buffer: %w", err)
		}
		b = tb.Bytes()
		e.push(p, tb)
	}
	copy(b, src)
	p.cpEntries++
	p.cpBytes += n
	return b, nil
}

// Send queues a packet whose payload is a copy of b.
func (e *Endpoint) Send(dst netip.AddrPort, b []byte) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	p, err := e.reserve(dst, 1, len(b))
	if err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err := e.copyHead(p, b, len(b)); err != nil {
			e.abort(p)
			return err
		}
	}
	e.commit(p)
	return nil
}

// AppendPacket queues a packet of n payload bytes to dst and returns the
// payload for the caller to fill: Send without the caller's staging copy
// (the RPC encodes header and small data straight into it). The slice
// aliases a TX buffer the queue owns; it is valid only until the next
// call on e (the next Send, SendSegments, AppendPacket, Flush, Recv or
// Close may transmit or release it), so fill it at once. Its contents are
// not zeroed.
func (e *Endpoint) AppendPacket(dst netip.AddrPort, n int) ([]byte, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	b, err := e.appendPacket(dst, n)
	e.exit() // not deferred (the RPC's per-packet path): appendPacket does not panic
	return b, err
}

func (e *Endpoint) appendPacket(dst netip.AddrPort, n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("udp: AppendPacket of %d bytes", n)
	}
	p, err := e.reserve(dst, 1, n)
	if err != nil {
		return nil, err
	}
	b, err := e.copyHead(p, nil, n)
	if err != nil {
		e.abort(p)
		return nil, err
	}
	e.commit(p)
	return b, nil
}

// SendSegments queues head (copied) followed by segs (zero-copy; borrowed:
// the endpoint clones them and releases the clones when the send is
// complete).
func (e *Endpoint) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	if len(segs) > e.maxSeg-1 {
		return datapath.ErrTooManySegments
	}
	size := len(head)
	for _, s := range segs {
		if err := s.Check(); err != nil {
			return fmt.Errorf("udp: segment: %w", err)
		}
		size += s.Len()
	}
	p, err := e.reserve(dst, 1+len(segs), size)
	if err != nil {
		return err
	}
	if len(head) > 0 {
		if _, err := e.copyHead(p, head, len(head)); err != nil {
			e.abort(p)
			return err
		}
	}
	for _, s := range segs {
		e.addEntry(p, s.Clone())
	}
	e.commit(p)
	return nil
}

func (e *Endpoint) addEntry(p *txPkt, c mem.Buf) {
	e.push(p, c)
	p.zcEntries++
	p.zcBytes += c.Len()
	if e.zcMin > 0 && c.Len() >= e.zcMin {
		p.zc = true
	}
}

// objSink receives an object's zero-copy entries during SendObject.
type objSink Endpoint

func (s *objSink) ZeroCopyEntry(b mem.Buf) error {
	e := (*Endpoint)(s)
	if err := b.Check(); err != nil {
		return fmt.Errorf("udp: object entry: %w", err)
	}
	if e.collect {
		if len(e.scratch) >= MaxObjectEntries {
			return fmt.Errorf("%w: more than %d entries", ErrBadObject, MaxObjectEntries)
		}
		e.scratch = append(e.scratch, b.Clone())
		return nil
	}
	if e.iovN >= e.sinkLimit {
		return fmt.Errorf("%w: more entries than Sizes().Entries", ErrBadObject)
	}
	e.addEntry(e.sink, b.Clone())
	return nil
}

// SendObject queues head followed by obj, serialized in place: one TX
// buffer holds head, the object header and its copied fields; each
// zero-copy entry is one more iovec (cloned, released at completion). When
// the object has more entries than MaxSegments-1, the smallest are copied
// into TX buffers so that the packet fits.
func (e *Endpoint) SendObject(dst netip.AddrPort, head []byte, obj wire.Object) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	sz, size, err := driver.CheckSendObject(head, obj, e.maxPay)
	if err != nil {
		return err
	}
	if sz.Entries > e.maxSeg-1 {
		return e.sendObjectCopying(dst, head, obj, sz, size)
	}
	p, err := e.reserve(dst, 1+sz.Entries, size)
	if err != nil {
		return err
	}
	hn := len(head) + sz.Head()
	var hb []byte
	if hn > 0 {
		if hb, err = e.copyHead(p, head, hn); err != nil {
			e.abort(p)
			return err
		}
	}
	e.sink, e.sinkLimit, e.collect = p, e.iovN+sz.Entries, false
	err = obj.Serialize(hb[len(head):hn], (*objSink)(e))
	e.sink = nil
	if err == nil && (p.zcEntries != sz.Entries || p.zcBytes != sz.ZeroCopy) {
		err = fmt.Errorf("%w: %d entries of %d bytes, Sizes says %d of %d", ErrBadObject, p.zcEntries, p.zcBytes, sz.Entries, sz.ZeroCopy)
	}
	if err != nil {
		e.abort(p)
		return err
	}
	e.commit(p)
	return nil
}

// sendObjectCopying is SendObject for objects with more entries than
// MaxSegments-1. It collects the entries, lets driver.Selector keep the
// largest zero-copy within the budget and copies the others into the same
// TX buffer as the head: the leading run of copied entries extends the head
// segment, every later run is one more segment pointing into that buffer.
func (e *Endpoint) sendObjectCopying(dst netip.AddrPort, head []byte, obj wire.Object, sz wire.Sizes, size int) error {
	if sz.Entries > MaxObjectEntries {
		return fmt.Errorf("%w: %d entries (limit %d)", ErrBadObject, sz.Entries, MaxObjectEntries)
	}
	hn := len(head) + sz.Head()
	// Room for the head and, at worst, every entry copied.
	tbuf, err := e.pool.Alloc(size)
	if err != nil {
		return fmt.Errorf("udp: TX buffer: %w", err)
	}
	tb := tbuf.Bytes()
	copy(tb, head)
	e.scratch = e.scratch[:0]
	e.collect = true
	err = obj.Serialize(tb[len(head):hn], (*objSink)(e))
	e.collect = false
	ents := e.scratch
	defer func() {
		for i := range ents {
			ents[i].Release()
			ents[i] = mem.Buf{}
		}
		e.scratch = e.scratch[:0]
	}()
	e.sizes = e.sizes[:0]
	total := 0
	for _, b := range ents {
		e.sizes = append(e.sizes, b.Len())
		total += b.Len()
	}
	if err == nil && (len(ents) != sz.Entries || total != sz.ZeroCopy) {
		err = fmt.Errorf("%w: %d entries of %d bytes, Sizes says %d of %d", ErrBadObject, len(ents), total, sz.Entries, sz.ZeroCopy)
	}
	if err != nil {
		tbuf.Release()
		return err
	}
	if e.sel == nil || e.sel.MaxSegments() != e.maxSeg {
		e.sel = driver.NewSelector(e.maxSeg)
	}
	keep := e.sel.Select(e.sizes)
	p, err := e.reserve(dst, driver.CountSegments(len(ents), keep), size)
	if err != nil {
		tbuf.Release()
		return err
	}
	// Segment layout: tb[0:off] grows with copied bytes; each zero-copy
	// entry closes the current TX segment.
	segStart, off, k := 0, hn, 0
	p.cpEntries++
	p.cpBytes += hn
	for i := range ents {
		if k < len(keep) && keep[k] == i {
			k++
			if off > segStart {
				e.pushTX(p, tbuf, segStart, off)
			}
			segStart = off
			e.addEntry(p, ents[i])
			ents[i] = mem.Buf{}
			continue
		}
		off += copy(tb[off:], ents[i].Bytes())
		p.cpEntries++
		p.cpBytes += ents[i].Len()
	}
	if off > segStart {
		e.pushTX(p, tbuf, segStart, off)
	}
	tbuf.Release() // every segment holds its own clone
	e.commit(p)
	return nil
}

// pushTX appends tbuf[from:to] as a segment holding its own reference.
func (e *Endpoint) pushTX(p *txPkt, tbuf mem.Buf, from, to int) {
	e.push(p, tbuf.Clone().Slice(from, to-from))
}

// Flush sends every queued packet and reaps zero-copy completions. Packets
// that cannot be sent (socket buffer full for longer than ~100 ms, route
// errors) are dropped and counted; the first such error is returned.
func (e *Endpoint) Flush() error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	return e.flush()
}

func (e *Endpoint) flush() error {
	var first error
	if e.zc != nil && e.zc.n > 0 {
		first = e.reap()
	}
	if e.txn == 0 {
		return first
	}
	for i := 0; i < e.txn; {
		zc := e.tx[i].zc
		limit := len(e.msgs)
		if zc {
			if room := e.zcRoom(); room > 0 {
				limit = room
			} else {
				zc = false // no notice arrived in time: copying sends for this run
			}
		}
		m, j := 0, i
		for j < e.txn && e.tx[j].zc == e.tx[i].zc && m < limit {
			j = e.planMsg(m, j)
			m++
		}
		flags := 0
		if zc {
			flags = unix.MSG_ZEROCOPY
		} else if e.tx[i].zc {
			e.zc.stats.Fallbacks += uint64(j - i)
		}
		next := j
		tries := 0
	send:
		for s := 0; s < m; {
			n, errno := sendmmsg(e.fd, e.msgs[s:m], flags)
			e.sys.SendCalls++
			switch {
			case errno == 0:
				e.sys.SendMsgs += uint64(n)
				for k := s; k < s+n; k++ {
					e.stats.TxPackets += uint64(e.msgPktN[k])
					e.stats.TxBytes += uint64(e.msgBytes[k])
					if zc {
						e.trackZC(e.msgPkt0[k])
					}
				}
				s += n
				tries = 0
			case errno == unix.EINTR:
			case errno == unix.EMSGSIZE && zc:
				// More pages than one skb may pin (MAX_SKB_FRAGS): send
				// this one copying.
				k, errno := sendmmsg(e.fd, e.msgs[s:s+1], 0)
				if k == 1 {
					e.stats.TxPackets += uint64(e.msgPktN[s])
					e.stats.TxBytes += uint64(e.msgBytes[s])
					e.zc.stats.Fallbacks++
				} else {
					e.stats.Errors++
					e.stats.Drops += uint64(e.msgPktN[s])
					if first == nil {
						first = fmt.Errorf("udp: send to %v: %w", e.tx[e.msgPkt0[s]].dst, errno)
					}
				}
				s++
			case errno == unix.ENOBUFS && zc:
				// Out of optmem for zero-copy notices: copy the rest.
				flags, zc = 0, false
				e.zc.stats.Fallbacks += uint64(m - s)
			case errno == unix.EAGAIN || errno == unix.ENOBUFS:
				if tries++; tries > sendWaitTries {
					for k := s; k < m; k++ {
						e.stats.Drops += uint64(e.msgPktN[k])
					}
					if first == nil {
						first = fmt.Errorf("udp: send: %w (socket buffer full, %d packets dropped)", errno, m-s)
					}
					break send
				}
				e.pollfd[0].Events, e.pollfd[0].Revents = unix.POLLOUT, 0
				poll(e.pollfd[:1], sendWaitMS)
			case e.msgPktN[s] > 1 && (errno == unix.EINVAL || errno == unix.EMSGSIZE || errno == unix.EIO):
				// The kernel refused this GSO segment size (larger than
				// the path MTU) or GSO on this route: stop using it and
				// re-plan from this message.
				if errno == unix.EIO {
					e.gso = false
				} else {
					e.gsoMax = e.msgSeg[s] - 1
				}
				next = e.msgPkt0[s]
				break send
			default:
				e.stats.Errors++
				e.stats.Drops += uint64(e.msgPktN[s])
				if first == nil {
					first = fmt.Errorf("udp: send to %v: %w", e.tx[e.msgPkt0[s]].dst, errno)
				}
				s++
			}
		}
		i = next
	}
	for k := 0; k < e.refN; k++ {
		if !e.refs[k].IsZero() {
			if err := e.refs[k].Release(); err != nil && first == nil {
				first = err
			}
			e.refs[k] = mem.Buf{}
		}
	}
	e.txn, e.iovN, e.refN, e.stageOff = 0, 0, 0, 0
	return first
}

// planMsg builds message m from packet i, merging the following packets to
// the same peer into one GSO send when sizes allow; it returns the index of
// the first packet not included.
func (e *Endpoint) planMsg(m, i int) int {
	p := &e.tx[i]
	iovEnd := p.iov0 + p.iovN
	total := p.size
	j := i + 1
	if e.gso && !p.zc && p.size > 0 && p.size <= e.gsoMax {
		for j < e.txn && j-i < maxGSOSegments {
			q := &e.tx[j]
			if q.zc || q.dst != p.dst || e.tx[j-1].size != p.size || q.size > p.size || q.size == 0 ||
				total+q.size > e.maxPay || q.iov0+q.iovN-p.iov0 > MaxSegmentsLimit {
				break
			}
			total += q.size
			iovEnd = q.iov0 + q.iovN
			j++
		}
	}
	var ctrl []byte
	if j-i > 1 {
		ctrl = e.ctrl[m*segCmsgSpace : (m+1)*segCmsgSpace]
		putSegmentCmsg(ctrl, uint16(p.size))
	}
	setMsg(&e.msgs[m].Hdr, &e.names[i], p.nameLen, e.iov[p.iov0:iovEnd], ctrl)
	e.msgs[m].Len = 0
	e.msgPkt0[m], e.msgPktN[m], e.msgBytes[m], e.msgSeg[m] = i, j-i, total, p.size
	return j
}
