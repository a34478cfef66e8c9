package shm

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/datapath/internal/wakefd"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Defaults of shm endpoints.
const (
	// DefaultMaxPayload is the default Config.MaxPayload: the largest
	// packet, which is also the data area of each TX slot (memory is only
	// committed where a slot is written).
	DefaultMaxPayload = 1 << 20
	// DefaultMaxSegments is the default Config.MaxSegments (head
	// included).
	DefaultMaxSegments = 32
	// DefaultSlots is the default Options.Slots: packets in flight per
	// peer and direction.
	DefaultSlots = 256
	// DefaultMaxZeroCopyBytes is the default Options.MaxZeroCopyBytes.
	DefaultMaxZeroCopyBytes = 64 << 20
	// DefaultHandshakeTimeout is the default Options.HandshakeTimeout.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultCloseLinger is the default Options.CloseLinger.
	DefaultCloseLinger = 100 * time.Millisecond
	// HybridThresholdShm is the hybrid threshold reported by shm
	// endpoints (datapath.HybridThresholder): a zero-copy entry costs a
	// descriptor, a reference and a completion instead of a copy, which
	// `cornflakes calibrate --datapath shm` finds cheaper than copying
	// from 256 bytes per entry on (docs/perf/shm4.md).
	HybridThresholdShm = 256
	// pollEvery is how often a busy endpoint checks its sockets
	// (connections, hang-ups) from Recv and Flush.
	pollEvery = time.Millisecond
)

func init() {
	datapath.Register("shm", func(cfg datapath.Config) (datapath.Endpoint, error) { return Open(cfg) })
}

// Endpoint is a shared-memory endpoint; it implements datapath.Endpoint,
// datapath.SegmentReceiver, HybridThresholder and TimelyTuner.
type Endpoint struct {
	guard    driver.Guard
	addr     netip.AddrPort
	name     string // rendezvous socket name
	lfd      int    // listening socket
	efd      int    // our doorbell (peers write it)
	wake     wakefd.FD
	pool     *mem.Pool
	ownPool  bool
	spaces   []*mem.Space
	geo      geometry
	opts     Options
	batch    int
	busyPoll bool
	maxPay   int
	maxSegs  int

	conns    []*conn
	byAddr   map[netip.AddrPort]*conn
	last     *conn // the connection of the last send (saves the map lookup)
	sel      *driver.Selector
	zc       driver.EntryCollector
	ds       directSink // SendObject's sink when no selection is needed
	sga      wire.SGA   // SendObject's scratch for generated messages
	sw       sgaWriter  // writeSGA's layout state (scratch)
	lens     []int      // writeSGASelect's entry lengths for the Selector
	queued   int
	lastPoll time.Time
	loopNow  time.Time // SetLoopTime's reading, for loopUses more socket checks
	loopUses int
	pfds     []unix.PollFd
	pconns   []*conn // the connection of each pfds entry after the first three
	msg      []byte
	segTmp   []seg
	rr       int
	st       Stats

	wokenFlag atomic.Bool // Wake was called (for busy-polling Waits)
}

var (
	_ datapath.Endpoint          = (*Endpoint)(nil)
	_ datapath.SegmentReceiver   = (*Endpoint)(nil)
	_ datapath.HybridThresholder = (*Endpoint)(nil)
	_ datapath.TimelyTuner       = (*Endpoint)(nil)
	_ datapath.LoopClock         = (*Endpoint)(nil)
)

// Open creates an endpoint listening at cfg.Local (see the package
// documentation for addresses): an invalid cfg.Local means 127.0.0.1 and
// port 0 an unused port in [49152, 65535].
func Open(cfg datapath.Config) (*Endpoint, error) {
	o, ok := driver.OptionsOf[Options](cfg.Options)
	if !ok {
		return nil, fmt.Errorf("%w: Config.Options is %T, want shm.Options", ErrConfig, cfg.Options)
	}
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	ep := &Endpoint{
		lfd: -1, efd: -1,
		opts:     o,
		batch:    def(cfg.Batch, datapath.DefaultBatch),
		busyPoll: cfg.BusyPoll,
		maxPay:   def(cfg.MaxPayload, DefaultMaxPayload),
		maxSegs:  def(cfg.MaxSegments, DefaultMaxSegments),
		byAddr:   make(map[netip.AddrPort]*conn),
		msg:      make([]byte, maxMsg),
	}
	if ep.opts.Namespace == "" {
		ep.opts.Namespace = "default"
	}
	slots := def(o.Slots, DefaultSlots)
	ep.opts.MaxZeroCopyBytes = int64(def(int(o.MaxZeroCopyBytes), DefaultMaxZeroCopyBytes))
	if ep.opts.HandshakeTimeout <= 0 {
		ep.opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if ep.opts.CloseLinger <= 0 {
		ep.opts.CloseLinger = DefaultCloseLinger
	}
	switch {
	case ep.maxPay < 1 || ep.maxPay > MaxMaxPayload:
		return nil, fmt.Errorf("%w: MaxPayload %d out of range [1, %d]", ErrConfig, ep.maxPay, MaxMaxPayload)
	case ep.maxSegs < 2 || ep.maxSegs > MaxMaxSegments:
		return nil, fmt.Errorf("%w: MaxSegments %d out of range [2, %d]", ErrConfig, ep.maxSegs, MaxMaxSegments)
	case slots < 1 || slots > MaxSlots:
		return nil, fmt.Errorf("%w: Slots %d out of range [1, %d]", ErrConfig, slots, MaxSlots)
	case ep.batch < 1:
		return nil, fmt.Errorf("%w: Batch %d must be positive", ErrConfig, ep.batch)
	}
	ep.geo = newGeometry(slots, ep.maxSegs, ep.maxPay)
	for _, s := range o.Spaces {
		if s == nil || !s.Shared() {
			return nil, fmt.Errorf("%w: Options.Spaces holds a space that is not shared (mem.SpaceConfig.Shared)", ErrConfig)
		}
		ep.addSpace(s)
	}
	if cfg.Pool != nil && cfg.Pool.Space().Shared() {
		ep.addSpace(cfg.Pool.Space())
	}
	if len(ep.spaces) > MaxPeerSpaces {
		return nil, fmt.Errorf("%w: %d shared spaces, at most %d", ErrConfig, len(ep.spaces), MaxPeerSpaces)
	}
	ep.sel = driver.NewSelector(ep.maxSegs)
	ep.segTmp = make([]seg, 0, MaxMaxSegments)
	if err := ep.bind(cfg.Local); err != nil {
		return nil, err
	}
	var err error
	if ep.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		ep.closeFds()
		return nil, fmt.Errorf("shm: eventfd: %w", err)
	}
	if err := ep.wake.Open(); err != nil {
		ep.closeFds()
		return nil, fmt.Errorf("shm: %w", err)
	}
	if cfg.Pool != nil {
		ep.pool = cfg.Pool
	} else {
		p, err := mem.NewPool(mem.PoolConfig{Name: "shm " + ep.addr.String()})
		if err != nil {
			ep.closeFds()
			return nil, fmt.Errorf("shm: creating pool: %w", err)
		}
		ep.pool, ep.ownPool = p, true
	}
	ep.lastPoll = time.Now()
	return ep, nil
}

func (ep *Endpoint) addSpace(s *mem.Space) {
	for _, x := range ep.spaces {
		if x == s {
			return
		}
	}
	ep.spaces = append(ep.spaces, s)
}

// bind creates the rendezvous socket for local (an ephemeral port when
// its port is 0).
func (ep *Endpoint) bind(local netip.AddrPort) error {
	ip := local.Addr().Unmap()
	if !local.IsValid() || !ip.IsValid() {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	try := func(port uint16) error {
		a := netip.AddrPortFrom(ip, port)
		name := sockName(ep.opts.Dir, ep.opts.Namespace, a)
		fd, err := listen(name)
		if err != nil {
			return err
		}
		ep.addr, ep.name, ep.lfd = a, name, fd
		return nil
	}
	if local.Port() != 0 {
		if err := try(local.Port()); err != nil {
			return fmt.Errorf("shm: listening at %v (%s): %w", netip.AddrPortFrom(ip, local.Port()), sockName(ep.opts.Dir, ep.opts.Namespace, netip.AddrPortFrom(ip, local.Port())), err)
		}
		return nil
	}
	var err error
	for range 64 {
		if err = try(uint16(49152 + rand.IntN(16384))); err == nil {
			return nil
		}
		if err != unix.EADDRINUSE {
			break
		}
	}
	return fmt.Errorf("shm: no free port on %v: %w", ip, err)
}

// LocalAddr implements datapath.Endpoint: the address peers send to (the
// name of this endpoint's rendezvous socket).
func (ep *Endpoint) LocalAddr() netip.AddrPort { return ep.addr }

// SocketName is the rendezvous socket's name ("@..." for an abstract name).
func (ep *Endpoint) SocketName() string { return ep.name }

// MaxPayload implements datapath.Endpoint.
func (ep *Endpoint) MaxPayload() int { return ep.maxPay }

// MaxSegments implements datapath.Endpoint.
func (ep *Endpoint) MaxSegments() int { return ep.maxSegs }

// HybridThreshold implements datapath.HybridThresholder.
func (ep *Endpoint) HybridThreshold() int { return HybridThresholdShm }

// TimelyParams implements datapath.TimelyTuner: shared memory is lossless
// and has no network queue, so congestion control stays off
// (Uncongested) and nothing caps the rate.
func (ep *Endpoint) TimelyParams() datapath.TimelyParams {
	p := datapath.BatchedTimely
	p.LinkRate = datapath.UnlimitedLinkRate
	p.Uncongested = true
	return p
}

// Lossless reports true: a packet a send accepted is in the peer's ring
// and is delivered unless the peer's connection ends; a send refused for
// want of room returns ErrBusy and sent nothing.
func (ep *Endpoint) Lossless() bool { return true }

// Pool is the endpoint's pool (RX buffers and segmented heads).
func (ep *Endpoint) Pool() *mem.Pool { return ep.pool }

// Stats implements datapath.Endpoint.
func (ep *Endpoint) Stats() datapath.Stats { return ep.st.Stats }

// ShmStats returns the detailed counters. Call it on the owner goroutine.
func (ep *Endpoint) ShmStats() Stats {
	s := ep.st
	for _, c := range ep.conns {
		if c.state == connUp {
			s.Peers++
			s.TxInFlight += c.inflight
			s.TxZeroCopyHeld += c.zcBytes
			s.RxHeld += len(c.held)
		}
	}
	return s
}

// Wake makes a Wait in progress (or the next one) return. It is safe from
// any goroutine; after Close it returns ErrClosed.
func (ep *Endpoint) Wake() error {
	if ep.guard.Closed() {
		return datapath.ErrClosed
	}
	ep.wokenFlag.Store(true)
	return ep.wake.Wake()
}

// Send implements datapath.Endpoint: p is copied into a TX slot shared
// with the peer.
func (ep *Endpoint) Send(dst netip.AddrPort, p []byte) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	if len(p) > ep.maxPay {
		return fmt.Errorf("%w: %d > %d", datapath.ErrTooLarge, len(p), ep.maxPay)
	}
	c, s, err := ep.slotFor(dst)
	if err != nil {
		return err
	}
	b := c.local.slot(s)
	table, data := b[:ep.geo.maxSegs*descSize], b[ep.geo.maxSegs*descSize:]
	copy(data, p)
	nseg := 0
	if len(p) > 0 {
		putDesc(table, 0, seg{space: 0, n: uint32(len(p))})
		nseg = 1
	}
	ep.st.CopiedEntries++
	ep.st.CopiedBytes += uint64(len(p))
	return ep.post(c, s, nseg, len(p), true)
}

// AppendPacket queues a packet of n bytes to dst and returns its payload,
// in the TX slot itself, to be filled before the next call on the
// endpoint (the in-place send the RPC layer uses for small packets).
func (ep *Endpoint) AppendPacket(dst netip.AddrPort, n int) ([]byte, error) {
	if err := ep.guard.Enter(); err != nil {
		return nil, err
	}
	defer ep.guard.Exit()
	if n < 0 || n > ep.maxPay {
		return nil, fmt.Errorf("%w: %d > %d", datapath.ErrTooLarge, n, ep.maxPay)
	}
	if ep.queued >= ep.batch {
		if err := ep.flush(); err != nil {
			return nil, err
		}
	}
	c, s, err := ep.slotFor(dst)
	if err != nil {
		return nil, err
	}
	b := c.local.slot(s)
	table, data := b[:ep.geo.maxSegs*descSize], b[ep.geo.maxSegs*descSize:]
	nseg := 0
	if n > 0 {
		putDesc(table, 0, seg{space: 0, n: uint32(n)})
		nseg = 1
	}
	ep.st.CopiedEntries++
	ep.st.CopiedBytes += uint64(n)
	if err := ep.post(c, s, nseg, n, false); err != nil {
		return nil, err
	}
	return data[:n:n], nil
}

// txBuilder lays out one packet in a TX slot: copied bytes go to the data
// area in wire order, zero-copy entries become descriptors.
type txBuilder struct {
	ep    *Endpoint
	c     *conn
	slot  *txSlot
	table []byte
	data  []byte
	used  int // bytes of data written
	nseg  int
	last  seg // the open segment (not yet written to the table)
	open  bool
	// zcSize is the bytes of the entries writeSGASelect laid out after
	// the head.
	zcSize int
}

func (b *txBuilder) flushSeg() {
	if b.open {
		if (b.nseg+1)*descSize <= len(b.table) {
			putDesc(b.table, b.nseg, b.last)
		}
		b.nseg++ // post refuses a packet of more than MaxSegments
		b.open = false
	}
}

// copied appends p to the data area, extending the previous data segment.
func (b *txBuilder) copied(p []byte) {
	if len(p) == 0 {
		return
	}
	n := copyHead(b.data[b.used:], p)
	if b.open && b.last.space == 0 && b.last.off+uint64(b.last.n) == uint64(b.used) {
		b.last.n += uint32(n)
	} else {
		b.flushSeg()
		b.last, b.open = seg{space: 0, n: uint32(n), off: uint64(b.used)}, true
	}
	b.used += n
}

// reserve marks data[0:n] (already written) as the head segment.
func (b *txBuilder) reserve(n int) {
	if n > 0 {
		b.last, b.open = seg{space: 0, n: uint32(n)}, true
		b.used = n
	}
}

// entry sends buf zero-copy when it lies in a registered space and the
// peer's budget allows, taking over the reference ref (a clone the caller
// made); otherwise it copies the bytes and releases ref. It reports
// whether the entry went zero-copy.
func (b *txBuilder) entry(ref mem.Buf) (bool, error) {
	if b.zeroCopy(ref.Bytes()) {
		b.slot.zc = append(b.slot.zc, ref)
		return true, nil
	}
	return false, ref.Release()
}

// zeroCopy adds p as a descriptor when it lies in a registered space and
// the peer's budget allows (extending the open descriptor when p starts
// where it ends in the same space), counting it against the budget
// (whoever keeps p alive until the slot is freed: a reference in slot.zc,
// or the slot's Holder); otherwise it copies p. It reports whether p went
// zero-copy.
func (b *txBuilder) zeroCopy(p []byte) bool {
	n := len(p)
	if n == 0 {
		return false
	}
	if b.c.zcBytes+int64(n) <= b.ep.opts.MaxZeroCopyBytes {
		for i, s := range b.ep.spaces {
			if off, ok := s.Offset(p); ok {
				sp := uint32(i + 1)
				if l := &b.last; b.open && l.space == sp && l.off+uint64(l.n) == off && uint64(l.n)+uint64(n) <= uint64(b.ep.maxPay) {
					// p continues the open descriptor in the same
					// space (adjacent values of one buffer, like a
					// decoded request's): one descriptor for both.
					l.n += uint32(n)
				} else {
					b.flushSeg()
					b.last, b.open = seg{space: sp, n: uint32(n), off: off}, true
				}
				b.slot.zcBytes += int64(n)
				b.c.zcBytes += int64(n)
				return true
			}
		}
	} else {
		b.ep.st.ZeroCopyFallbacks++
	}
	b.copied(p)
	return false
}

func (ep *Endpoint) builder(c *conn, s uint32) txBuilder {
	t := &c.tx[s]
	return txBuilder{ep: ep, c: c, slot: t, table: t.table, data: t.data}
}

// SendSegments implements datapath.Endpoint: head is copied into the TX
// slot; each segment in a registered shared space is sent as a descriptor
// (the endpoint holds a reference until the peer releases the packet),
// others are copied.
func (ep *Endpoint) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	size, err := ep.checkSegs(head, segs)
	if err != nil {
		return err
	}
	c, s, err := ep.slotFor(dst)
	if err != nil {
		return err
	}
	b := ep.builder(c, s)
	b.copied(head)
	ep.st.CopiedEntries++
	ep.st.CopiedBytes += uint64(len(head))
	for _, sg := range segs {
		zc, err := b.entry(sg.Clone())
		if err != nil {
			ep.st.Errors++
		}
		ep.count(zc, sg.Len())
	}
	b.flushSeg()
	return ep.post(c, s, b.nseg, size, true)
}

// SendSegmentsHeld implements datapath.HeldSender: SendSegments without a
// reference per segment; the TX slot keeps h until the peer releases the
// packet (or goes away), and h.Release is called when the slot is freed.
func (ep *Endpoint) SendSegmentsHeld(dst netip.AddrPort, head []byte, segs []mem.Buf, h datapath.Holder) error {
	if err := ep.guard.Enter(); err != nil {
		h.Release()
		return err
	}
	defer ep.guard.Exit()
	size, err := ep.checkSegs(head, segs)
	if err != nil {
		h.Release()
		return err
	}
	c, s, err := ep.slotFor(dst)
	if err != nil {
		h.Release()
		return err
	}
	b := ep.builder(c, s)
	c.tx[s].hold = h // from here on freeSlot releases it
	b.copied(head)
	ep.st.CopiedEntries++
	ep.st.CopiedBytes += uint64(len(head))
	for _, sg := range segs {
		ep.count(b.zeroCopy(sg.Bytes()), sg.Len())
	}
	b.flushSeg()
	return ep.post(c, s, b.nseg, size, true)
}

// checkSegs checks a SendSegments packet's segment count, the segments'
// liveness and its size, which it returns.
func (ep *Endpoint) checkSegs(head []byte, segs []mem.Buf) (int, error) {
	if len(segs) > ep.maxSegs-1 {
		return 0, fmt.Errorf("%w: %d segments + head > %d", datapath.ErrTooManySegments, len(segs), ep.maxSegs)
	}
	size := len(head)
	for i, s := range segs {
		if err := s.Check(); err != nil {
			return 0, fmt.Errorf("shm: segment %d: %w", i, err)
		}
		size += s.Len()
	}
	if size > ep.maxPay {
		return 0, fmt.Errorf("%w: %d > %d", datapath.ErrTooLarge, size, ep.maxPay)
	}
	return size, nil
}

func (ep *Endpoint) count(zc bool, n int) {
	if zc {
		ep.st.ZeroCopyEntries++
		ep.st.ZeroCopyBytes += uint64(n)
	} else {
		ep.st.CopiedEntries++
		ep.st.CopiedBytes += uint64(n)
	}
}

// sendObject is SendObject for an object without the generated
// SerializeSGA: driver.CheckSendObject's checked sizes, then the direct
// sink or, with more entries than MaxSegments-1, the collector and the
// Selector. The caller holds the guard.
func (ep *Endpoint) sendObject(dst netip.AddrPort, head []byte, obj wire.Object) error {
	sz, size, err := driver.CheckSendObject(head, obj, ep.maxPay)
	if err != nil {
		return err
	}
	headLen := len(head) + sz.Head()
	c, s, err := ep.slotFor(dst)
	if err != nil {
		return err
	}
	if sz.Entries <= ep.maxSegs-1 {
		return ep.sendDirect(c, s, headLen, size, head, obj, sz.Entries, sz.ZeroCopy)
	}
	b := ep.builder(c, s)
	copy(b.data, head)
	if err := ep.zc.Collect(obj, sz, b.data[len(head):headLen]); err != nil {
		ep.st.Errors++
		c.freeSlot(s)
		return err
	}
	b.reserve(headLen)
	ep.st.CopiedEntries++
	ep.st.CopiedBytes += uint64(headLen)
	var keep []int
	if len(ep.zc.Bufs) > ep.maxSegs-1 {
		keep = ep.sel.Select(ep.zc.Lens)
	}
	var firstErr error
	k := 0
	for i, ref := range ep.zc.Bufs {
		n := ep.zc.Lens[i]
		if keep != nil {
			if k < len(keep) && keep[k] == i {
				k++
			} else {
				b.copied(ref.Bytes())
				if err := ref.Release(); err != nil && firstErr == nil {
					firstErr = err
				}
				ep.count(false, n)
				continue
			}
		}
		zc, err := b.entry(ref)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		ep.count(zc, n)
	}
	ep.zc.Reset()
	b.flushSeg()
	if firstErr != nil {
		ep.st.Errors++
	}
	return ep.post(c, s, b.nseg, size, true)
}

// Flush implements datapath.Endpoint: it publishes queued packets to
// their peers (waking sleeping ones), reaps completions, gives back
// received packets the application released, and checks the sockets.
func (ep *Endpoint) Flush() error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	return ep.flush()
}

func (ep *Endpoint) flush() error {
	ep.queued = 0
	for _, c := range ep.conns {
		c.publish()
	}
	ep.reap()
	ep.maybePoll()
	return nil
}

// reap processes completions and released received packets on every
// connection.
func (ep *Endpoint) reap() {
	for i := 0; i < len(ep.conns); i++ {
		c := ep.conns[i]
		if c.state == connUp {
			c.reapCompletions()
		}
		if len(c.held) > 0 {
			c.scanHeld()
		}
		c.publishCompl()
		if c.state == connDead && len(c.held) == 0 {
			c.finalize()
			ep.conns = append(ep.conns[:i], ep.conns[i+1:]...)
			i--
		} else if c.state == connUp && c.needWake {
			c.wakePeer()
		}
	}
}

// Recv implements datapath.Endpoint: each packet is gathered (copied) into
// an RX buffer of the endpoint's pool and handed back to its sender at
// once. RecvSegments receives without that copy.
func (ep *Endpoint) Recv(pkts []datapath.Packet) (int, error) {
	if err := ep.guard.Enter(); err != nil {
		return 0, err
	}
	defer ep.guard.Exit()
	return ep.recv(pkts, nil)
}

// RecvSegments implements datapath.SegmentReceiver: each packet's head
// (the sender's TX-slot bytes) is copied into a small buffer of the
// endpoint's pool (Hold), and its zero-copy segments alias the sender's
// shared memory, mapped read-only. The sender's slot and references stay
// held until Hold and all its clones are released; the endpoint notices
// that in its next call (Recv, RecvSegments, Flush, Wait) and posts the
// completion.
func (ep *Endpoint) RecvSegments(pkts []datapath.Segmented) (int, error) {
	if err := ep.guard.Enter(); err != nil {
		return 0, err
	}
	defer ep.guard.Exit()
	return ep.recv(nil, pkts)
}

func (ep *Endpoint) recv(pkts []datapath.Packet, segd []datapath.Segmented) (int, error) {
	want := len(pkts) + len(segd)
	if want == 0 {
		return 0, nil
	}
	ep.maybePoll()
	ep.reap()
	got := 0
	var err error
	n := len(ep.conns)
	for i := 0; i < n && got < want && err == nil; i++ {
		c := ep.conns[(ep.rr+i)%n]
		if c.state != connUp {
			continue
		}
		var k int
		if pkts != nil {
			k, err = c.recvCopy(pkts[got:])
		} else {
			k, err = c.recvSegs(segd[got:])
		}
		got += k
	}
	if n > 0 {
		ep.rr = (ep.rr + 1) % n
	}
	for _, c := range ep.conns {
		c.publishCompl()
		if c.needWake && c.state == connUp {
			c.wakePeer()
		}
	}
	return got, err
}

// Close implements datapath.Endpoint: it publishes queued packets, waits
// up to Options.CloseLinger for peers to release what they hold, then
// releases every reference it still holds, hangs up on every peer and
// closes its sockets. Peer memory that segmented packets still held by the
// application alias stays mapped (read-only) until the process exits.
func (ep *Endpoint) Close() error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.ExitClosed()
	_ = ep.flush()
	deadline := time.Now().Add(ep.opts.CloseLinger)
	for time.Now().Before(deadline) {
		busy := false
		for _, c := range ep.conns {
			if c.state == connUp && c.inflight > 0 {
				busy = true
			}
		}
		if !busy {
			break
		}
		ep.sleep(time.Millisecond)
		ep.reap()
		ep.poll(0)
	}
	for _, c := range ep.conns {
		c.kill(nil)
		if len(c.held) == 0 {
			c.finalize()
		} else {
			c.dropHeld()
		}
	}
	ep.conns, ep.last = nil, nil
	clear(ep.byAddr)
	ep.closeFds()
	if ep.opts.Dir != "" {
		_ = os.Remove(ep.name)
	}
	var err error
	if ep.ownPool {
		err = ep.pool.Close()
	}
	return err
}

func (ep *Endpoint) closeFds() {
	if ep.lfd >= 0 {
		_ = unix.Close(ep.lfd)
		ep.lfd = -1
	}
	if ep.efd >= 0 {
		_ = unix.Close(ep.efd)
		ep.efd = -1
	}
	_ = ep.wake.Close()
}

// sleep blocks on the doorbell for at most d.
func (ep *Endpoint) sleep(d time.Duration) {
	p := []unix.PollFd{{Fd: int32(ep.efd), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(d))
	if n, _ := unix.Ppoll(p, &ts, nil); n > 0 {
		var b [8]byte
		_, _ = unix.Read(ep.efd, b[:])
	}
}
