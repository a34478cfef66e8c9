package rpc

import (
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// Session limits (EndpointConfig.MaxSessions, MaxSessionsPerPeer, IdleEvict).
const (
	// DefaultMaxSessions is the default bound on an endpoint's server
	// sessions: nearly every session number.
	DefaultMaxSessions = proto.InvalidSession - 1024
	// DefaultMaxSessionsPerPeer is the default bound on the server
	// sessions of one peer address (see EndpointConfig.MaxSessionsPerPeer).
	DefaultMaxSessionsPerPeer = 32768
	// DefaultIdleEvict is how long a session must have been silent before
	// it may be evicted for a new one.
	DefaultIdleEvict = 10 * time.Second
	// evictScan bounds the sessions one admission examines for eviction.
	evictScan = 64
)

// peerKey is the source a per-peer limit counts against: the peer's IP
// address for IPv4 (a /32) and its /64 prefix for IPv6 (what one host or
// subscriber is usually given), never the port, so that a peer cannot
// multiply its share by sending from many ports.
type peerKey = netip.Prefix

// ipv6PeerBits is the prefix length of an IPv6 peer.
const ipv6PeerBits = 64

// peerKeyOf returns the peer key of the address a packet came from.
func peerKeyOf(a netip.AddrPort) peerKey {
	ip := a.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = ipv6PeerBits
	}
	p, err := ip.Prefix(bits)
	if err != nil { // an invalid address: one key for all of them
		return netip.Prefix{}
	}
	return p
}

// sessRef names a server session in an eviction queue; token tells a
// reused session number from the one queued.
type sessRef struct {
	num   uint16
	token uint64
}

// peerSessions is the server sessions of one peer address, oldest first
// (entries whose session is gone are skipped lazily).
type peerSessions struct {
	n    int
	fifo []sessRef
}

// admit makes room for one more server session from the peer at from: it
// reports true when the limits allow it, evicting the peer's (at its own
// limit) or anyone's (at the endpoint's) oldest session that never carried
// a request, or else one idle for IdleEvict, when that is needed.
func (c *smCore) admit(now int64, from netip.AddrPort) bool {
	ps := c.peers[peerKeyOf(from)]
	if ps != nil && ps.n >= c.maxPerPeer && !c.evictFrom(now, &ps.fifo) {
		return false
	}
	if c.srvSessions >= c.maxSessions && !c.evictFrom(now, &c.srvFIFO) {
		return false
	}
	return true
}

// evictFrom evicts the first unproven, or else idle, session among the
// first evictScan live entries of q (rotating the live ones it passes to
// the back, like a clock hand) and reports whether it evicted one.
func (c *smCore) evictFrom(now int64, q *[]sessRef) bool {
	var victim *sessInfo
	for seen := 0; seen < evictScan && len(*q) > 0; {
		r := (*q)[0]
		*q = (*q)[1:]
		si := c.session(r.num)
		if si == nil || si.client || si.token != r.token || !si.counted {
			continue // gone: drop the entry
		}
		seen++
		last := c.host.smLastRx(si.num)
		if last == 0 || now-last >= c.idleEvict {
			victim = si
			break
		}
		*q = append(*q, r)
	}
	if victim == nil {
		return false
	}
	c.evict(victim)
	return true
}

// evict drops server session si and tells its client.
func (c *smCore) evict(si *sessInfo) {
	c.stats.SessionsEvicted++
	c.host.smSend(si.remoteNexus, &smPkt{typ: smEvicted, token: si.token, clientEp: si.remoteEp, serverEp: c.id,
		clientSess: si.remoteSess, serverSess: si.num})
	num := si.num
	c.freeSession(si, ErrEvicted)
	c.host.smEvent(num, Failed, ErrEvicted)
}

// addServerSession records a new server session in the limits' books.
func (c *smCore) addServerSession(si *sessInfo) {
	k := peerKeyOf(si.remoteNexus)
	ps := c.peers[k]
	if ps == nil {
		ps = &peerSessions{}
		c.peers[k] = ps
	}
	ps.n++
	r := sessRef{si.num, si.token}
	ps.fifo = c.compact(append(ps.fifo, r), ps.n)
	c.srvSessions++
	c.srvFIFO = c.compact(append(c.srvFIFO, r), c.srvSessions)
	si.counted = true
}

// compact drops the entries of gone sessions from q once they outnumber
// the live ones (live of them), so that queues stay proportional to the
// sessions however many come and go.
func (c *smCore) compact(q []sessRef, live int) []sessRef {
	if len(q) <= 2*live+64 {
		return q
	}
	out := q[:0]
	for _, r := range q {
		if si := c.session(r.num); si != nil && !si.client && si.token == r.token && si.counted {
			out = append(out, r)
		}
	}
	clear(q[len(out):])
	return out
}

// dropServerSession removes si from the books (its queue entries go
// lazily).
func (c *smCore) dropServerSession(si *sessInfo) {
	si.counted = false
	c.srvSessions--
	k := peerKeyOf(si.remoteNexus)
	if ps := c.peers[k]; ps != nil {
		if ps.n--; ps.n <= 0 {
			delete(c.peers, k)
		}
	}
}
