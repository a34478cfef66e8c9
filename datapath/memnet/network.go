// Package memnet is an in-process network of datapath endpoints that
// behaves like a NIC, for protocol tests and for runs without sockets.
//
// Sends only record the scatter-gather list (addresses plus references);
// the bytes are gathered at "DMA" time, after Send and Flush have returned,
// straight into a receive buffer the receiver posted from its own pool. Only
// then is the send complete and are its references released (by the
// sender's goroutine, on its next Flush, Recv, Wait or Close). A datapath or
// application that lets zero-copy memory be reused before completion
// therefore delivers corrupted bytes, which tests detect.
//
// Faults are deterministic and seeded: loss, duplication, reordering, delay
// and jitter, a bandwidth limit, healable partitions between address sets,
// per-endpoint TX queue limits and RX rings, all with drop counting. Each
// endpoint draws from its own random stream (seed, local address), so the
// fate of its n-th packet does not depend on other goroutines. Time is real
// (NetworkConfig.Virtual false) or virtual, driven by Network.Advance, which
// makes protocol tests reproducible.
//
// Every endpoint is used by one goroutine; endpoints of one Network may run
// on different goroutines. The network's shared state is behind one mutex;
// each endpoint's pool is used only by its owner goroutine.
//
// The kind "memnet" is registered with datapath.Register; datapath.Open
// uses the process-wide Default network unless Options.Network is set.
package memnet

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Faults configures what the network does to packets. The zero value is a
// perfect, infinitely fast network.
type Faults struct {
	// Loss is the probability that a packet is dropped.
	Loss float64
	// Duplicate is the probability that a packet is delivered twice.
	Duplicate float64
	// Reorder is the probability that a packet is held back by ReorderDelay
	// (DefaultReorderDelay when zero), so later packets overtake it.
	Reorder      float64
	ReorderDelay time.Duration
	// Delay is the one-way latency; Jitter adds a uniform [0, Jitter) on top.
	Delay, Jitter time.Duration
	// BitsPerSecond limits each sender's link (0: unlimited). Packets queue
	// behind each other on the link.
	BitsPerSecond int64
}

// DefaultReorderDelay is how long a reordered packet is held back when
// Faults.ReorderDelay is zero.
const DefaultReorderDelay = 100 * time.Microsecond

// NetworkConfig configures a Network.
type NetworkConfig struct {
	// Seed makes every fault decision reproducible.
	Seed uint64
	// Virtual selects virtual time: the clock only moves in Advance, and a
	// packet is delivered once the clock has reached its arrival time (a
	// packet with no delay is delivered by the next call of any endpoint,
	// or by Advance(0)). With real time, arrival times follow the wall clock.
	Virtual bool
	// Faults apply to every link without its own (SetLinkFaults).
	Faults Faults
}

// NetworkStats counts what happened to packets in the network.
type NetworkStats struct {
	Sent       uint64 // packets handed to the network by Flush
	Delivered  uint64 // packets written into a receiver's RX buffer
	Lost       uint64 // dropped by Faults.Loss
	Duplicated uint64 // extra copies made by Faults.Duplicate
	Reordered  uint64 // packets held back by Faults.Reorder
	// PartitionDrops counts packets dropped between partitioned sets.
	PartitionDrops uint64
	// QueueDrops counts packets dropped because the sender's TX queue
	// (Options.TxQueue packets in flight) was full.
	QueueDrops uint64
	// RxDrops counts packets dropped because the receiver had no posted
	// RX buffer (its ring was full of unreceived packets) or the packet
	// exceeded its MaxPayload.
	RxDrops uint64
	// NoRoute counts packets to an address with no endpoint.
	NoRoute uint64
	// Cancelled counts packets still in flight when their sender closed.
	Cancelled uint64
	// Filtered counts packets dropped by the Filter.
	Filtered uint64
}

// Filter inspects a packet at delivery time, like a switch before the
// receiver's NIC, and returns false to drop it. It runs on whichever
// goroutine performs the delivery, with the network locked: it must not
// call the Network or its endpoints, and must not keep payload.
type Filter func(from, to netip.AddrPort, payload []byte) bool

// ErrNotVirtual is returned by Advance on a real-time network.
var ErrNotVirtual = errors.New("memnet: Advance on a real-time network")

// ErrAddrInUse is returned when opening an endpoint on a taken address.
var ErrAddrInUse = errors.New("memnet: address already in use")

type linkKey struct{ from, to netip.Addr }

type partition struct {
	id   int
	a, b []netip.Prefix
}

// Network connects endpoints. Create it with NewNetwork; it is safe for use
// by many goroutines.
type Network struct {
	mu      sync.Mutex
	seed    uint64
	virtual bool
	start   time.Time
	vnow    time.Duration
	faults  Faults
	links   map[linkKey]Faults
	parts   []partition
	partID  int
	eps     map[netip.AddrPort]*Endpoint
	events  eventHeap
	seq     uint64
	stats   NetworkStats
	filter  Filter
	scratch []byte
	nextIP  uint32 // for automatic addresses 10.0.x.y
	ports   map[netip.Addr]uint16
}

// NewNetwork returns an empty network.
func NewNetwork(cfg NetworkConfig) *Network {
	return &Network{
		seed:    cfg.Seed,
		virtual: cfg.Virtual,
		start:   time.Now(),
		faults:  cfg.Faults,
		eps:     make(map[netip.AddrPort]*Endpoint),
		ports:   make(map[netip.Addr]uint16),
	}
}

var defaultNetwork = sync.OnceValue(func() *Network { return NewNetwork(NetworkConfig{}) })

// Default is the process-wide real-time network without faults that
// datapath.Open("memnet", cfg) uses when cfg.Options names no network.
func Default() *Network { return defaultNetwork() }

// SetFaults replaces the faults of every link without its own.
func (n *Network) SetFaults(f Faults) {
	n.mu.Lock()
	n.faults = f
	n.mu.Unlock()
}

// SetLinkFaults sets the faults of packets sent from IP address from to IP
// address to (one direction), overriding the network's faults.
func (n *Network) SetLinkFaults(from, to netip.Addr, f Faults) {
	n.mu.Lock()
	if n.links == nil {
		n.links = make(map[linkKey]Faults)
	}
	n.links[linkKey{from.Unmap(), to.Unmap()}] = f
	n.mu.Unlock()
}

// ClearLinkFaults removes every per-link override.
func (n *Network) ClearLinkFaults() {
	n.mu.Lock()
	n.links = nil
	n.mu.Unlock()
}

// Partition cuts the network between the addresses in a and those in b (in
// both directions) until Heal(id) or HealAll. Packets sent across the cut,
// or arriving while it exists, are dropped.
func (n *Network) Partition(a, b []netip.Prefix) (id int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.partID++
	n.parts = append(n.parts, partition{id: n.partID, a: append([]netip.Prefix(nil), a...), b: append([]netip.Prefix(nil), b...)})
	return n.partID
}

// SetFilter installs f (nil removes it), for tests that drop chosen
// packets, e.g. "the first response packet" or "every credit return".
func (n *Network) SetFilter(f Filter) {
	n.mu.Lock()
	n.filter = f
	n.mu.Unlock()
}

// Heal removes the partition with the given id (no-op if unknown).
func (n *Network) Heal(id int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, p := range n.parts {
		if p.id == id {
			n.parts = append(n.parts[:i], n.parts[i+1:]...)
			return
		}
	}
}

// HealAll removes every partition.
func (n *Network) HealAll() {
	n.mu.Lock()
	n.parts = nil
	n.mu.Unlock()
}

// Advance moves virtual time forward by d and delivers every packet due by
// then, in arrival order, on the calling goroutine. It wakes receivers that
// got packets. It returns ErrNotVirtual on a real-time network.
func (n *Network) Advance(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("memnet: Advance(%v): negative duration", d)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.virtual {
		return ErrNotVirtual
	}
	n.vnow += d
	n.pumpLocked()
	return nil
}

// Now is the network's current time (virtual, or real time since creation).
func (n *Network) Now() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nowLocked()
}

// Stats returns the network's counters.
func (n *Network) Stats() NetworkStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Pending is the number of packet deliveries still in flight.
func (n *Network) Pending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, ev := range n.events {
		if !ev.pkt.cancelled {
			c++
		}
	}
	return c
}

func (n *Network) nowLocked() time.Duration {
	if n.virtual {
		return n.vnow
	}
	return time.Since(n.start)
}

func (n *Network) faultsLocked(from, to netip.Addr) *Faults {
	if n.links != nil {
		if f, ok := n.links[linkKey{from, to}]; ok {
			return &f
		}
	}
	return &n.faults
}

func (n *Network) partitionedLocked(x, y netip.Addr) bool {
	for _, p := range n.parts {
		if (inAny(p.a, x) && inAny(p.b, y)) || (inAny(p.b, x) && inAny(p.a, y)) {
			return true
		}
	}
	return false
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// pumpLocked delivers every event due at the current time.
func (n *Network) pumpLocked() {
	if len(n.events) == 0 {
		return
	}
	now := n.nowLocked()
	for len(n.events) > 0 && n.events[0].at <= now {
		ev := n.events.pop()
		n.deliverLocked(ev.pkt)
	}
}

// nextDueLocked is the arrival time of the earliest live event, or -1.
func (n *Network) nextDueLocked() time.Duration {
	for len(n.events) > 0 {
		if n.events[0].pkt.cancelled {
			n.events.pop()
			continue
		}
		return n.events[0].at
	}
	return -1
}

// deliverLocked performs the receive-side DMA of one copy of p: it gathers
// p's segments into a posted RX buffer of the destination.
func (n *Network) deliverLocked(p *packet) {
	if p.cancelled {
		return
	}
	defer n.completeLocked(p)
	dst := n.eps[p.dst]
	switch {
	case dst == nil:
		n.stats.NoRoute++
		return
	case len(n.parts) > 0 && n.partitionedLocked(p.src.Addr(), p.dst.Addr()):
		n.stats.PartitionDrops++
		return
	case n.filter != nil && !n.filterLocked(p):
		n.stats.Filtered++
		return
	case len(dst.posted) == 0 || p.size > dst.maxPayload:
		dst.rxDrops++
		n.stats.RxDrops++
		return
	}
	rb := dst.posted[len(dst.posted)-1]
	dst.posted = dst.posted[:len(dst.posted)-1]
	off := 0
	for _, s := range p.sg {
		off += copy(rb.bytes[off:], s)
	}
	dst.rxq = append(dst.rxq, rxItem{rb: rb, n: off, from: p.src})
	n.stats.Delivered++
	dst.wake()
}

// filterLocked gathers p into a scratch buffer (the filter acts like a
// switch, before the receiver's NIC) and asks the filter.
func (n *Network) filterLocked(p *packet) bool {
	n.scratch = n.scratch[:0]
	for _, s := range p.sg {
		n.scratch = append(n.scratch, s...)
	}
	return n.filter(p.src, p.dst, n.scratch)
}

// completeLocked accounts for one finished delivery (or drop) of p; when
// none is left the packet goes on its sender's completion list.
func (n *Network) completeLocked(p *packet) {
	p.pending--
	if p.pending == 0 {
		p.owner.inflight--
		p.owner.done = append(p.owner.done, p)
	}
}

type event struct {
	at  time.Duration
	seq uint64
	pkt *packet
}

// eventHeap is a binary min-heap on (at, seq).
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	for j := len(s) - 1; j > 0; {
		p := (j - 1) / 2
		if !s.less(j, p) {
			break
		}
		s[j], s[p] = s[p], s[j]
		j = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = event{}
	s = s[:last]
	for j := 0; ; {
		l := 2*j + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s.less(r, l) {
			m = r
		}
		if !s.less(m, j) {
			break
		}
		s[j], s[m] = s[m], s[j]
		j = m
	}
	*h = s
	return top
}
