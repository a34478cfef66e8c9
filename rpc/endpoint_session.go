package rpc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

func (ep *Endpoint) session(num uint16) *sessInfo {
	if int(num) < len(ep.sessions) {
		return ep.sessions[num]
	}
	return nil
}

func (ep *Endpoint) newSession() (*sessInfo, bool) {
	var num uint16
	if k := len(ep.freeSess); k > 0 {
		num = ep.freeSess[k-1]
		ep.freeSess = ep.freeSess[:k-1]
	} else {
		if len(ep.sessions) >= proto.InvalidSession {
			return nil, false
		}
		num = uint16(len(ep.sessions))
		ep.sessions = append(ep.sessions, nil)
	}
	si := &sessInfo{num: num}
	ep.sessions[num] = si
	return si, true
}

func (ep *Endpoint) freeSession(si *sessInfo, err error) {
	if si.inCore {
		_ = ep.core.RemoveSession(si.num, err)
		si.inCore = false
	}
	if si.monitored {
		ep.nx.monitor(si.remoteNexus, -1, 0)
		si.monitored = false
	}
	for i := range si.pre {
		if !si.pre[i].IsZero() {
			_ = si.pre[i].Release()
		}
	}
	si.pre = nil
	for i, r := range si.reqs {
		// Unanswered requests die with the session: a later Respond
		// fails. A dispatch request's bytes are released now; a worker
		// request's are the worker's (it may still be reading them) until
		// it answers.
		if r != nil {
			if r.mode == Dispatch {
				if !r.buf.IsZero() {
					_ = r.buf.Release()
					r.buf = mem.Buf{}
				}
				r.data = nil
			}
			r.dead, r.tracked = true, false
		}
		si.reqs[i] = nil
	}
	if !si.client {
		delete(ep.tokens, tokenKey{si.remoteNexus, si.token})
	}
	if si.counted {
		ep.dropServerSession(si)
	}
	ep.sessions[si.num] = nil
	ep.freeSess = append(ep.freeSess, si.num)
}

func (ep *Endpoint) sessionEvent(num uint16, ev SessionEvent, err error) {
	if ev == ConnectFailed && ep.connWaiting && num == ep.connWaitNum {
		ep.connWaitErr = err
	}
	if f := ep.cfg.OnSession; f != nil {
		ep.callback(func() { f(Session(num), ev, err) })
	}
}

// Connect starts a session to endpoint remoteEp of the Nexus whose control
// socket is at nexus. The session is usable after the Connected event (or
// IsConnected); ConnectFailed reports failure. Handshake packets are
// retransmitted every SMTimeout until ConnectTimeout.
func (ep *Endpoint) Connect(nexus netip.AddrPort, remoteEp uint8) (Session, error) {
	nested, err := ep.enter()
	if err != nil {
		return 0, err
	}
	defer ep.exit(nested)
	if !nexus.IsValid() {
		return 0, fmt.Errorf("%w: invalid address", ErrConnectFailed)
	}
	si, ok := ep.newSession()
	if !ok {
		return 0, fmt.Errorf("%w: out of session numbers", ErrConnectFailed)
	}
	si.client = true
	si.state = sessConnecting
	si.remoteNexus = netip.AddrPortFrom(nexus.Addr().Unmap(), nexus.Port())
	si.remoteEp = remoteEp
	si.token = rand.Uint64()
	now := ep.now()
	si.deadline = now + int64(ep.nx.cfg.ConnectTimeout)
	ep.sendConnect(si, now)
	ep.addSMPending(si)
	return Session(si.num), nil
}

// WaitConnected runs the event loop until client session s (from Connect)
// is connected (nil), its handshake fails (the error of the ConnectFailed
// event, wrapping ErrConnectFailed: a refused endpoint id, a timeout after
// NexusConfig.ConnectTimeout) or ctx is done (ctx.Err()). Like Call, it
// runs the loop, so not from handlers or continuations (ErrReentrant);
// there, wait for the Connected event (EndpointConfig.OnSession).
func (ep *Endpoint) WaitConnected(ctx context.Context, s Session) error {
	nested, err := ep.enterLoop()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	num := uint16(s)
	si := ep.session(num)
	if si == nil || !si.client {
		return ErrNoSession
	}
	token := si.token // this handshake's: a session number is reused
	ep.connWaiting, ep.connWaitNum, ep.connWaitErr = true, num, nil
	defer func() { ep.connWaiting, ep.connWaitErr = false, nil }()
	dctx := ctx.Done()
	for {
		if ep.connWaitErr != nil {
			return ep.connWaitErr
		}
		si := ep.session(num)
		switch {
		case si == nil || si.token != token:
			return fmt.Errorf("%w: the session was closed", ErrConnectFailed)
		case si.state == sessConnected:
			return nil
		case si.state != sessConnecting:
			return fmt.Errorf("%w: the session is disconnecting", ErrConnectFailed)
		}
		select {
		case <-dctx:
			return ctx.Err()
		default:
		}
		if _, err := ep.runOnce(); err != nil {
			return err
		}
	}
}

// ConnectHost is Connect with the peer Nexus named "host:port"; the name
// is resolved (possibly a blocking DNS lookup) before the handshake starts.
func (ep *Endpoint) ConnectHost(hostport string, remoteEp uint8) (Session, error) {
	ua, err := net.ResolveUDPAddr("udp", hostport)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrConnectFailed, err)
	}
	return ep.Connect(ua.AddrPort(), remoteEp)
}

func (ep *Endpoint) addSMPending(si *sessInfo) {
	if !si.pendingSM {
		si.pendingSM = true
		ep.smPending = append(ep.smPending, si.num)
	}
}

func (ep *Endpoint) sendConnect(si *sessInfo, now int64) {
	si.nextSM = now + int64(ep.nx.cfg.SMTimeout)
	p := smPkt{typ: smConnectReq, token: si.token, incarnation: ep.nx.incarnation, clientEp: ep.id, serverEp: si.remoteEp,
		clientSess: si.num, dataAddr: ep.dp.LocalAddr(), cookie: si.cookie}
	if c := ep.nx.cfg.Credential; c != nil {
		p.sign(c)
	}
	ep.nx.sendSM(si.remoteNexus, &p)
}

func (ep *Endpoint) sendDisconnect(si *sessInfo, now int64) {
	si.nextSM = now + int64(ep.nx.cfg.SMTimeout)
	ep.nx.sendSM(si.remoteNexus, &smPkt{typ: smDisconnectReq, token: si.token, clientEp: ep.id, serverEp: si.remoteEp,
		clientSess: si.num, serverSess: si.remoteSess, dataAddr: ep.dp.LocalAddr()})
}

// IsConnected reports whether s is a connected client session.
//
// Like every Endpoint method but Stats and Post, it belongs to the
// endpoint's goroutine (or to any goroutine while no other one uses the
// endpoint). Called from another goroutine while the endpoint is in use,
// where it cannot return ErrConcurrentUse, it reports false instead of
// reading the loop's state under its feet: to learn of a connection on
// another goroutine, use EndpointConfig.OnSession or Post.
func (ep *Endpoint) IsConnected(s Session) bool {
	nested, err := ep.enter()
	if err != nil {
		return false
	}
	defer ep.exit(nested)
	si := ep.session(uint16(s))
	return si != nil && si.client && si.state == sessConnected
}

// CongestionControlled reports whether client session s runs under
// congestion control: what EndpointConfig.CC's automatic mode decided for
// its peer, or what Enable forces. Like IsConnected, it belongs to the
// endpoint's goroutine, and reports false from another goroutine while the
// endpoint is in use.
func (ep *Endpoint) CongestionControlled(s Session) bool {
	nested, err := ep.enter()
	if err != nil {
		return false
	}
	defer ep.exit(nested)
	return ep.core.CCOn(uint16(s))
}

// Pending is the number of requests of session s in flight or backlogged.
// Like IsConnected, it belongs to the endpoint's goroutine, and reports 0
// from another goroutine while the endpoint is in use.
func (ep *Endpoint) Pending(s Session) int {
	nested, err := ep.enter()
	if err != nil {
		return 0
	}
	defer ep.exit(nested)
	return ep.core.Pending(uint16(s))
}

// Disconnect closes client session s (it must have no pending requests:
// ErrSessionBusy). The Disconnected event follows when the server confirms
// or after ConnectTimeout.
func (ep *Endpoint) Disconnect(s Session) error {
	nested, err := ep.enter()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		return ErrNoSession
	}
	switch si.state {
	case sessDisconnecting:
		return nil
	case sessConnecting:
		ep.freeSession(si, ErrDisconnected)
		return nil
	}
	if ep.core.Pending(si.num) > 0 {
		return ErrSessionBusy
	}
	si.state = sessDisconnecting
	now := ep.now()
	si.deadline = now + int64(ep.nx.cfg.ConnectTimeout)
	ep.sendDisconnect(si, now)
	ep.addSMPending(si)
	return nil
}

func (ep *Endpoint) smTimers(now int64) {
	keep := ep.smPending[:0]
	for _, num := range ep.smPending {
		si := ep.session(num)
		if si == nil || !si.pendingSM {
			continue
		}
		switch si.state {
		case sessConnecting:
			if now >= si.deadline {
				si.pendingSM = false
				ep.freeSession(si, ErrConnectFailed)
				ep.sessionEvent(num, ConnectFailed, fmt.Errorf("%w: timed out", ErrConnectFailed))
				continue
			}
			if now >= si.nextSM {
				ep.sendConnect(si, now)
			}
		case sessDisconnecting:
			if now >= si.deadline {
				si.pendingSM = false
				ep.freeSession(si, ErrDisconnected)
				ep.sessionEvent(num, Disconnected, nil)
				continue
			}
			if now >= si.nextSM {
				ep.sendDisconnect(si, now)
			}
		default:
			si.pendingSM = false
			continue
		}
		keep = append(keep, num)
	}
	ep.smPending = keep
}

func (ep *Endpoint) drainMail() {
	ep.mailMu.Lock()
	q := ep.mailQ
	ep.mailQ = ep.mailSpare[:0]
	ep.hasMail.Store(false)
	ep.mailMu.Unlock()
	for i := range q {
		m := &q[i]
		switch m.kind {
		case mailSM:
			ep.handleSM(m.from, &m.sm, m.key, m.role)
		case mailPeerFailed:
			ep.peerFailed(m.from)
		case mailRespond:
			ep.atWorkers--
			ep.respondPrepared(m.req)
		case mailFunc:
			ep.callback(m.fn)
		}
		q[i] = mail{}
	}
	ep.mailSpare = q[:0]
}

func (ep *Endpoint) handleSM(from netip.AddrPort, p *smPkt, key string, role uint8) {
	p.dataAddr = unmap(p.dataAddr)
	if a := p.dataAddr.Addr(); !a.IsValid() || a.IsUnspecified() {
		// The peer's datapath is bound to a wildcard address: reach it at
		// the address its control packet came from.
		p.dataAddr = netip.AddrPortFrom(from.Addr(), p.dataAddr.Port())
	}
	switch p.typ {
	case smConnectReq:
		tk := tokenKey{from, p.token}
		if num, ok := ep.tokens[tk]; ok {
			ep.replyConnect(from, p, num, smOK)
			return
		}
		if !ep.admit(from) {
			ep.stats.SessionsRefused++
			ep.replyConnect(from, p, 0, smErrNoSessions)
			return
		}
		si, ok := ep.newSession()
		if !ok {
			ep.stats.SessionsRefused++
			ep.replyConnect(from, p, 0, smErrNoSessions)
			return
		}
		si.state = sessConnected
		si.remoteNexus, si.remoteEp, si.remoteSess, si.token = from, p.clientEp, p.clientSess, p.token
		si.key, si.role = key, role
		if err := ep.core.AddSession(proto.SessionConfig{Num: si.num, Remote: p.clientSess, Peer: p.dataAddr}); err != nil {
			ep.freeSession(si, nil)
			ep.replyConnect(from, p, 0, smErrNoSessions)
			return
		}
		si.inCore = true
		ep.tokens[tk] = si.num
		ep.addServerSession(si)
		ep.stats.SessionsAccepted++
		ep.nx.monitor(from, 1, p.incarnation)
		si.monitored = true
		ep.replyConnect(from, p, si.num, smOK)
		ep.sessionEvent(si.num, Accepted, nil)
	case smConnectResp:
		si := ep.session(p.clientSess)
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
			ep.freeSession(si, err)
			ep.sessionEvent(p.clientSess, ConnectFailed, err)
			return
		}
		if err := ep.core.AddSession(proto.SessionConfig{Num: si.num, Client: true, Remote: p.serverSess, Peer: p.dataAddr, NoCC: ep.sessionNoCC(p.dataAddr)}); err != nil {
			ep.freeSession(si, err)
			ep.sessionEvent(p.clientSess, ConnectFailed, err)
			return
		}
		si.inCore = true
		si.remoteSess = p.serverSess
		si.state = sessConnected
		ep.nx.monitor(si.remoteNexus, 1, p.incarnation)
		si.monitored = true
		ep.sessionEvent(si.num, Connected, nil)
	case smDisconnectReq:
		key := tokenKey{from, p.token}
		if num, ok := ep.tokens[key]; ok {
			if si := ep.session(num); si != nil && !si.client {
				ep.freeSession(si, ErrDisconnected)
			}
		}
		ep.nx.sendSM(from, &smPkt{typ: smDisconnectResp, token: p.token, clientEp: p.clientEp, serverEp: ep.id,
			clientSess: p.clientSess, serverSess: p.serverSess, dataAddr: ep.dp.LocalAddr()})
	case smChallenge:
		si := ep.session(p.clientSess)
		if si == nil || !si.client || si.state != sessConnecting || si.token != p.token || si.cookie == p.cookie || from != si.remoteNexus {
			return // stale, duplicate, or one we already answered
		}
		si.cookie = p.cookie
		ep.sendConnect(si, ep.now()) // at once: the retransmission timer restarts
	case smEvicted:
		si := ep.session(p.clientSess)
		if si == nil || !si.client || si.state != sessConnected || si.token != p.token || si.remoteSess != p.serverSess || from != si.remoteNexus {
			return
		}
		num := si.num
		si.pendingSM = false
		ep.freeSession(si, ErrEvicted)
		ep.process() // continuations of the failed requests
		ep.sessionEvent(num, Failed, ErrEvicted)
	case smDisconnectResp:
		si := ep.session(p.clientSess)
		if si == nil || !si.client || si.state != sessDisconnecting || si.token != p.token {
			return
		}
		si.pendingSM = false
		ep.freeSession(si, ErrDisconnected)
		ep.sessionEvent(p.clientSess, Disconnected, nil)
	}
}

func (ep *Endpoint) replyConnect(to netip.AddrPort, p *smPkt, num uint16, e smErr) {
	ep.nx.sendSM(to, &smPkt{typ: smConnectResp, err: e, token: p.token, clientEp: p.clientEp, serverEp: ep.id,
		clientSess: p.clientSess, serverSess: num, dataAddr: ep.dp.LocalAddr()})
}

// peerFailed fails every session to the Nexus at addr: pending requests
// complete with ErrPeerFailed (Appendix B: the packets already handed to
// the datapath hold their own references).
func (ep *Endpoint) peerFailed(addr netip.AddrPort) {
	for _, si := range ep.sessions {
		if si == nil || si.remoteNexus != addr {
			continue
		}
		num := si.num
		client := si.client
		connecting := si.state == sessConnecting
		si.pendingSM = false
		ep.freeSession(si, ErrPeerFailed)
		ep.process() // continuations of the failed requests
		switch {
		case client && connecting:
			ep.sessionEvent(num, ConnectFailed, ErrPeerFailed)
		default:
			ep.sessionEvent(num, Failed, ErrPeerFailed)
		}
	}
}
