package rpc

import "net/netip"

// peerMonitor is the pure failure detector of a Nexus: which peer Nexuses
// its endpoints' sessions depend on, when each was last heard from, and
// with which incarnation. It does no I/O and reads no clock (times are ns
// of the caller's monotonic clock); the Nexus (nexus.go) guards it with
// its mutex, feeds it every control packet's source and incarnation, and
// ticks it every HeartbeatInterval to learn whom to ping and who failed.
type peerMonitor struct {
	failureTimeout int64 // ns of silence after which a peer has failed
	remotes        map[netip.AddrPort]*remote
}

type remote struct {
	refs        int
	lastHeard   int64
	incarnation uint64
	failed      bool
}

func newPeerMonitor(failureTimeout int64) peerMonitor {
	return peerMonitor{failureTimeout: failureTimeout, remotes: map[netip.AddrPort]*remote{}}
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
		r = &remote{}
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

// heard records a control packet from the peer Nexus at addr carrying
// incarnation inc. It reports true when the incarnation changed: the peer
// restarted, so its sessions have failed (once: the peer stays failed
// until a session watches it again).
func (m *peerMonitor) heard(addr netip.AddrPort, inc uint64, now int64) (restarted bool) {
	r := m.remotes[addr]
	if r == nil {
		return false
	}
	restarted = r.incarnation != 0 && inc != r.incarnation && !r.failed
	r.lastHeard = now
	if restarted {
		r.failed = true
	}
	return restarted
}

// tick appends to ping the peers to send a heartbeat to and to failed the
// peers silent for longer than the failure timeout at now (each reported
// once), and returns both.
func (m *peerMonitor) tick(now int64, ping, failed []netip.AddrPort) ([]netip.AddrPort, []netip.AddrPort) {
	for addr, r := range m.remotes {
		if r.failed {
			continue
		}
		if now-r.lastHeard > m.failureTimeout {
			r.failed = true
			failed = append(failed, addr)
			continue
		}
		ping = append(ping, addr)
	}
	return ping, failed
}
