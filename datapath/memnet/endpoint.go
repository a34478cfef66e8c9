package memnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Defaults for memnet endpoints.
const (
	// HybridThresholdMemnet is the hybrid threshold on memnet, whose NIC
	// gathers off the sender's CPU: calibrated at 512 bytes, the paper's
	// value for its Mellanox NICs.
	HybridThresholdMemnet = 512
	// DefaultMaxPayload is a jumbo-frame UDP payload (9000 - 20 - 8).
	DefaultMaxPayload = 8972
	// DefaultMaxSegments matches a Linux skb's fragment limit (16 + head).
	DefaultMaxSegments = 17
	// DefaultRxRing is the number of RX buffers an endpoint keeps posted.
	DefaultRxRing = 128
	// DefaultTxQueue is the number of packets an endpoint may have in
	// flight (flushed, not yet completed) before further ones are dropped.
	DefaultTxQueue = 1024
	// CloseLinger bounds how long Close waits for packets in flight on a
	// real-time network.
	CloseLinger = 100 * time.Millisecond
	// MaxMaxPayload bounds Config.MaxPayload.
	MaxMaxPayload = 1 << 20
	// MaxMaxSegments bounds Config.MaxSegments.
	MaxMaxSegments = 1024
)

// Options are memnet's kind-specific options, passed in
// datapath.Config.Options as Options or *Options.
type Options struct {
	// Network to join; nil means Default().
	Network *Network
	// RxRing is the number of RX buffers kept posted (the receive queue
	// limit); packets arriving when all are full are dropped and counted.
	RxRing int
	// TxQueue is the number of packets that may be in flight; packets
	// flushed beyond it are dropped and counted.
	TxQueue int
}

func init() {
	// datapath.Open turns a failed open's typed nil into nil.
	datapath.Register("memnet", func(cfg datapath.Config) (datapath.Endpoint, error) { return Open(cfg) })
}

// Open creates an endpoint on the network named by cfg.Options (default:
// Default()). An invalid cfg.Local gets an automatic 10.0.0.0/8 address and
// port 0 an ephemeral port.
func Open(cfg datapath.Config) (*Endpoint, error) {
	o, ok := driver.OptionsOf[Options](cfg.Options)
	if !ok {
		return nil, fmt.Errorf("memnet: Config.Options is %T, want memnet.Options", cfg.Options)
	}
	n := o.Network
	if n == nil {
		n = Default()
	}
	return n.Open(cfg, o)
}

// Open creates an endpoint on n (o.Network is ignored).
func (n *Network) Open(cfg datapath.Config, o Options) (*Endpoint, error) {
	ep := &Endpoint{
		net:        n,
		pool:       cfg.Pool,
		maxPayload: orDefault(cfg.MaxPayload, DefaultMaxPayload),
		maxSegs:    orDefault(cfg.MaxSegments, DefaultMaxSegments),
		batch:      orDefault(cfg.Batch, datapath.DefaultBatch),
		rxRing:     orDefault(o.RxRing, DefaultRxRing),
		txQueue:    orDefault(o.TxQueue, DefaultTxQueue),
		busyPoll:   cfg.BusyPoll,
		notify:     make(chan struct{}, 1),
	}
	switch {
	case ep.maxPayload < 1 || ep.maxPayload > MaxMaxPayload:
		return nil, fmt.Errorf("memnet: MaxPayload %d out of range [1, %d]", ep.maxPayload, MaxMaxPayload)
	case ep.maxSegs < 1 || ep.maxSegs > MaxMaxSegments:
		return nil, fmt.Errorf("memnet: MaxSegments %d out of range [1, %d]", ep.maxSegs, MaxMaxSegments)
	case ep.batch < 1 || ep.rxRing < 1 || ep.txQueue < 1:
		return nil, fmt.Errorf("memnet: Batch, RxRing and TxQueue must be positive (got %d, %d, %d)", ep.batch, ep.rxRing, ep.txQueue)
	}
	ep.sel = driver.NewSelector(ep.maxSegs)

	n.mu.Lock()
	addr, err := n.bindLocked(cfg.Local)
	if err == nil {
		ep.addr = addr
		n.eps[addr] = ep // reserve; no packets reach it before rx buffers are posted
	}
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if ep.pool == nil {
		p, err := mem.NewPool(mem.PoolConfig{Name: "memnet " + addr.String()})
		if err != nil {
			ep.unbind()
			return nil, fmt.Errorf("memnet: creating pool: %w", err)
		}
		ep.pool, ep.ownPool = p, true
	}
	ep.rng = rand.New(rand.NewPCG(n.seed, addrHash(addr)))
	ep.timer = time.NewTimer(time.Hour)
	ep.timer.Stop()
	if err := ep.allocStage(); err != nil {
		ep.releaseStage()
		ep.unbind()
		if ep.ownPool {
			ep.pool.Close()
		}
		return nil, fmt.Errorf("memnet: posting RX buffers: %w", err)
	}
	n.mu.Lock()
	ep.postStageLocked()
	n.mu.Unlock()
	return ep, nil
}

// addrHash is FNV-1a over the address, the second word of an endpoint's
// PCG seed, so that each address has its own reproducible stream.
func addrHash(a netip.AddrPort) uint64 {
	b, _ := a.MarshalBinary()
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func (n *Network) bindLocked(want netip.AddrPort) (netip.AddrPort, error) {
	ip := want.Addr().Unmap()
	if !want.IsValid() || !ip.IsValid() {
		n.nextIP++
		ip = netip.AddrFrom4([4]byte{10, byte(n.nextIP >> 16), byte(n.nextIP >> 8), byte(n.nextIP)})
	}
	port := want.Port()
	if port == 0 {
		for range 1 << 16 {
			p := n.ports[ip]
			if p < 49152 {
				p = 49152
			}
			n.ports[ip] = p + 1
			if p == 65535 {
				n.ports[ip] = 49152
			}
			if _, taken := n.eps[netip.AddrPortFrom(ip, p)]; !taken {
				port = p
				break
			}
		}
		if port == 0 {
			return netip.AddrPort{}, fmt.Errorf("%w: no free port on %v", ErrAddrInUse, ip)
		}
	}
	a := netip.AddrPortFrom(ip, port)
	if _, taken := n.eps[a]; taken {
		return netip.AddrPort{}, fmt.Errorf("%w: %v", ErrAddrInUse, a)
	}
	return a, nil
}

// rxBuf is a posted RX buffer: the reference and its bytes, captured by the
// owner when posting (the "DMA address").
type rxBuf struct {
	buf   mem.Buf
	bytes []byte
}

type rxItem struct {
	rb   rxBuf
	n    int
	from netip.AddrPort
}

// packet is one send from post to completion.
type packet struct {
	owner    *Endpoint
	src, dst netip.AddrPort
	size     int
	sg       [][]byte // DMA addresses, gathered at delivery
	tx       mem.Buf  // the TX buffer (head and copied entries), or zero
	zc       driver.EntryCollector
	// Under Network.mu:
	pending   int
	cancelled bool
}

// Endpoint is a memnet endpoint; it implements datapath.Endpoint.
type Endpoint struct {
	guard   driver.Guard
	net     *Network
	addr    netip.AddrPort
	pool    *mem.Pool
	ownPool bool

	maxPayload, maxSegs, batch, rxRing, txQueue int
	busyPoll                                    bool

	sel     *driver.Selector
	rng     *rand.Rand
	timer   *time.Timer
	notify  chan struct{}
	woken   atomic.Bool // Wake was called: the current or next Wait returns
	txq     []*packet   // queued, not yet flushed
	free    []*packet
	all     []*packet
	reaping []*packet
	stage   []rxBuf // allocated RX buffers not yet posted
	ringN   int     // RX buffers in the ring: posted + delivered-unreceived
	stats   datapath.Stats

	earlyRelease bool // test hook: a broken datapath releasing at Send

	// Under net.mu:
	posted   []rxBuf
	rxq      []rxItem
	done     []*packet
	inflight int
	linkFree time.Duration
	rxDrops  uint64
}

var _ datapath.Endpoint = (*Endpoint)(nil)

// LocalAddr implements datapath.Endpoint.
func (ep *Endpoint) LocalAddr() netip.AddrPort { return ep.addr }

// MaxPayload implements datapath.Endpoint.
func (ep *Endpoint) MaxPayload() int { return ep.maxPayload }

// HybridThreshold is the field size from which Cornflakes' hybrid mode sends
// a value as its own scatter-gather entry: HybridThresholdMemnet
// (datapath.HybridThresholder).
func (ep *Endpoint) HybridThreshold() int { return HybridThresholdMemnet }

// TimelyParams returns datapath.BatchedTimely (deliveries run inside the
// endpoints' calls, so a window crosses each side in one batch per loop
// iteration, as with udp) and datapath.UnlimitedLinkRate: an in-process
// network has no line rate (datapath.TimelyTuner).
func (ep *Endpoint) TimelyParams() datapath.TimelyParams {
	p := datapath.BatchedTimely
	p.LinkRate = datapath.UnlimitedLinkRate
	p.Uncongested = true // its simulated links congest only when a test asks (Faults): tests enable CC explicitly
	return p
}

// MaxSegments implements datapath.Endpoint.
func (ep *Endpoint) MaxSegments() int { return ep.maxSegs }

// Network is the network the endpoint belongs to.
func (ep *Endpoint) Network() *Network { return ep.net }

// Wake makes a Wait in progress (or the next one) return. It is safe from
// any goroutine, including while the owner goroutine uses the endpoint (it
// does not take the ownership guard). After Close it returns ErrClosed.
func (ep *Endpoint) Wake() error {
	if ep.guard.Closed() {
		return datapath.ErrClosed
	}
	ep.woken.Store(true)
	ep.wake()
	return nil
}

func (ep *Endpoint) wake() {
	select {
	case ep.notify <- struct{}{}:
	default:
	}
}

func (ep *Endpoint) getPacket(dst netip.AddrPort) *packet {
	var p *packet
	if k := len(ep.free); k > 0 {
		p = ep.free[k-1]
		ep.free = ep.free[:k-1]
	} else {
		p = &packet{owner: ep}
		ep.all = append(ep.all, p)
	}
	p.src, p.dst = ep.addr, dst
	return p
}

// recycle releases p's references and returns it to the free list.
func (ep *Endpoint) recycle(p *packet) error {
	var err error
	if !p.tx.IsZero() {
		err = p.tx.Release()
		p.tx = mem.Buf{}
	}
	if e := p.zc.Release(); e != nil && err == nil {
		err = e
	}
	clear(p.sg)
	p.sg = p.sg[:0]
	p.size = 0
	ep.free = append(ep.free, p)
	return err
}

// Send implements datapath.Endpoint.
func (ep *Endpoint) Send(dst netip.AddrPort, b []byte) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	if len(b) > ep.maxPayload {
		return fmt.Errorf("%w: %d > %d", datapath.ErrTooLarge, len(b), ep.maxPayload)
	}
	p := ep.getPacket(dst)
	if len(b) > 0 {
		tx, err := ep.pool.Alloc(len(b))
		if err != nil {
			ep.free = append(ep.free, p)
			ep.stats.Errors++
			return fmt.Errorf("memnet: TX buffer: %w", err)
		}
		p.tx = tx
		txb := tx.Bytes()
		copy(txb, b)
		p.sg = append(p.sg, txb)
	}
	p.size = len(b)
	ep.stats.CopiedEntries++
	ep.stats.CopiedBytes += uint64(len(b))
	return ep.queue(p)
}

// SendSegments implements datapath.Endpoint.
func (ep *Endpoint) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	if len(segs) > ep.maxSegs-1 {
		return fmt.Errorf("%w: %d segments + head > %d", datapath.ErrTooManySegments, len(segs), ep.maxSegs)
	}
	size := len(head)
	for i, s := range segs {
		if err := s.Check(); err != nil { // a released Buf: an error, not a panic in Clone
			return fmt.Errorf("memnet: segment %d: %w", i, err)
		}
		size += s.Len()
	}
	if size > ep.maxPayload {
		return fmt.Errorf("%w: %d > %d", datapath.ErrTooLarge, size, ep.maxPayload)
	}
	p := ep.getPacket(dst)
	if err := ep.txHead(p, head, len(head)); err != nil {
		return err
	}
	p.sg = append(p.sg, p.tx.Bytes())
	for _, s := range segs {
		p.zc.Bufs = append(p.zc.Bufs, s.Clone())
		p.sg = append(p.sg, s.Bytes())
		ep.stats.ZeroCopyBytes += uint64(s.Len())
	}
	p.size = size
	ep.stats.ZeroCopyEntries += uint64(len(segs))
	ep.stats.CopiedEntries++
	ep.stats.CopiedBytes += uint64(len(head))
	ep.maybeBreak(p)
	return ep.queue(p)
}

// txHead allocates p's TX buffer of n bytes (at least 1, windowed to n)
// and copies head into it.
func (ep *Endpoint) txHead(p *packet, head []byte, n int) error {
	tx, err := ep.pool.Alloc(max(n, 1))
	if err != nil {
		ep.free = append(ep.free, p)
		ep.stats.Errors++
		return fmt.Errorf("memnet: TX buffer: %w", err)
	}
	p.tx = tx.Slice(0, n)
	copy(p.tx.Bytes(), head)
	return nil
}

// SendObject implements datapath.Endpoint: the head, the object's header
// and copied fields go into one TX buffer; each zero-copy entry is one more
// segment, gathered at delivery. With more entries than MaxSegments-1 the
// smallest are copied (driver.Selector).
func (ep *Endpoint) SendObject(dst netip.AddrPort, head []byte, obj wire.Object) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	sz, size, err := driver.CheckSendObject(head, obj, ep.maxPayload)
	if err != nil {
		return err
	}
	headLen := len(head) + sz.Head()
	txLen := headLen
	if sz.Entries > ep.maxSegs-1 {
		txLen += sz.ZeroCopy // room to copy entries that do not fit
	}
	p := ep.getPacket(dst)
	if err := ep.txHead(p, head, txLen); err != nil {
		return err
	}
	txb := p.tx.Bytes()
	if err := p.zc.Collect(obj, sz, txb[len(head):headLen]); err != nil {
		ep.stats.Errors++
		if rerr := ep.recycle(p); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	sg, _, ce, cb, err := p.zc.Gather(ep.sel, txb, headLen, p.sg[:0])
	p.sg = sg
	if err != nil {
		ep.stats.Errors++
		if rerr := ep.recycle(p); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	p.size = size
	ep.stats.CopiedEntries += 1 + uint64(ce)
	ep.stats.CopiedBytes += uint64(headLen + cb)
	ep.stats.ZeroCopyEntries += uint64(p.zc.Len())
	ep.stats.ZeroCopyBytes += uint64(p.zc.Bytes)
	ep.maybeBreak(p)
	return ep.queue(p)
}

// maybeBreak implements the test hook that turns the endpoint into a broken
// datapath releasing zero-copy references before the send completes.
func (ep *Endpoint) maybeBreak(p *packet) {
	if ep.earlyRelease {
		_ = p.zc.Release()
	}
}

func (ep *Endpoint) queue(p *packet) error {
	ep.txq = append(ep.txq, p)
	if len(ep.txq) >= ep.batch {
		return ep.flush()
	}
	return nil
}

// Flush implements datapath.Endpoint: it reaps completed sends, performs
// deliveries that are due, and hands queued packets to the network, where
// they are gathered later.
func (ep *Endpoint) Flush() error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	return ep.flush()
}

func (ep *Endpoint) flush() error {
	n := ep.net
	n.mu.Lock()
	n.pumpLocked()
	ep.reaping, ep.done = ep.done, ep.reaping[:0]
	if len(ep.txq) > 0 {
		now := n.nowLocked()
		for _, p := range ep.txq {
			ep.transmitLocked(p, now)
		}
	}
	n.mu.Unlock()
	clear(ep.txq)
	ep.txq = ep.txq[:0]
	return ep.reap()
}

// transmitLocked decides p's fate and schedules its deliveries.
func (ep *Endpoint) transmitLocked(p *packet, now time.Duration) {
	n := ep.net
	ep.stats.TxPackets++
	ep.stats.TxBytes += uint64(p.size)
	n.stats.Sent++
	from, to := p.src.Addr(), p.dst.Addr()
	f := n.faultsLocked(from, to)
	// Every packet draws the same number of random values, so one fault's
	// probability does not shift the decisions of the others.
	rLoss, rDup, rReorder := ep.rng.Float64(), ep.rng.Float64(), ep.rng.Float64()
	j1, j2 := ep.rng.Int64(), ep.rng.Int64()
	p.pending, p.cancelled = 1, false
	drop := func(counter *uint64) {
		*counter++
		p.pending = 0
		ep.done = append(ep.done, p)
	}
	switch {
	case ep.inflight >= ep.txQueue:
		ep.stats.Drops++
		drop(&n.stats.QueueDrops)
		return
	case len(n.parts) > 0 && n.partitionedLocked(from, to):
		drop(&n.stats.PartitionDrops)
		return
	case rLoss < f.Loss:
		drop(&n.stats.Lost)
		return
	}
	depart := now
	if f.BitsPerSecond > 0 {
		depart = max(now, ep.linkFree) + time.Duration(int64(p.size)*8*int64(time.Second)/f.BitsPerSecond)
		ep.linkFree = depart
	}
	arrive := depart + f.Delay
	if rReorder < f.Reorder {
		n.stats.Reordered++
		if f.ReorderDelay > 0 {
			arrive += f.ReorderDelay
		} else {
			arrive += DefaultReorderDelay
		}
	}
	ep.inflight++
	n.seq++
	n.events.push(event{at: arrive + jitter(f.Jitter, j1), seq: n.seq, pkt: p})
	if rDup < f.Duplicate {
		n.stats.Duplicated++
		p.pending++
		n.seq++
		n.events.push(event{at: arrive + jitter(f.Jitter, j2), seq: n.seq, pkt: p})
	}
	if dst := n.eps[p.dst]; dst != nil {
		dst.wake()
	}
}

func jitter(j time.Duration, r int64) time.Duration {
	if j <= 0 {
		return 0
	}
	return time.Duration(uint64(r) % uint64(j))
}

// reap releases the references of completed sends in ep.reaping.
func (ep *Endpoint) reap() error {
	var err error
	for i, p := range ep.reaping {
		if e := ep.recycle(p); e != nil && err == nil {
			err = e
		}
		ep.reaping[i] = nil
	}
	ep.reaping = ep.reaping[:0]
	if err != nil {
		ep.stats.Errors++
		return fmt.Errorf("memnet: releasing completed send: %w", err)
	}
	return nil
}

// allocStage allocates RX buffers to bring the ring back to rxRing.
func (ep *Endpoint) allocStage() error {
	for ep.ringN+len(ep.stage) < ep.rxRing {
		b, err := ep.pool.Alloc(ep.maxPayload)
		if err != nil {
			return err
		}
		ep.stage = append(ep.stage, rxBuf{buf: b, bytes: b.Bytes()})
	}
	return nil
}

func (ep *Endpoint) postStageLocked() {
	ep.posted = append(ep.posted, ep.stage...)
	ep.ringN += len(ep.stage)
	clear(ep.stage)
	ep.stage = ep.stage[:0]
}

func (ep *Endpoint) releaseStage() {
	for _, rb := range ep.stage {
		_ = rb.buf.Release()
	}
	clear(ep.stage)
	ep.stage = ep.stage[:0]
}

// Recv implements datapath.Endpoint. Each packet's Buf is a window on an RX
// buffer from the endpoint's pool; the caller owns it and must Release it.
func (ep *Endpoint) Recv(pkts []Packet) (int, error) {
	if err := ep.guard.Enter(); err != nil {
		return 0, err
	}
	defer ep.guard.Exit()
	return ep.recv(pkts)
}

// Packet is datapath.Packet.
type Packet = datapath.Packet

func (ep *Endpoint) recv(pkts []Packet) (int, error) {
	// Replenish the ring outside the lock; exhaustion only means fewer
	// posted buffers (and drops) until the application releases some.
	allocErr := ep.allocStage()
	n := ep.net
	n.mu.Lock()
	ep.postStageLocked()
	n.pumpLocked()
	ep.reaping, ep.done = ep.done, ep.reaping[:0]
	k := min(len(pkts), len(ep.rxq))
	for i := range k {
		it := ep.rxq[i]
		p := &pkts[i] // field by field, not a composite literal (see udp's emit)
		p.Buf, p.From = it.rb.buf.Slice(0, it.n), it.from
		ep.stats.RxPackets++
		ep.stats.RxBytes += uint64(it.n)
	}
	m := copy(ep.rxq, ep.rxq[k:])
	clear(ep.rxq[m:])
	ep.rxq = ep.rxq[:m]
	n.mu.Unlock()
	ep.ringN -= k
	err := ep.reap()
	if allocErr != nil && k == 0 && ep.ringN == 0 {
		ep.stats.Errors++
		err = errors.Join(err, fmt.Errorf("memnet: no RX buffers: %w", allocErr))
	}
	return k, err
}

// Wait implements datapath.Endpoint: it returns when a packet is ready, when
// timeout has elapsed, when Wake is called (nil error in each case), or at
// once if a packet is ready or a Wake came since the last Wait.
// While waiting it performs deliveries that fall due. The timeout is real
// time even on a virtual network, where only Advance (from another
// goroutine) or a zero-delay send makes packets due.
func (ep *Endpoint) Wait(timeout time.Duration) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	deadline := time.Now().Add(timeout)
	n := ep.net
	for {
		_ = ep.allocStage()
		n.mu.Lock()
		ep.postStageLocked()
		n.pumpLocked()
		ep.reaping, ep.done = ep.done, ep.reaping[:0]
		ready := len(ep.rxq) > 0
		next := time.Duration(-1)
		if !n.virtual {
			if due := n.nextDueLocked(); due >= 0 {
				next = due - n.nowLocked()
			}
		}
		n.mu.Unlock()
		if err := ep.reap(); err != nil {
			return err
		}
		left := time.Until(deadline)
		if woken := ep.woken.Swap(false); ready || woken || left <= 0 {
			return nil
		}
		if ep.busyPoll {
			runtime.Gosched()
			continue
		}
		d := left
		if next >= 0 && next < d {
			d = max(next, time.Microsecond)
		}
		ep.timer.Reset(d)
		select {
		case <-ep.notify:
			ep.timer.Stop()
		case <-ep.timer.C:
		}
	}
}

// Stats implements datapath.Endpoint. It is for the owner goroutine; an
// overlapping call from another goroutine gets the zero Stats.
func (ep *Endpoint) Stats() datapath.Stats {
	if ep.guard.Enter() != nil {
		return datapath.Stats{}
	}
	defer ep.guard.Exit()
	s := ep.stats
	ep.net.mu.Lock()
	s.Drops += ep.rxDrops
	ep.net.mu.Unlock()
	return s
}

// Close implements datapath.Endpoint: queued packets are flushed and those
// due are delivered; on a real-time network Close waits up to CloseLinger
// for the rest to arrive. Packets still in flight then (on a virtual
// network: all that are not due yet) are cancelled, like a NIC reset, and
// every reference the endpoint holds is released. If
// the endpoint created its pool (Config.Pool nil), the pool is closed, so
// the application must release every received packet first; otherwise
// Close reports an error wrapping mem.ErrInUse and leaves the pool open.
func (ep *Endpoint) Close() error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.ExitClosed()
	errs := []error{ep.flush()}
	n := ep.net
	if !n.virtual {
		ep.linger()
	}
	n.mu.Lock()
	n.pumpLocked()
	delete(n.eps, ep.addr)
	for _, ev := range n.events {
		if p := ev.pkt; p.owner == ep && !p.cancelled {
			p.cancelled = true
			n.stats.Cancelled++
		}
	}
	ep.reaping, ep.done = ep.done, nil
	rxq, posted := ep.rxq, ep.posted
	ep.rxq, ep.posted = nil, nil
	n.mu.Unlock()
	errs = append(errs, ep.reap())
	for _, p := range ep.all {
		if p.pending > 0 || p.cancelled {
			errs = append(errs, ep.recycle(p))
		}
	}
	ep.all, ep.free = nil, nil
	for _, it := range rxq {
		errs = append(errs, it.rb.buf.Release())
	}
	for _, rb := range posted {
		errs = append(errs, rb.buf.Release())
	}
	ep.releaseStage()
	ep.ringN = 0
	if ep.ownPool {
		if err := ep.pool.Close(); err != nil {
			errs = append(errs, fmt.Errorf("memnet: closing the endpoint's pool (received packets not released?): %w", err))
		}
	}
	return errors.Join(errs...)
}

// linger waits, on a real-time network, up to CloseLinger for the
// endpoint's packets in flight to be delivered.
func (ep *Endpoint) linger() {
	n := ep.net
	deadline := time.Now().Add(CloseLinger)
	for {
		n.mu.Lock()
		n.pumpLocked()
		inflight := ep.inflight
		next := n.nextDueLocked() - n.nowLocked()
		n.mu.Unlock()
		left := time.Until(deadline)
		if inflight == 0 || left <= 0 {
			return
		}
		time.Sleep(min(max(next, time.Microsecond), left))
	}
}

func (ep *Endpoint) unbind() {
	ep.net.mu.Lock()
	delete(ep.net.eps, ep.addr)
	ep.net.mu.Unlock()
}
