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
	// sessions of one peer Nexus.
	DefaultMaxSessionsPerPeer = 32768
	// DefaultIdleEvict is how long a session must have been silent before
	// it may be evicted for a new one.
	DefaultIdleEvict = 10 * time.Second
	// evictScan bounds the sessions one admission examines for eviction.
	evictScan = 64
)

// sessRef names a server session in an eviction queue; token tells a
// reused session number from the one queued.
type sessRef struct {
	num   uint16
	token uint64
}

// peerSessions is the server sessions of one peer Nexus, oldest first
// (entries whose session is gone are skipped lazily).
type peerSessions struct {
	n    int
	fifo []sessRef
}

// admit makes room for one more server session from the peer Nexus at
// from: it reports true when the limits allow it, evicting the peer's (at
// its own limit) or anyone's (at the endpoint's) oldest session that never
// carried a request, or else one idle for IdleEvict, when that is needed.
func (ep *Endpoint) admit(from netip.AddrPort) bool {
	ps := ep.peers[from]
	if ps != nil && ps.n >= ep.maxPerPeer && !ep.evictFrom(&ps.fifo) {
		return false
	}
	if ep.srvSessions >= ep.maxSessions && !ep.evictFrom(&ep.srvFIFO) {
		return false
	}
	return true
}

// evictFrom evicts the first unproven, or else idle, session among the
// first evictScan live entries of q (rotating the live ones it passes to
// the back, like a clock hand) and reports whether it evicted one.
func (ep *Endpoint) evictFrom(q *[]sessRef) bool {
	now := ep.now()
	idle := int64(ep.idleEvict)
	var victim *sessInfo
	for seen := 0; seen < evictScan && len(*q) > 0; {
		r := (*q)[0]
		*q = (*q)[1:]
		si := ep.session(r.num)
		if si == nil || si.client || si.token != r.token || !si.counted {
			continue // gone: drop the entry
		}
		seen++
		last := ep.core.LastRx(si.num)
		if last == 0 || now-last >= idle {
			victim = si
			break
		}
		*q = append(*q, r)
	}
	if victim == nil {
		return false
	}
	ep.evict(victim)
	return true
}

// evict drops server session si and tells its client.
func (ep *Endpoint) evict(si *sessInfo) {
	ep.stats.SessionsEvicted++
	ep.nx.sendSM(si.remoteNexus, &smPkt{typ: smEvicted, token: si.token, clientEp: si.remoteEp, serverEp: ep.id,
		clientSess: si.remoteSess, serverSess: si.num})
	num := si.num
	ep.freeSession(si, ErrEvicted)
	ep.sessionEvent(num, Failed, ErrEvicted)
}

// addServerSession records a new server session in the limits' books.
func (ep *Endpoint) addServerSession(si *sessInfo) {
	ps := ep.peers[si.remoteNexus]
	if ps == nil {
		ps = &peerSessions{}
		ep.peers[si.remoteNexus] = ps
	}
	ps.n++
	r := sessRef{si.num, si.token}
	ps.fifo = ep.compact(append(ps.fifo, r), ps.n)
	ep.srvSessions++
	ep.srvFIFO = ep.compact(append(ep.srvFIFO, r), ep.srvSessions)
	si.counted = true
}

// compact drops the entries of gone sessions from q once they outnumber
// the live ones (live of them), so that queues stay proportional to the
// sessions however many come and go.
func (ep *Endpoint) compact(q []sessRef, live int) []sessRef {
	if len(q) <= 2*live+64 {
		return q
	}
	out := q[:0]
	for _, r := range q {
		if si := ep.session(r.num); si != nil && !si.client && si.token == r.token && si.counted {
			out = append(out, r)
		}
	}
	clear(q[len(out):])
	return out
}

// dropServerSession removes si from the books (its queue entries go
// lazily).
func (ep *Endpoint) dropServerSession(si *sessInfo) {
	si.counted = false
	ep.srvSessions--
	if ps := ep.peers[si.remoteNexus]; ps != nil {
		if ps.n--; ps.n <= 0 {
			delete(ep.peers, si.remoteNexus)
		}
	}
}
