package rpc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Mode says where a request handler runs.
type Mode uint8

const (
	// Dispatch handlers run in the endpoint's event loop. A single-packet
	// request is handed over in the receive buffer (zero-copy). They must
	// be short: while one runs, the endpoint sends and receives nothing.
	Dispatch Mode = iota
	// Worker handlers run on the Nexus worker pool. The request is copied
	// into the Nexus's own goroutine-safe pool, so a worker may decode it
	// (wire takes references on it) without touching the endpoint's
	// single-goroutine pools; its Respond serializes the answer into that
	// pool and hands it to the endpoint's loop (Request.Respond).
	Worker
)

// Handler serves one request. It answers with one of the Request.Respond
// methods, now or later (from any goroutine for worker handlers; from the
// endpoint goroutine for dispatch handlers).
type Handler func(r *Request)

type handlerEntry struct {
	fn   Handler
	lfn  LoopHandler // RegisterLoop's (fn calls it too)
	mode Mode
	// recovered is RegisterLoop's: called with a panic of lfn.
	recovered func(l Loop, r *Request, p any)
}

// NexusConfig configures a Nexus. Zero fields take the defaults.
type NexusConfig struct {
	// ControlAddr is the UDP address of the session-management socket
	// (default 127.0.0.1:0, an ephemeral port).
	ControlAddr netip.AddrPort
	// SMTimeout is the retransmission interval of connect and disconnect
	// requests (default 100ms, eRPC's kSMTimeoutMs).
	SMTimeout time.Duration
	// ConnectTimeout bounds a connect or disconnect handshake (default 2s).
	ConnectTimeout time.Duration
	// HeartbeatInterval is the period of pings to peers, and the least
	// interval between probes of one peer (docs/SECURITY.md; default
	// FailureTimeout/5).
	HeartbeatInterval time.Duration
	// FailureTimeout is how long a peer may stay silent before it is
	// declared failed (default 500ms, eRPC's kMachineFailureTimeoutMs).
	FailureTimeout time.Duration
	// Workers is the number of worker goroutines for Worker handlers (default 2).
	Workers int
	// WorkerQueue bounds the requests waiting for a worker (default 4096);
	// beyond it requests are rejected (ErrRejected at the client).
	WorkerQueue int

	// Keys, when set, makes the Nexus's endpoints accept only connect
	// handshakes authenticated with one of its credentials (HMAC-SHA256
	// over the handshake, bound to the server's cookie); the session gets
	// the key's role (Request.Role). Nil: no authentication.
	Keys *Keyring
	// Credential is presented in this Nexus's own connect handshakes
	// (needed to connect to a server with Keys).
	Credential *Credential
	// CookieLifetime is how long a handshake cookie stays valid (default
	// DefaultCookieLifetime). Every connect first gets a challenge that
	// the client answers at once; nothing is stored until then.
	CookieLifetime time.Duration
	// HandshakeRate bounds the connect requests per second from one
	// source address (an IPv4 address or an IPv6 /64, whatever the port);
	// more are dropped unanswered and counted
	// (default DefaultHandshakeRate).
	HandshakeRate int
}

func (c NexusConfig) withDefaults() NexusConfig {
	if !c.ControlAddr.IsValid() {
		c.ControlAddr = netip.MustParseAddrPort("127.0.0.1:0")
	}
	if c.SMTimeout <= 0 {
		c.SMTimeout = 100 * time.Millisecond
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 2 * time.Second
	}
	if c.FailureTimeout <= 0 {
		c.FailureTimeout = 500 * time.Millisecond
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = c.FailureTimeout / 5
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.WorkerQueue <= 0 {
		c.WorkerQueue = 4096
	}
	if c.CookieLifetime <= 0 {
		c.CookieLifetime = DefaultCookieLifetime
	}
	if c.HandshakeRate <= 0 {
		c.HandshakeRate = DefaultHandshakeRate
	}
	return c
}

// Nexus is the per-process part of the RPC system: the handler registry,
// the session-management UDP socket (connect/disconnect handshakes,
// heartbeats, failure detection) and the worker pool. It is safe for
// concurrent use. Endpoints are created from it, one per goroutine.
type Nexus struct {
	cfg         NexusConfig
	conn        *net.UDPConn
	addr        netip.AddrPort
	incarnation uint64
	handlers    [256]atomic.Pointer[handlerEntry]
	// recovering: a handler with a recovered function was registered
	// (RegisterLoop); the endpoints then handle events under a guard.
	recovering atomic.Bool
	work       chan *Request
	// workPool holds what crosses between an endpoint and the workers:
	// worker requests' bytes and their preallocated responses. It is
	// Concurrent (atomic reference counts), unlike the endpoints' pools.
	workPool    *mem.Pool
	reserveOnce sync.Once

	mu        sync.Mutex
	endpoints [256]*Endpoint
	mon       peerMonitor // failure detection (session_monitor.go)
	closed    bool

	done chan struct{}
	wg   sync.WaitGroup

	start    time.Time
	gate     *gate // owned by smLoop
	counters nexusCounters
}

// NewNexus opens the control socket and starts the session-management,
// heartbeat and worker goroutines.
func NewNexus(cfg NexusConfig) (*Nexus, error) {
	cfg = cfg.withDefaults()
	if cfg.Credential != nil {
		if err := cfg.Credential.valid(); err != nil {
			return nil, err
		}
		c := *cfg.Credential
		c.Secret = append([]byte(nil), c.Secret...)
		cfg.Credential = &c
	}
	wp, err := mem.NewPool(mem.PoolConfig{Name: "rpc-workers", Concurrent: true})
	if err != nil {
		return nil, fmt.Errorf("rpc: worker pool: %w", err)
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.ControlAddr))
	if err != nil {
		_ = wp.Close()
		return nil, fmt.Errorf("rpc: control socket: %w", err)
	}
	n := &Nexus{
		workPool:    wp,
		cfg:         cfg,
		conn:        conn,
		addr:        conn.LocalAddr().(*net.UDPAddr).AddrPort(),
		incarnation: rand.Uint64() | 1,
		work:        make(chan *Request, cfg.WorkerQueue),
		mon:         newPeerMonitor(int64(cfg.FailureTimeout), int64(cfg.HeartbeatInterval), rand.Uint64),
		done:        make(chan struct{}),
		start:       time.Now(),
	}
	n.gate = newGate(cfg.CookieLifetime, cfg.HandshakeRate, cfg.Keys, 0)
	n.wg.Add(2 + cfg.Workers)
	go n.smLoop()
	go n.heartbeatLoop()
	for i := 0; i < cfg.Workers; i++ {
		go n.workerLoop()
	}
	return n, nil
}

// Addr is the control socket's address: peers connect to (Addr, endpoint id).
func (n *Nexus) Addr() netip.AddrPort { return n.addr }

// Config returns the effective configuration.
func (n *Nexus) Config() NexusConfig { return n.cfg }

// Register installs the handler for reqType. It may be called at any time;
// endpoints see the change for the next request they receive.
func (n *Nexus) Register(reqType uint8, mode Mode, h Handler) error {
	if h == nil || mode > Worker {
		return fmt.Errorf("%w: Register: nil handler or bad mode", ErrConfig)
	}
	if mode == Worker {
		// Worker requests are copied into workPool on the endpoint's loop:
		// commit its small classes now rather than at the first request
		// of each size (see EndpointConfig.NoReserve).
		n.reserveOnce.Do(func() { reserveClasses(n.workPool, 1, 0) })
	}
	n.handlers[reqType].Store(&handlerEntry{fn: h, mode: mode})
	return nil
}

// RegisterLoop installs a dispatch handler for reqType that receives,
// with each request, its endpoint held by the handler's goroutine (a
// Loop, valid until the handler returns): the handler's inline response
// (Loop.RespondInline) and the requests it enqueues (Loop.EnqueueInline)
// skip the goroutine check. Register's rules otherwise, in Dispatch mode.
//
// With a non-nil recovered, a panic of h is recovered by the endpoint's
// loop (one guard per batch of events, not one per request): recovered
// runs on the loop with the request and the panic's value (it answers r
// if it should be answered; h's Loop is still valid in it), and the loop
// goes on with the next event. A panic of recovered itself is not
// recovered. With a nil recovered, a panic of h unwinds as with Register.
func (n *Nexus) RegisterLoop(reqType uint8, h LoopHandler, recovered func(l Loop, r *Request, p any)) error {
	if h == nil {
		return fmt.Errorf("%w: RegisterLoop: nil handler", ErrConfig)
	}
	fn := func(r *Request) { h(Loop{r.ep}, r) }
	if recovered != nil && !n.recovering.Load() {
		n.recovering.Store(true) // before the handler: its requests find the guard
	}
	n.handlers[reqType].Store(&handlerEntry{fn: fn, lfn: h, mode: Dispatch, recovered: recovered})
	return nil
}

// Close stops the Nexus goroutines and closes the control socket. Close
// every endpoint first (their sessions use the control socket): an
// endpoint still open is reported as ErrEndpointsOpen, and so is a worker
// request never answered (wrapping an *mem.InUseError), after the Nexus
// has closed anyway.
func (n *Nexus) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.closed = true
	var open []uint8
	for id, ep := range n.endpoints {
		if ep != nil {
			open = append(open, uint8(id))
		}
	}
	n.mu.Unlock()
	close(n.done)
	err := n.conn.Close()
	n.wg.Wait()
	if len(open) > 0 && err == nil {
		err = fmt.Errorf("%w: ids %v (close them before their Nexus)", ErrEndpointsOpen, open)
	}
	// A worker request still unanswered holds its bytes: that is a leak
	// of the application's, reported here (an *mem.InUseError).
	if perr := n.workPool.Close(); perr != nil && err == nil {
		err = fmt.Errorf("rpc: worker requests still unanswered: %w", perr)
	}
	return err
}

func (n *Nexus) addEndpoint(id uint8, ep *Endpoint) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if n.endpoints[id] != nil {
		return fmt.Errorf("%w: %d is in use", ErrInvalidEndpointID, id)
	}
	n.endpoints[id] = ep
	return nil
}

func (n *Nexus) removeEndpoint(id uint8, ep *Endpoint) {
	n.mu.Lock()
	if n.endpoints[id] == ep {
		n.endpoints[id] = nil
	}
	n.mu.Unlock()
}

func (n *Nexus) endpoint(id uint8) *Endpoint {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.endpoints[id]
}

// monitor starts (delta +1) or stops (-1) watching the peer Nexus at addr
// for failures.
func (n *Nexus) monitor(addr netip.AddrPort, delta int, incarnation uint64) {
	n.mu.Lock()
	n.mon.watch(addr, delta, incarnation, n.now())
	n.mu.Unlock()
}

// now is the Nexus's monotonic clock (ns since NewNexus).
func (n *Nexus) now() int64 { return int64(time.Since(n.start)) }

func (n *Nexus) sendSM(to netip.AddrPort, p *smPkt) {
	var b [smPktSize]byte
	p.incarnation = n.incarnation
	// A lost SM packet is retransmitted by its sender's timer; errors
	// (closed socket, unreachable peer) are equivalent to a loss.
	_, _ = n.conn.WriteToUDPAddrPort(p.encode(b[:]), to)
}

func (n *Nexus) smLoop() {
	defer n.wg.Done()
	buf := make([]byte, 2048)
	for {
		sz, from, err := n.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-n.done:
				return
			default:
				continue
			}
		}
		var p smPkt
		if p.decode(buf[:sz]) != nil {
			n.counters.bad.Add(1)
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		n.handleSM(from, &p)
	}
}

// handleSM handles one control packet on the receive goroutine.
// Connect requests pass the gate (rate limit, cookie, credential) before
// any endpoint sees them.
func (n *Nexus) handleSM(from netip.AddrPort, p *smPkt) {
	switch p.typ {
	case smPing:
		n.heard(from, p.incarnation, 0, false)
		n.sendSM(from, &smPkt{typ: smPong, token: p.token}) // the pong echoes the ping's nonce
	case smPong:
		n.heard(from, p.incarnation, p.token, false)
	case smConnectReq:
		v, key := n.gate.check(from, p, n.now())
		switch v {
		case gateDrop:
			n.counters.dropped.Add(1)
			return
		case gateChallenge:
			n.counters.challenges.Add(1)
			n.sendSM(from, &smPkt{typ: smChallenge, token: p.token, clientEp: p.clientEp, serverEp: p.serverEp,
				clientSess: p.clientSess, cookie: p.cookie})
			return
		case gateAuthFail:
			n.counters.authFail.Add(1)
			n.sendSM(from, &smPkt{typ: smConnectResp, err: smErrAuth, token: p.token, clientEp: p.clientEp,
				serverEp: p.serverEp, clientSess: p.clientSess})
			return
		}
		n.heard(from, p.incarnation, 0, true) // the cookie proves the source address
		ep := n.endpoint(p.serverEp)
		if ep == nil {
			n.counters.noEndpoint.Add(1)
			n.sendSM(from, &smPkt{typ: smConnectResp, err: smErrNoEndpoint, token: p.token, clientEp: p.clientEp,
				serverEp: p.serverEp, clientSess: p.clientSess})
			return
		}
		ep.post(mail{kind: mailSM, from: from, sm: *p, key: key.Name, role: key.Role})
	case smDisconnectReq:
		n.heard(from, p.incarnation, 0, false)
		ep := n.endpoint(p.serverEp)
		if ep == nil {
			n.sendSM(from, &smPkt{typ: smDisconnectResp, token: p.token, clientEp: p.clientEp,
				serverEp: p.serverEp, clientSess: p.clientSess}) // nothing to disconnect
			return
		}
		ep.post(mail{kind: mailSM, from: from, sm: *p})
	case smConnectResp, smDisconnectResp, smChallenge, smEvicted:
		n.heard(from, p.incarnation, 0, false)
		if ep := n.endpoint(p.clientEp); ep != nil {
			ep.post(mail{kind: mailSM, from: from, sm: *p})
		}
	}
}

// heard records a packet from the peer Nexus at addr (echo: a pong's
// nonce; proven: a connect request the gate admitted); a changed
// incarnation, proven, means the peer restarted, so its old sessions have
// failed; unproven, it is probed with a ping (peerMonitor).
func (n *Nexus) heard(addr netip.AddrPort, inc, echo uint64, proven bool) {
	n.mu.Lock()
	restarted, probe := n.mon.heard(addr, inc, echo, proven, n.now())
	n.mu.Unlock()
	if probe.addr.IsValid() {
		n.sendSM(probe.addr, &smPkt{typ: smPing, token: probe.nonce})
	}
	if restarted {
		n.peerFailed(addr)
	}
}

func (n *Nexus) peerFailed(addr netip.AddrPort) {
	n.mu.Lock()
	eps := n.endpoints
	n.mu.Unlock()
	for _, ep := range eps {
		if ep != nil {
			ep.post(mail{kind: mailPeerFailed, from: addr})
		}
	}
}

func (n *Nexus) heartbeatLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	var failed []netip.AddrPort
	var ping []pingTo
	lastTrim := time.Now()
	for {
		select {
		case <-n.done:
			return
		case <-t.C:
		}
		now := time.Now()
		if now.Sub(lastTrim) >= trimEvery {
			lastTrim = now
			n.workPool.Trim(DefaultPoolIdle) // worker buffers of a past burst go back to the OS
		}
		n.mu.Lock()
		ping, failed = n.mon.tick(n.now(), ping[:0], failed[:0])
		n.mu.Unlock()
		for _, a := range ping {
			n.sendSM(a.addr, &smPkt{typ: smPing, token: a.nonce})
		}
		for _, a := range failed {
			n.peerFailed(a)
		}
	}
}

func (n *Nexus) workerLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case r := <-n.work:
			r.runHandler()
		}
	}
}
