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
	si, ok := ep.startConnect(ep.now(), nexus, remoteEp, rand.Uint64())
	if !ok {
		return 0, fmt.Errorf("%w: out of session numbers", ErrConnectFailed)
	}
	// From now on responses may arrive: receive in place if the datapath
	// can (endpoint_segrx.go).
	ep.segRx = ep.segRxDP
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
	if si.state == sessConnected && ep.core.Pending(si.num) > 0 {
		return ErrSessionBusy
	}
	ep.startDisconnect(ep.now(), si)
	return nil
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

// handleSM hands control packet p from the peer Nexus at from to the
// session core (key and role: the credential of a connect request).
func (ep *Endpoint) handleSM(from netip.AddrPort, p *smPkt, key string, role uint8) {
	ep.step(ep.now(), from, p, key, role)
}

// The endpoint is its session core's host (smHost): the effects of the
// core's decisions on the Nexus, the protocol core and the application.

func (ep *Endpoint) smSend(to netip.AddrPort, p *smPkt) { ep.nx.sendSM(to, p) }

func (ep *Endpoint) smOpen(cfg proto.SessionConfig) error {
	if cfg.Client {
		cfg.NoCC = ep.sessionNoCC(cfg.Peer)
	}
	return ep.core.AddSession(cfg)
}

func (ep *Endpoint) smClose(si *sessInfo, opened bool, err error) {
	if opened {
		_ = ep.core.RemoveSession(si.num, err)
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
}

func (ep *Endpoint) smEvent(num uint16, ev SessionEvent, err error) { ep.sessionEvent(num, ev, err) }

func (ep *Endpoint) smMonitor(addr netip.AddrPort, delta int, inc uint64) {
	ep.nx.monitor(addr, delta, inc)
}

func (ep *Endpoint) smLastRx(num uint16) int64 { return ep.core.LastRx(num) }

func (ep *Endpoint) smProcess() { ep.process() }
