package shm

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
)

type connState uint8

const (
	connDialing  connState = iota // our hello sent, the peer's awaited
	connAccepted                  // accepted, the peer's hello awaited
	connUp
	connDead // hung up; lingers until the application released what it holds
)

// txSlot is one of our TX slots: in flight from post to completion, with
// the references of its zero-copy entries.
type txSlot struct {
	inflight bool
	zc       []mem.Buf
	zcBytes  int64
	hold     datapath.Holder // SendSegmentsHeld's owner of the segments
	// table and data are the slot's descriptor table and data area in
	// our region (sliced once, at setup).
	table, data []byte
}

// rxSlot is the receiver's state of one of the peer's slots: held while
// the application holds a segmented packet of it.
type rxSlot struct {
	held bool
	tok  mem.Buf // our reference on the packet's Hold
	segs [][]byte
}

// conn is one peer: a Unix socket (handshake and hang-up), our region
// (mapped read-write) and the peer's (read-only), and the peer's spaces.
type conn struct {
	ep        *Endpoint
	fd        int
	peer      netip.AddrPort
	state     connState
	since     time.Time
	err       error
	local     *region
	remote    *region
	peerMaps  [][]byte    // the peer's spaces, mapped read-only (spaceRefs[i].mem)
	spaceRefs []*spaceMap // our uses of the cached mappings
	peerEfd   int
	lim       limits

	// TX side (our slots).
	tx        []txSlot
	free      []uint32
	prod      uint64 // descriptors written
	published uint64 // descriptors visible to the peer (txProd)
	complCons uint64 // completions of ours consumed
	zcBytes   int64
	inflight  int

	// RX side (the peer's slots).
	cons      uint64 // peer descriptors consumed
	touched   byte   // touchBatch's reads (kept so that they are not removed)
	rx        []rxSlot
	held      []uint32
	complProd uint64
	complPub  uint64 // completions visible to the peer (complProd published)
	needWake  bool
}

func (ep *Endpoint) newConn(fd int, st connState) *conn {
	return &conn{ep: ep, fd: fd, state: st, since: time.Now(), peerEfd: -1}
}

// setupLocal creates our region and slots and returns the region's fd
// (to send, then close).
func (c *conn) setupLocal() (int, error) {
	fd, r, err := newRegion(c.ep.geo)
	if err != nil {
		return -1, err
	}
	c.local = r
	n := int(c.ep.geo.slots)
	c.tx = make([]txSlot, n)
	tl := int(r.g.maxSegs) * descSize
	for i := range c.tx {
		b := r.slot(uint32(i))
		c.tx[i].table, c.tx[i].data = b[:tl:tl], b[tl:]
	}
	c.free = make([]uint32, 0, n)
	for i := n - 1; i >= 0; i-- {
		c.free = append(c.free, uint32(i))
	}
	return fd, nil
}

// sendHello announces us to the peer with our region, doorbell and spaces.
func (c *conn) sendHello(regionFd int) error {
	ep := c.ep
	h := hello{addr: ep.addr, g: ep.geo, regionSize: ep.geo.size(), maxPayload: uint32(ep.maxPay)}
	fds := []int{regionFd, ep.efd}
	for _, s := range ep.spaces {
		h.spaces = append(h.spaces, uint64(s.Len()))
		fds = append(fds, s.SharedFd())
	}
	return sendMsg(c.fd, h.marshal(ep.msg), fds)
}

// attach maps what the peer's hello announced. fds are consumed (closed
// or kept) whatever the outcome.
func (c *conn) attach(h *hello, fds []int) (err error) {
	if len(fds) != 2+len(h.spaces) {
		closeAll(fds)
		return fmt.Errorf("hello carries %d descriptors, want %d", len(fds), 2+len(h.spaces))
	}
	var maps [][]byte
	var refs []*spaceMap
	defer func() {
		if err != nil {
			for _, m := range maps {
				unmap(m)
			}
			for _, sm := range refs {
				releaseSpace(sm)
			}
			closeAll(fds)
		}
	}()
	rm, err := mapPeer(fds[0], h.regionSize)
	if err != nil {
		return err
	}
	maps = append(maps, rm)
	g, err := readHeader(rm)
	if err != nil {
		return err
	}
	if g != h.g {
		return errors.New("region header disagrees with the hello")
	}
	if !isEventfd(fds[1]) {
		return errors.New("doorbell is not an eventfd")
	}
	for i, size := range h.spaces {
		sm, err := mapSpace(fds[2+i], size)
		if err != nil {
			return fmt.Errorf("space %d: %w", i+1, err)
		}
		refs = append(refs, sm)
	}
	_ = unix.Close(fds[0])
	for _, f := range fds[2:] {
		_ = unix.Close(f)
	}
	c.peerEfd = fds[1]
	c.remote = newRegionOf(rm, g)
	c.spaceRefs = refs
	c.peerMaps = make([][]byte, len(refs))
	for i, sm := range refs {
		c.peerMaps[i] = sm.mem
	}
	c.lim = limits{g: g, maxSegs: uint32(c.ep.maxSegs), maxPayload: uint64(c.ep.maxPay), spaces: h.spaces}
	c.rx = make([]rxSlot, g.slots)
	c.state = connUp
	return nil
}

// allocSlot takes a free TX slot.
func (c *conn) allocSlot() (uint32, bool) {
	k := len(c.free)
	if k == 0 || c.state == connDead {
		return 0, false
	}
	s := c.free[k-1]
	c.free = c.free[:k-1]
	return s, true
}

// prefetchTx enables touchSlot (a switch for the benchmark's A/B only).
var prefetchTx = true

// touchSlot writes the first byte of slot s's descriptor table and of its
// data area, the lines a send writes first; reapCompletions calls it for
// every slot the peer completed. The peer read those lines last, on its
// core: written here, a batch of completions' lines moves to this core
// together (their ownership requests overlap), instead of one line pair
// stalling each later send. The slot is free (the peer completed it and
// reads it no more), and every byte written here is rewritten before the
// slot is posted again.
func (c *conn) touchSlot(s uint32) {
	r := c.local
	off := r.slots + uint64(s)*uint64(r.g.slotSize)
	r.mem[off] = 0
	r.mem[off+uint64(r.g.maxSegs)*descSize] = 0
}

// freeSlot releases slot s's references and returns it to the free list.
func (c *conn) freeSlot(s uint32) {
	t := &c.tx[s]
	if len(t.zc) > 0 {
		// ReleaseAll drops each reference (the common case inline) and
		// zeroes the handles; it reports the first error.
		if err := mem.ReleaseAll(t.zc); err != nil {
			c.ep.st.Errors++
		}
		t.zc = t.zc[:0]
	}
	c.zcBytes -= t.zcBytes
	t.zcBytes = 0
	if t.inflight {
		t.inflight = false
		c.inflight--
	}
	c.free = append(c.free, s)
	if h := t.hold; h != nil {
		t.hold = nil
		h.Release() // last: the slot is consistent when the owner runs
	}
}

// slotFor returns the connection to dst (dialing it on first use) and a
// free TX slot of it.
func (ep *Endpoint) slotFor(dst netip.AddrPort) (*conn, uint32, error) {
	c := ep.last
	if c == nil || c.peer != dst || c.state == connDead {
		c = ep.byAddr[dst]
	}
	if c != nil && c.state == connDead {
		delete(ep.byAddr, dst)
		if c.err != nil {
			ep.st.Errors++
			return nil, 0, fmt.Errorf("shm: %v: %w", dst, c.err)
		}
		c = nil
	}
	if c == nil {
		var err error
		if c, err = ep.dial(dst); err != nil {
			ep.st.Errors++
			return nil, 0, err
		}
	}
	ep.last = c
	s, ok := c.allocSlot()
	if !ok {
		if c.state == connUp {
			c.reapCompletions()
		}
		if s, ok = c.allocSlot(); !ok {
			ep.st.Busy++
			return nil, 0, fmt.Errorf("%w: %v holds all %d slots", ErrBusy, dst, len(c.tx))
		}
	}
	return c, s, nil
}

// post makes slot s, holding nseg segments, the next descriptor of c.
func (ep *Endpoint) post(c *conn, s uint32, nseg, size int, autoFlush bool) error {
	if nseg > ep.maxSegs {
		c.freeSlot(s)
		ep.st.Errors++
		return fmt.Errorf("%w: %d segments", datapath.ErrTooManySegments, nseg)
	}
	t := &c.tx[s]
	t.inflight = true
	c.inflight++
	r := c.local
	// A plain store: the peer reads the entry only after it loaded
	// txProd, which publish stores atomically after it (a release), so
	// the entry costs no locked instruction per packet.
	*r.u64(offRings + 8*(c.prod&uint64(r.g.ringSize-1))) = uint64(nseg)<<32 | uint64(s)
	c.prod++
	ep.st.TxPackets++
	ep.st.TxBytes += uint64(size)
	ep.queued++
	if autoFlush && ep.queued >= ep.batch {
		return ep.flush()
	}
	return nil
}

// publish makes our written descriptors visible and wakes a sleeping peer.
func (c *conn) publish() {
	if c.state == connDead || c.published == c.prod {
		return
	}
	atomic.StoreUint64(c.local.u64(offTxProd), c.prod)
	c.published = c.prod
	if c.state == connUp {
		c.wakePeer()
	}
}

// wakePeer rings the peer's doorbell if it sleeps (it stores its flag
// before its last look at the rings, and we store our index before
// loading the flag, so one of us sees the other).
func (c *conn) wakePeer() {
	c.publishCompl()
	c.needWake = false
	if c.remote.sleeping() {
		var one = [8]byte{1}
		_, _ = unix.Write(c.peerEfd, one[:])
	}
}

// reapCompletions releases our slots the peer is done with.
func (c *conn) reapCompletions() {
	prod := c.remote.loadComplProd()
	if prod-c.complCons > complRing {
		c.violation("completion ring index jumped")
		return
	}
	if c.complCons == prod {
		return // nothing new: no store to the line the peer reads
	}
	for c.complCons != prod {
		s := c.remote.complEntry(c.complCons)
		c.complCons++
		if s >= uint32(len(c.tx)) || !c.tx[s].inflight {
			c.ep.st.BadCompletions++
			continue
		}
		c.freeSlot(s)
		if prefetchTx {
			c.touchSlot(s)
		}
	}
	atomic.StoreUint64(c.local.u64(offComplCons), c.complCons)
}

// complete gives the peer's slot s back to it.
func (c *conn) complete(s uint32) {
	if c.complProd-c.remote.loadComplCons() >= complRing {
		c.ep.st.CompletionDrops++
		return
	}
	r := c.local
	*r.u32(r.complAt + 4*(c.complProd%complRing)) = s // plain: published by publishCompl's atomic store
	c.complProd++
	// The index is published once per call (publishCompl), not per
	// completion: one store to the line the peer polls per batch.
	// A completion is urgent only for a sender short of slots: waking a
	// peer that sleeps waiting for packets would cost it (and us) a
	// system call for nothing; it reaps completions in its next call.
	// (The peer's index only steers this wake-up.)
	if c.remote.loadTxProd()-c.complProd >= uint64(c.remote.g.slots)/2 {
		c.needWake = true
	}
}

// publishCompl makes the completions written since the last call
// visible to the peer. Every endpoint call that completes packets (Recv,
// RecvSegments, Flush, Wait) ends with it, and wakePeer starts with it.
func (c *conn) publishCompl() {
	if c.complPub != c.complProd && c.local != nil && c.state != connDead {
		atomic.StoreUint64(c.local.u64(offComplProd), c.complProd)
		c.complPub = c.complProd
	}
}

// ringCheck returns the peer's published descriptor index, or false
// (after closing the connection) when it jumped.
func (c *conn) ringCheck() (uint64, bool) {
	prod := c.remote.loadTxProd()
	if prod-c.cons > uint64(c.remote.g.ringSize) {
		c.violation("descriptor ring index jumped")
		return 0, false
	}
	return prod, true
}

// parse validates the descriptor at c.cons. On a bad one it drops it
// (consumed and counted; completed when its slot is valid) and reports
// false.
func (c *conn) parse() (uint32, []seg, uint64, bool) {
	ep := c.ep
	e := c.remote.descEntry(c.cons)
	slot := uint32(e)
	var table []byte
	if slot < c.remote.g.slots {
		table = c.remote.slot(slot)[:c.remote.g.maxSegs*descSize]
	}
	slot, segs, total, err := parseDesc(e, table, &c.lim, ep.segTmp[:cap(ep.segTmp)])
	if err == nil && c.rx[slot].held {
		err = errSlotHeld
	}
	if err != nil {
		c.cons++
		ep.st.BadDescriptors++
		ep.st.Drops++
		if err != errBadSlot && err != errSlotHeld {
			c.complete(slot)
		}
		return 0, nil, 0, false
	}
	return slot, segs, total, true
}

// prefetchRx enables touchBatch (a switch for the benchmark's A/B only).
var prefetchRx = true

// touchBatch reads, for each of the next min(prod-cons, limit) posted
// descriptors, the first line of its slot's descriptor table and of its
// data area (where the head is), and the data area's second line for a
// packet of one segment (all inline: 65 to 128 bytes — a typed call's
// request or response with the RPC header — span two lines), before any
// of them is parsed. The peer
// wrote them on its core: read one packet at a time, each packet's misses
// come after the previous packet's work (parse, allocation, copy), and do
// not overlap; read here, the whole batch's misses overlap, and the parse
// finds the lines in cache. Only the ring entry's slot index is used, and
// only when it is in range (parse validates everything again; a bad entry
// costs nothing more here). The loads are summed into c.touched so that
// they are kept.
func (c *conn) touchBatch(prod uint64, limit int) {
	if !prefetchRx {
		return
	}
	r := c.remote
	k := prod - c.cons
	if k > uint64(limit) {
		k = uint64(limit)
	}
	if k < 2 {
		return // nothing to overlap
	}
	// Hoisted: the loop is a load, a compare and two or three loads per packet.
	m := r.mem
	mask := uint64(r.g.ringSize - 1)
	slots, base, size := r.g.slots, r.slots, uint64(r.g.slotSize)
	table := uint64(r.g.maxSegs) * descSize
	// The data area's second line, when the data area has one (second
	// is 0 otherwise: the first line read again).
	second := uint64(0)
	if r.g.dataCap > 64 {
		second = 64
	}
	var sum byte
	for i, end := c.cons, c.cons+k; i != end; i++ {
		e := atomic.LoadUint64((*uint64)(unsafe.Pointer(&m[offRings+8*(i&mask)])))
		if s := uint32(e); s < slots {
			off := base + uint64(s)*size
			sum += m[off] + m[off+table]
			// The second line for a packet of one segment only (the ring
			// entry's count: no load to wait for): all of it inline, as a
			// typed call's (72 or 80 bytes) may be. A head followed by
			// zero-copy segments is usually short, and its second line
			// would only take a fill buffer from the first lines' misses.
			if e>>32 == 1 {
				sum += m[off+table+second]
			}
		}
	}
	c.touched += sum
}

// segBytes returns the bytes of a validated segment of the peer's slot.
func (c *conn) segBytes(slot uint32, s seg) []byte {
	if s.space == 0 {
		b := c.remote.slot(slot)[c.remote.g.maxSegs*descSize:]
		return b[s.off : s.off+uint64(s.n) : s.off+uint64(s.n)]
	}
	m := c.peerMaps[s.space-1]
	return m[s.off : s.off+uint64(s.n) : s.off+uint64(s.n)]
}

// recvCopy receives into contiguous RX buffers and completes at once.
func (c *conn) recvCopy(pkts []datapath.Packet) (int, error) {
	prod, ok := c.ringCheck()
	if !ok {
		return 0, nil
	}
	ep := c.ep
	c.touchBatch(prod, len(pkts))
	n := 0
	for c.cons != prod && n < len(pkts) {
		slot, segs, total, ok := c.parse()
		if !ok {
			continue
		}
		// The segments' bytes, as segBytes gives them (inlined: the
		// slot's data area is found once per packet).
		data := c.remote.slot(slot)[c.remote.g.maxSegs*descSize:]
		big, bigAt := rxAlignSeg(segs)
		slack := 0
		if big >= 0 && sameClass(int(total), int(total)+rxAlign-1) && int(total)+rxAlign-1 <= ep.pool.MaxSize() {
			slack = rxAlign - 1
		}
		buf, err := ep.pool.Alloc(max(int(total)+slack, 1))
		if err != nil {
			ep.st.Errors++
			return n, fmt.Errorf("shm: RX buffer: %w", err)
		}
		if slack != 0 {
			// The largest segment's destination congruent to its source
			// modulo rxAlign (rxAlignPad), within the class's slack.
			s := segs[big]
			src := data
			if s.space != 0 {
				src = c.peerMaps[s.space-1]
			}
			buf = buf.Slice(rxAlignPad(&src[s.off], &buf.Bytes()[bigAt]), int(total))
		} else {
			buf = buf.Slice(0, int(total))
		}
		b := buf.Bytes()
		w := 0
		for _, s := range segs {
			src := data
			if s.space != 0 {
				src = c.peerMaps[s.space-1]
			}
			w += copy(b[w:], src[s.off:s.off+uint64(s.n)])
		}
		c.cons++
		c.complete(slot)
		// Field by field: the composite literal is built on the stack
		// and moved with a bulk write barrier.
		p := &pkts[n]
		p.Buf = buf
		p.From = c.peer
		n++
		ep.st.RxPackets++
		ep.st.RxBytes += total
		ep.st.RxCopiedBytes += total
	}
	return n, nil
}

// recvSegs receives segmented packets: heads copied, the rest aliased.
func (c *conn) recvSegs(pkts []datapath.Segmented) (int, error) {
	prod, ok := c.ringCheck()
	if !ok {
		return 0, nil
	}
	ep := c.ep
	c.touchBatch(prod, len(pkts))
	n := 0
	for c.cons != prod && n < len(pkts) {
		slot, segs, total, ok := c.parse()
		if !ok {
			continue
		}
		headBytes := 0
		for _, s := range segs {
			if s.space == 0 {
				headBytes += int(s.n)
			}
		}
		tok, err := ep.pool.Alloc(max(headBytes, 1))
		if err != nil {
			ep.st.Errors++
			return n, fmt.Errorf("shm: RX head buffer: %w", err)
		}
		tok = tok.Slice(0, headBytes)
		rx := &c.rx[slot]
		if rx.segs == nil {
			rx.segs = make([][]byte, 0, c.remote.g.maxSegs+1)
		}
		out := rx.segs[:0]
		tb := tok.Bytes()
		if len(segs) == 0 || segs[0].space != 0 {
			out = append(out, tb[:0:0])
		}
		w := 0
		for _, s := range segs {
			src := c.segBytes(slot, s)
			if s.space == 0 {
				k := copy(tb[w:], src)
				out = append(out, tb[w:w+k:w+k])
				w += k
				continue
			}
			out = append(out, src)
			ep.st.RxZeroCopyBytes += uint64(len(src))
		}
		rx.segs = out
		rx.held = true
		rx.tok = tok.Clone()
		c.held = append(c.held, slot)
		c.cons++
		pkts[n] = datapath.Segmented{Segs: out, Hold: tok, From: c.peer}
		n++
		ep.st.RxPackets++
		ep.st.RxBytes += total
		ep.st.RxHeadBytes += uint64(headBytes)
	}
	if n > 1 && ep.opts.TouchSegments {
		c.touchSegments(pkts[:n])
	}
	return n, nil
}

// touchSegments reads one byte of the first, middle and last line of every
// segment of pkts but the first (Options.TouchSegments): independent loads,
// so that the misses of a batch's segments in the sender's memory overlap.
// A packet's first segment is its head, copied into this endpoint's memory
// (recvSegs puts it first, empty when there is none); a later head segment
// is read too (a hit).
func (c *conn) touchSegments(pkts []datapath.Segmented) {
	var sum byte
	for i := range pkts {
		segs := pkts[i].Segs
		if len(segs) < 2 {
			continue
		}
		for _, s := range segs[1:] {
			if n := len(s); n > 0 {
				sum += s[0] + s[n/2] + s[n-1]
			}
		}
	}
	c.touched += sum
}

// scanHeld completes the held packets whose Hold the application released
// (only our reference is left).
func (c *conn) scanHeld() {
	for i := 0; i < len(c.held); {
		s := c.held[i]
		rx := &c.rx[s]
		// Still held: our reference is live (the application did not
		// release the packet once too often) and not the only one.
		if rx.tok.Live() && rx.tok.Refs() > 1 {
			i++
			continue
		}
		if err := rx.tok.Release(); err != nil {
			c.ep.st.Errors++ // released once too often by the application
		}
		rx.tok, rx.held = mem.Buf{}, false
		// rx.segs keeps its stale views (of mapped memory, not the Go
		// heap): they are overwritten when the slot is received again.
		last := len(c.held) - 1
		c.held[i] = c.held[last]
		c.held = c.held[:last]
		if c.state == connUp {
			c.complete(s)
		}
	}
}

// dropHeld releases the connection's own reference on every packet the
// application still holds, for Close: nothing scans them afterwards, so
// the application's release is then the last one and returns the head
// buffer to the pool. The peer's memory those packets alias stays mapped.
func (c *conn) dropHeld() {
	for _, s := range c.held {
		rx := &c.rx[s]
		if err := rx.tok.Release(); err != nil {
			c.ep.st.Errors++
		}
		rx.tok, rx.held = mem.Buf{}, false
	}
	c.held = c.held[:0]
}

func (c *conn) violation(why string) {
	c.ep.st.Violations++
	c.kill(fmt.Errorf("shm: peer %v: %s", c.peer, why))
}

// kill ends the connection: the socket is closed and every reference held
// for packets the peer has not released is released now (the peer may
// read them no longer). Mappings stay until finalize.
func (c *conn) kill(err error) {
	if c.state == connDead {
		return
	}
	if c.state == connUp || c.state == connDialing {
		c.ep.st.PeersLost++
	}
	c.state = connDead
	c.err = err
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	for s := range c.tx {
		if c.tx[s].inflight {
			c.freeSlot(uint32(s))
		}
	}
	if c.ep.byAddr[c.peer] == c {
		if err == nil {
			delete(c.ep.byAddr, c.peer)
		}
	}
}

// finalize unmaps everything of a dead connection whose received packets
// were all released.
func (c *conn) finalize() {
	if c.remote != nil {
		unmap(c.remote.mem)
		c.remote = nil
	}
	for _, sm := range c.spaceRefs {
		releaseSpace(sm)
	}
	c.peerMaps, c.spaceRefs = nil, nil
	if c.local != nil {
		unmap(c.local.mem)
		c.local = nil
	}
	if c.peerEfd >= 0 {
		_ = unix.Close(c.peerEfd)
		c.peerEfd = -1
	}
}

// ready reports whether the connection has descriptors or completions
// waiting.
func (c *conn) ready() bool {
	if c.state != connUp {
		return false
	}
	return c.remote.loadTxProd() != c.cons || c.remote.loadComplProd() != c.complCons
}

func (c *conn) setSleeping(v uint32) {
	if c.local != nil && c.state != connDead {
		atomic.StoreUint32(c.local.u32(offSleeping), v)
	}
}
