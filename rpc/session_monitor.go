package rpc

import "net/netip"

// peerMonitor is the pure failure detector of a Nexus: which peer Nexuses
// its endpoints' sessions depend on, when each was last heard from, and
// with which incarnation. It does no I/O and reads no clock (times are ns
// of the caller's monotonic clock; nonces come from its nonce function);
// the Nexus (nexus.go) guards it with its mutex, feeds it every control
// packet's source and incarnation, and ticks it every HeartbeatInterval to
// learn whom to ping and who failed.
//
// Heartbeats are not signed (docs/SECURITY.md), so the monitor believes
// only what an off-path attacker cannot forge: a packet keeps a peer alive
// only when it carries the peer's current incarnation (64 random bits the
// attacker never sees), and a different incarnation (a restart) is
// believed only from a pong that echoes the nonce of this Nexus's ping or
// from a connect request that passed the cookie check. Any other packet
// with another incarnation is answered, at most once per probe interval,
// by a ping to the peer's address, whose pong then settles it (as TCP
// answers a doubtful reset with a challenge ACK, RFC 5961).
type peerMonitor struct {
	failureTimeout int64 // ns of silence after which a peer has failed
	probeEvery     int64 // ns between probes of one peer
	nonce          func() uint64
	remotes        map[netip.AddrPort]*remote
}

type remote struct {
	refs        int
	lastHeard   int64
	incarnation uint64
	failed      bool
	nonce       uint64 // carried by this Nexus's pings to the peer, echoed by its pongs
	nextProbe   int64
}

// pingTo is a heartbeat to send: to addr, carrying nonce.
type pingTo struct {
	addr  netip.AddrPort
	nonce uint64
}

func newPeerMonitor(failureTimeout, probeEvery int64, nonce func() uint64) peerMonitor {
	return peerMonitor{failureTimeout: failureTimeout, probeEvery: probeEvery, nonce: nonce,
		remotes: map[netip.AddrPort]*remote{}}
}

// watch starts (delta +1) or stops (-1) a session's watch of the peer
// Nexus at addr, which announced incarnation inc. The first watch (or the
// first after a failure: a reconnect) starts the peer's clock afresh.
func (m *peerMonitor) watch(addr netip.AddrPort, delta int, inc uint64, now int64) {
	r := m.remotes[addr]
	if r == nil {
		if delta < 0 {
			return
		}
		r = &remote{nonce: m.newNonce()}
		m.remotes[addr] = r
	}
	if delta > 0 && (r.refs == 0 || r.failed) {
		r.lastHeard = now
		r.failed = false
		r.incarnation = inc
	}
	if delta > 0 && r.incarnation == 0 {
		r.incarnation = inc
	}
	r.refs += delta
	if r.refs <= 0 {
		delete(m.remotes, addr)
	}
}

func (m *peerMonitor) newNonce() uint64 {
	for {
		if n := m.nonce(); n != 0 { // 0: a pong of a ping without a nonce
			return n
		}
	}
}

// heard records a control packet from the peer Nexus at addr carrying
// incarnation inc; echo is the nonce a pong echoes (0 for other packets),
// proven says that the packet passed the cookie check (a connect request
// the gate admitted). It reports restarted when the peer has restarted, so
// that its sessions have failed (once: the peer stays failed until a
// session watches it again), and a probe to send when the packet claims
// another incarnation without proof.
func (m *peerMonitor) heard(addr netip.AddrPort, inc, echo uint64, proven bool, now int64) (restarted bool, probe pingTo) {
	r := m.remotes[addr]
	if r == nil {
		return false, pingTo{}
	}
	if r.incarnation == 0 || inc == r.incarnation {
		r.lastHeard = now
		return false, pingTo{}
	}
	if r.failed {
		return false, pingTo{}
	}
	if proven || (echo != 0 && echo == r.nonce) {
		r.failed = true
		r.lastHeard = now
		return true, pingTo{}
	}
	if now < r.nextProbe {
		return false, pingTo{}
	}
	r.nextProbe = now + m.probeEvery
	return false, pingTo{addr, r.nonce}
}

// tick appends to ping the heartbeats to send and to failed the peers
// silent for longer than the failure timeout at now (each reported once),
// and returns both.
func (m *peerMonitor) tick(now int64, ping []pingTo, failed []netip.AddrPort) ([]pingTo, []netip.AddrPort) {
	for addr, r := range m.remotes {
		if r.failed {
			continue
		}
		if now-r.lastHeard > m.failureTimeout {
			r.failed = true
			failed = append(failed, addr)
			continue
		}
		ping = append(ping, pingTo{addr, r.nonce})
	}
	return ping, failed
}
