package rpc

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// The session core is the pure state machine of one endpoint's session
// management: connect and disconnect handshakes (client and server side),
// their retransmission and timeouts, the server's session limits and
// evictions, and the failure of every session to a peer Nexus. It does no
// I/O and reads no clock: control packets, ticks and the current time come
// in through its methods, and what it decides goes out, at once and in
// order, through its smHost (the endpoint, endpoint_session.go; a recorder
// in the transcript tests, testdata/session). Failure detection of peer
// Nexuses (heartbeats) is the other pure half, peerMonitor
// (session_monitor.go), driven by the Nexus.

// smHost is what the session core asks of its shell. Every method runs
// synchronously, in the order of the core's decisions.
type smHost interface {
	// smSend sends a control packet to the peer Nexus at to (the Nexus
	// fills in its incarnation; a loss is a loss).
	smSend(to netip.AddrPort, p *smPkt)
	// smOpen adds the session to the protocol core.
	smOpen(cfg proto.SessionConfig) error
	// smClose ends session si: it removes it from the protocol core when
	// opened (its pending requests fail with err) and releases every
	// buffer and request the shell holds for it.
	smClose(si *sessInfo, opened bool, err error)
	// smEvent reports a session event to the application.
	smEvent(num uint16, ev SessionEvent, err error)
	// smMonitor starts (delta +1) or stops (-1) failure detection of the
	// peer Nexus at addr, whose incarnation is inc.
	smMonitor(addr netip.AddrPort, delta int, inc uint64)
	// smLastRx is when session num last received a packet (0: never).
	smLastRx(num uint16) int64
	// smProcess runs the continuations of requests that just failed.
	smProcess()
}

// smCore is the session core of one endpoint (see above). The endpoint
// embeds it; it belongs to the endpoint's goroutine.
type smCore struct {
	host  smHost
	id    uint8          // this endpoint's id
	local netip.AddrPort // this endpoint's datapath address, announced in handshakes
	cred  *Credential    // presented in connect requests; nil: none
	inc   uint64         // this Nexus's incarnation (signed connect requests cover it)

	smTimeout, connectTimeout int64 // ns

	sessions  []*sessInfo
	freeSess  []uint16
	tokens    map[tokenKey]uint16
	smPending []uint16

	// Server session limits (session_admit.go).
	maxSessions, maxPerPeer int
	idleEvict               int64     // ns
	srvSessions             int       // server sessions in the books
	srvFIFO                 []sessRef // every server session, oldest first
	peers                   map[peerKey]*peerSessions

	stats *Stats // SessionsAccepted, SessionsRefused, SessionsEvicted
}

// smCoreConfig configures a session core.
type smCoreConfig struct {
	ID                      uint8
	Local                   netip.AddrPort
	Credential              *Credential
	Incarnation             uint64
	SMTimeout               int64 // ns
	ConnectTimeout          int64 // ns
	MaxSessions, MaxPerPeer int
	IdleEvict               int64 // ns
}

func (c *smCore) init(host smHost, cfg smCoreConfig, stats *Stats) {
	*c = smCore{host: host, id: cfg.ID, local: cfg.Local, cred: cfg.Credential, inc: cfg.Incarnation,
		smTimeout: cfg.SMTimeout, connectTimeout: cfg.ConnectTimeout,
		tokens: map[tokenKey]uint16{}, peers: map[peerKey]*peerSessions{},
		maxSessions: cfg.MaxSessions, maxPerPeer: cfg.MaxPerPeer, idleEvict: cfg.IdleEvict, stats: stats}
}

func (c *smCore) session(num uint16) *sessInfo {
	if int(num) < len(c.sessions) {
		return c.sessions[num]
	}
	return nil
}

func (c *smCore) newSession() (*sessInfo, bool) {
	var num uint16
	if k := len(c.freeSess); k > 0 {
		num = c.freeSess[k-1]
		c.freeSess = c.freeSess[:k-1]
	} else {
		if len(c.sessions) >= proto.InvalidSession {
			return nil, false
		}
		num = uint16(len(c.sessions))
		c.sessions = append(c.sessions, nil)
	}
	si := &sessInfo{num: num}
	c.sessions[num] = si
	return si, true
}

// freeSession ends si (its requests fail with err) and frees its number.
func (c *smCore) freeSession(si *sessInfo, err error) {
	c.host.smClose(si, si.inCore, err)
	si.inCore = false
	if si.monitored {
		c.host.smMonitor(si.remoteNexus, -1, 0)
		si.monitored = false
	}
	if !si.client {
		delete(c.tokens, tokenKey{si.remoteNexus, si.token})
	}
	if si.counted {
		c.dropServerSession(si)
	}
	c.sessions[si.num] = nil
	c.freeSess = append(c.freeSess, si.num)
}

// startConnect creates a client session to endpoint remoteEp of the Nexus
// at nexus, with handshake token token, and sends its connect request.
func (c *smCore) startConnect(now int64, nexus netip.AddrPort, remoteEp uint8, token uint64) (*sessInfo, bool) {
	si, ok := c.newSession()
	if !ok {
		return nil, false
	}
	si.client = true
	si.state = sessConnecting
	si.remoteNexus = netip.AddrPortFrom(nexus.Addr().Unmap(), nexus.Port())
	si.remoteEp = remoteEp
	si.token = token
	si.deadline = now + c.connectTimeout
	c.sendConnect(si, now)
	c.addSMPending(si)
	return si, true
}

// startDisconnect closes client session si: a connecting one at once, a
// connected one with a disconnect handshake (the caller checked that it
// has no pending requests).
func (c *smCore) startDisconnect(now int64, si *sessInfo) {
	switch si.state {
	case sessDisconnecting:
		return
	case sessConnecting:
		c.freeSession(si, ErrDisconnected)
		return
	}
	si.state = sessDisconnecting
	si.deadline = now + c.connectTimeout
	c.sendDisconnect(si, now)
	c.addSMPending(si)
}

func (c *smCore) addSMPending(si *sessInfo) {
	if !si.pendingSM {
		si.pendingSM = true
		c.smPending = append(c.smPending, si.num)
	}
}

func (c *smCore) sendConnect(si *sessInfo, now int64) {
	si.nextSM = now + c.smTimeout
	p := smPkt{typ: smConnectReq, token: si.token, incarnation: c.inc, clientEp: c.id, serverEp: si.remoteEp,
		clientSess: si.num, dataAddr: c.local, cookie: si.cookie}
	if c.cred != nil {
		p.sign(c.cred)
	}
	c.host.smSend(si.remoteNexus, &p)
}

func (c *smCore) sendDisconnect(si *sessInfo, now int64) {
	si.nextSM = now + c.smTimeout
	c.host.smSend(si.remoteNexus, &smPkt{typ: smDisconnectReq, token: si.token, clientEp: c.id, serverEp: si.remoteEp,
		clientSess: si.num, serverSess: si.remoteSess, dataAddr: c.local})
}

// smTimers retransmits handshakes due at now and ends those past their
// deadline.
func (c *smCore) smTimers(now int64) {
	keep := c.smPending[:0]
	for _, num := range c.smPending {
		si := c.session(num)
		if si == nil || !si.pendingSM {
			continue
		}
		switch si.state {
		case sessConnecting:
			if now >= si.deadline {
				si.pendingSM = false
				c.freeSession(si, ErrConnectFailed)
				c.host.smEvent(num, ConnectFailed, fmt.Errorf("%w: timed out", ErrConnectFailed))
				continue
			}
			if now >= si.nextSM {
				c.sendConnect(si, now)
			}
		case sessDisconnecting:
			if now >= si.deadline {
				si.pendingSM = false
				c.freeSession(si, ErrDisconnected)
				c.host.smEvent(num, Disconnected, nil)
				continue
			}
			if now >= si.nextSM {
				c.sendDisconnect(si, now)
			}
		default:
			si.pendingSM = false
			continue
		}
		keep = append(keep, num)
	}
	c.smPending = keep
}

// step handles control packet p from the peer Nexus at from, at time now.
// Connect requests have passed the Nexus's gate (cookie, rate, credential);
// key and role are the credential that authenticated one.
func (c *smCore) step(now int64, from netip.AddrPort, p *smPkt, key string, role uint8) {
	p.dataAddr = unmap(p.dataAddr)
	if a := p.dataAddr.Addr(); !a.IsValid() || a.IsUnspecified() {
		// The peer's datapath is bound to a wildcard address: reach it at
		// the address its control packet came from.
		p.dataAddr = netip.AddrPortFrom(from.Addr(), p.dataAddr.Port())
	}
	switch p.typ {
	case smConnectReq:
		c.acceptConnect(now, from, p, key, role)
	case smConnectResp:
		si := c.session(p.clientSess)
		if si == nil || !si.client || si.state != sessConnecting || si.token != p.token {
			return // stale or duplicate
		}
		si.pendingSM = false
		if p.err != smOK {
			err := fmt.Errorf("%w: peer error %d", ErrConnectFailed, p.err)
			switch p.err {
			case smErrNoEndpoint:
				err = fmt.Errorf("%w: %w", ErrConnectFailed, ErrInvalidEndpointID)
			case smErrNoSessions:
				err = fmt.Errorf("%w: the server is at its session limit", ErrConnectFailed)
			case smErrAuth:
				err = fmt.Errorf("%w: %w", ErrConnectFailed, ErrAuth)
			}
			c.freeSession(si, err)
			c.host.smEvent(p.clientSess, ConnectFailed, err)
			return
		}
		if err := c.host.smOpen(proto.SessionConfig{Num: si.num, Client: true, Remote: p.serverSess, Peer: p.dataAddr}); err != nil {
			c.freeSession(si, err)
			c.host.smEvent(p.clientSess, ConnectFailed, err)
			return
		}
		si.inCore = true
		si.remoteSess = p.serverSess
		si.state = sessConnected
		c.host.smMonitor(si.remoteNexus, 1, p.incarnation)
		si.monitored = true
		c.host.smEvent(si.num, Connected, nil)
	case smDisconnectReq:
		if num, ok := c.tokens[tokenKey{from, p.token}]; ok {
			if si := c.session(num); si != nil && !si.client {
				c.freeSession(si, ErrDisconnected)
			}
		}
		c.host.smSend(from, &smPkt{typ: smDisconnectResp, token: p.token, clientEp: p.clientEp, serverEp: c.id,
			clientSess: p.clientSess, serverSess: p.serverSess, dataAddr: c.local})
	case smChallenge:
		si := c.session(p.clientSess)
		if si == nil || !si.client || si.state != sessConnecting || si.token != p.token || si.cookie == p.cookie || from != si.remoteNexus {
			return // stale, duplicate, or one we already answered
		}
		si.cookie = p.cookie
		c.sendConnect(si, now) // at once: the retransmission timer restarts
	case smEvicted:
		si := c.session(p.clientSess)
		if si == nil || !si.client || si.state != sessConnected || si.token != p.token || si.remoteSess != p.serverSess || from != si.remoteNexus {
			return
		}
		num := si.num
		si.pendingSM = false
		c.freeSession(si, ErrEvicted)
		c.host.smProcess() // continuations of the failed requests
		c.host.smEvent(num, Failed, ErrEvicted)
	case smDisconnectResp:
		si := c.session(p.clientSess)
		if si == nil || !si.client || si.state != sessDisconnecting || si.token != p.token {
			return
		}
		si.pendingSM = false
		c.freeSession(si, ErrDisconnected)
		c.host.smEvent(p.clientSess, Disconnected, nil)
	}
}

// acceptConnect is the server side of a connect request that passed the
// gate: a duplicate is answered again, a new one admitted within the
// limits.
func (c *smCore) acceptConnect(now int64, from netip.AddrPort, p *smPkt, key string, role uint8) {
	tk := tokenKey{from, p.token}
	if num, ok := c.tokens[tk]; ok {
		c.replyConnect(from, p, num, smOK)
		return
	}
	if !c.admit(now, from) {
		c.stats.SessionsRefused++
		c.replyConnect(from, p, 0, smErrNoSessions)
		return
	}
	si, ok := c.newSession()
	if !ok {
		c.stats.SessionsRefused++
		c.replyConnect(from, p, 0, smErrNoSessions)
		return
	}
	si.state = sessConnected
	si.remoteNexus, si.remoteEp, si.remoteSess, si.token = from, p.clientEp, p.clientSess, p.token
	si.key, si.role = key, role
	if err := c.host.smOpen(proto.SessionConfig{Num: si.num, Remote: p.clientSess, Peer: p.dataAddr}); err != nil {
		c.freeSession(si, nil)
		c.replyConnect(from, p, 0, smErrNoSessions)
		return
	}
	si.inCore = true
	c.tokens[tk] = si.num
	c.addServerSession(si)
	c.stats.SessionsAccepted++
	c.host.smMonitor(from, 1, p.incarnation)
	si.monitored = true
	c.replyConnect(from, p, si.num, smOK)
	c.host.smEvent(si.num, Accepted, nil)
}

func (c *smCore) replyConnect(to netip.AddrPort, p *smPkt, num uint16, e smErr) {
	c.host.smSend(to, &smPkt{typ: smConnectResp, err: e, token: p.token, clientEp: p.clientEp, serverEp: c.id,
		clientSess: p.clientSess, serverSess: num, dataAddr: c.local})
}

// peerFailed fails every session to the Nexus at addr: pending requests
// complete with ErrPeerFailed (Appendix B: the packets already handed to
// the datapath hold their own references).
func (c *smCore) peerFailed(addr netip.AddrPort) {
	for _, si := range c.sessions {
		if si == nil || si.remoteNexus != addr {
			continue
		}
		num := si.num
		client := si.client
		connecting := si.state == sessConnecting
		si.pendingSM = false
		c.freeSession(si, ErrPeerFailed)
		c.host.smProcess() // continuations of the failed requests
		switch {
		case client && connecting:
			c.host.smEvent(num, ConnectFailed, ErrPeerFailed)
		default:
			c.host.smEvent(num, Failed, ErrPeerFailed)
		}
	}
}
