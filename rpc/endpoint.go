package rpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petermattis/goid"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/freelist"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// CCConfig configures congestion control (Timely + Carousel rate limiter);
// see EndpointConfig.CC. It is the protocol core's type; its fields, zero
// meaning the default:
//
//	Enable, Disable bool    force congestion control on or off (neither: automatic)
//	LinkRate float64        Timely's initial and maximum rate, bytes/s (1.25e9)
//	MinRate, AddRate float64 bytes/s (15 MB/s; additive increase 5 MB/s)
//	MinRTT, TLow, THigh time.Duration, HaiThresh int, EwmaAlpha, Beta float64
//	                        Timely's parameters (eRPC's values)
//	NoTimelyBypass, NoWheelBypass, NoBatchTimestamps bool
//	                        switch off one of eRPC's three common-case
//	                        optimizations (§5.2.2; rpcbench's factor analysis)
//	Clock func() int64      the per-packet clock with NoBatchTimestamps
//	WheelSlot time.Duration, WheelSlots int
//	                        the rate limiter's timing wheel (1 µs slots)
type CCConfig = proto.CCConfig

// ProtoStats counts the protocol's activity (Stats.Proto). It is the
// protocol core's type; its fields (all uint64):
//
//	TxData, TxCtrl     data (request, response) and control (credit return, RFR) packets sent
//	Retransmits        packets re-sent by an RTO rollback or a fast retransmission
//	RTOs               slots rolled back by the loss scan
//	FastRetransmits    holes re-sent early (selective retransmission)
//	DupResponses       saved responses re-sent to a retransmitted request
//	Acks               request acknowledgements sent (server) or accepted (client)
//	Handlers           handler invocations
//	Completed, Failed  responses delivered without and with an error
//	DropBad            malformed packets (header, size, session)
//	DropOrder          out-of-order or duplicate packets dropped
//	DropWheel          responses dropped while a retransmitted copy sits in the rate limiter
//	Released           message releases
//	RateLimited        packets that went through the rate limiter
//	TimelyUpdates      Timely rate updates (not bypassed)
//	AllocFailures      reassembly buffers that could not be allocated
type ProtoStats = proto.Stats

// Session is a local session number, valid on the endpoint that created it.
type Session uint16

// SessionEvent is what happened to a session.
type SessionEvent uint8

// Session events delivered to EndpointConfig.OnSession.
const (
	Connected     SessionEvent = iota + 1 // client: the handshake completed
	ConnectFailed                         // client: the handshake failed or timed out
	Disconnected                          // client: Disconnect completed
	Failed                                // the peer failed or restarted; pending requests failed
	Accepted                              // server: a client connected
)

func (e SessionEvent) String() string {
	switch e {
	case Connected:
		return "connected"
	case ConnectFailed:
		return "connect-failed"
	case Disconnected:
		return "disconnected"
	case Failed:
		return "failed"
	case Accepted:
		return "accepted"
	}
	return fmt.Sprintf("SessionEvent(%d)", uint8(e))
}

// Protocol defaults re-exported for users.
const (
	DefaultCredits     = proto.DefaultCredits
	DefaultWindow      = proto.DefaultWindow
	DefaultRTO         = proto.DefaultRTO
	DefaultMaxMsgSize  = proto.DefaultMaxMsgSize
	DefaultPreRespSize = 1024
	HeaderSize         = proto.HeaderSize
	// DefaultFlushEvery is EndpointConfig.FlushEvery's default: half of a
	// default receive batch, so that a full batch leaves in two sends.
	DefaultFlushEvery = datapath.DefaultBatch / 2
)

// EndpointConfig configures an Endpoint. Zero fields take the defaults.
type EndpointConfig struct {
	// ID is the endpoint id peers name in Connect (unique per Nexus).
	ID uint8
	// Datapath moves the packets. The Endpoint takes it over and closes it
	// in Close. Required.
	Datapath datapath.Endpoint
	// Pool provides reassembly buffers, copies of BytesMsg bodies, object
	// heads and preallocated responses. It must be owned by the endpoint's
	// goroutine (or be Concurrent). Nil: the endpoint makes its own.
	Pool *mem.Pool
	// Protocol constants (eRPC's by default).
	Credits    int
	Window     int
	RTO        time.Duration
	MaxMsgSize int
	MaxBacklog int
	// Selective enables selective retransmission instead of go-back-N.
	Selective bool
	// CC configures congestion control (Timely and a rate limiter, per
	// client session). Enable turns it on for every session and Disable
	// off; neither (the default) is automatic: on for sessions whose peer
	// is across a network, off for peers on this host (loopback or one of
	// its interface addresses) and on datapaths that cannot congest
	// (memnet).
	CC CCConfig
	// PreRespSize is the size of each server slot's preallocated response
	// buffer (default 1024, at most one packet's payload).
	PreRespSize int
	// NoReserve skips what NewEndpoint does by default: growing Pool by
	// one region for each size class a small message uses (ReservedClassMax
	// and below, and PreRespSize's). Without it the first message of each
	// size stalls the loop while the pool commits a region (mmap, mlock,
	// a transparent hugepage: 0.5–12 ms on the machine of
	// docs/PERFORMANCE.md, longer than the 5 ms RTO, so the peer
	// retransmits) instead of NewEndpoint paying once.
	NoReserve bool
	// Batch is the number of packets received per Recv (default 32).
	Batch int
	// FlushEvery is how many messages (requests for handlers, responses
	// for continuations) of one receive batch the loop delivers before it
	// runs their handlers and continuations and flushes what they sent,
	// then goes on with the rest of the batch (default DefaultFlushEvery;
	// negative: one flush per receive batch). With a full batch of small
	// requests the first answers leave while the rest are handled, and
	// the peer works on them in parallel instead of waiting for the whole
	// batch: one more send system call per full batch for 10–20 % more
	// small RPCs per second between two busy endpoints
	// (docs/PERFORMANCE.md §4, session 7). Packets that complete no
	// message (the middle of a large one) do not count: their credit
	// returns gain nothing from an early send.
	FlushEvery int
	// IdleSpin is how long Run keeps busy-polling after its last progress
	// before it sleeps in the datapath's Wait (default 100µs; negative:
	// sleep at once). On dedicated cores longer spins buy latency; on
	// shared cores a spinning endpoint steals CPU from its peers.
	IdleSpin time.Duration
	// AcceptAnySource disables the check that a session's packets come
	// from the address its peer announced (needed behind NAT or when a
	// peer sends from another address than it binds).
	AcceptAnySource bool
	// CopyRequests turns off zero-copy request processing: single-packet
	// requests are copied out of the receive buffer before the handler
	// runs (for factor analysis; eRPC Table 3).
	CopyRequests bool
	// OnSession, if set, is called on the endpoint goroutine for session events.
	OnSession func(s Session, ev SessionEvent, err error)
}

type sessState uint8

const (
	sessConnecting sessState = iota + 1
	sessConnected
	sessDisconnecting
)

type sessInfo struct {
	num         uint16
	client      bool
	state       sessState
	remoteNexus netip.AddrPort
	remoteEp    uint8
	remoteSess  uint16
	token       uint64
	nextSM      int64
	deadline    int64
	monitored   bool
	inCore      bool
	pre         []mem.Buf
	reqs        []*Request // server: the unanswered request of each slot
	pendingSM   bool
}

type tokenKey struct {
	addr  netip.AddrPort
	token uint64
}

type mailKind uint8

const (
	mailSM mailKind = iota + 1
	mailPeerFailed
	mailRespond
	mailFunc
)

type mail struct {
	kind mailKind
	from netip.AddrPort
	sm   smPkt
	req  *Request // mailRespond: the answer is in req (Request.prepare)
	fn   func()
}

type contEntry struct {
	fn   func(*Response)
	used bool
}

// Stats counts what an endpoint did.
type Stats struct {
	Proto    ProtoStats
	Datapath datapath.Stats
	// Handlers is the number of handler invocations (dispatch + worker).
	Handlers uint64
	// Continuations is the number of continuations run.
	Continuations uint64
	// SendErrors counts datapath send and flush errors (the packets
	// count as lost; the protocol retransmits them).
	SendErrors uint64
	// RecvErrors counts datapath receive errors (a full pool, a failed
	// system call): the loop goes on and receives in its next iteration.
	RecvErrors uint64
	// LastDatapathErr is the most recent send, flush or receive error
	// (nil if none): transient errors do not end the event loop, they are
	// counted above and kept here for diagnosis.
	LastDatapathErr error
	// CopiedPackets counts packets whose segments exceeded MaxSegments and were copied.
	CopiedPackets uint64
	// Wakeups counts Run's sleeps in the datapath's Wait that a hand-over
	// (Post, a worker's answer, session management, ctx's cancellation)
	// interrupted through the datapath's Wake.
	Wakeups uint64
}

// Endpoint is the per-goroutine part of the RPC system: its sessions, the
// protocol state and the event loop over one datapath endpoint.
//
// Ownership: an Endpoint belongs to the goroutine that runs its event loop.
// Every method except Post, Stats and (for worker handlers) Request.Respond
// must be called on that goroutine: between RunOnce calls, or from handlers and
// continuations that the loop runs. A call that overlaps the event loop or
// another call from a different goroutine returns ErrConcurrentUse (eRPC
// silently lost such requests, issue #102), also while the loop runs a
// handler or continuation (the endpoint tells the loop's goroutine from
// others by goroutine id); handlers and continuations must not re-enter
// the loop (RunOnce, Run, Call return ErrReentrant).
type Endpoint struct {
	nx      *Nexus
	id      uint8
	dp      datapath.Endpoint
	pool    *mem.Pool
	ownPool bool
	core    *proto.Core
	cfg     EndpointConfig
	maxMsg  int
	dpp     int
	start   time.Time

	// pub is Stats as of the loop's last publication (every
	// statsPublishEvery while it runs, and when Run returns or the
	// endpoint closes): what Stats returns to other goroutines.
	pubMu   sync.Mutex
	pub     Stats
	nextPub int64

	state      atomic.Int32 // 0 idle, 1 busy, 2 closed
	owner      atomic.Int64 // the goroutine id that set state to 1
	inCallback atomic.Int32
	inLoop     bool
	loopNow    int64 // the clock read of the current (or last) runOnce

	rx       []datapath.Packet
	segs     []mem.Buf
	hdr      [proto.HeaderSize]byte
	copyBuf  []byte
	appender packetAppender // the datapath's in-place send, if it has one
	coll     datapath.EntryCollector
	msgFree  []*txMsg
	rxFree   []*rxBuf
	reqFree  []*Request
	resp     Response

	sessions  []*sessInfo
	freeSess  []uint16
	tokens    map[tokenKey]uint16
	smPending []uint16

	conts     freelist.List[contEntry] // by request tag
	atWorkers int                      // requests handed to workers, not answered yet

	// WaitConnected's session and the error of its ConnectFailed event.
	connWaiting bool
	connWaitNum uint16
	connWaitErr error

	mailMu     sync.Mutex
	mailQ      []mail
	mailClosed bool // Close took the mailbox: post fails from then on
	mailSpare  []mail
	hasMail    atomic.Bool
	waker      waker       // the datapath's Wake, if it has one
	sleeping   atomic.Bool // Run is (about to be) in the datapath's Wait

	// Congestion control's automatic mode (EndpointConfig.CC with neither
	// Enable nor Disable) and whether the datapath can congest at all.
	ccAuto, ccUncongested bool

	stats Stats
}

// NewEndpoint creates endpoint cfg.ID of n over cfg.Datapath.
func (n *Nexus) NewEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.Datapath == nil {
		return nil, errors.New("rpc: EndpointConfig.Datapath is required")
	}
	dpp := cfg.Datapath.MaxPayload() - proto.HeaderSize
	if dpp < 64 {
		return nil, fmt.Errorf("rpc: datapath MaxPayload %d too small", cfg.Datapath.MaxPayload())
	}
	if cfg.PreRespSize <= 0 {
		cfg.PreRespSize = DefaultPreRespSize
	}
	if cfg.PreRespSize > dpp {
		cfg.PreRespSize = dpp
	}
	if cfg.Batch <= 0 {
		cfg.Batch = datapath.DefaultBatch
	}
	if cfg.FlushEvery == 0 {
		cfg.FlushEvery = DefaultFlushEvery
	}
	ep := &Endpoint{nx: n, id: cfg.ID, dp: cfg.Datapath, pool: cfg.Pool, cfg: cfg, dpp: dpp,
		start: time.Now(), tokens: map[tokenKey]uint16{}}
	cc := cfg.CC
	if cc.Enable && cc.Disable {
		return nil, errors.New("rpc: CCConfig.Enable and CCConfig.Disable both set")
	}
	// The datapath's delay scales (its own batching delay is not
	// congestion); THigh keeps eRPC's ratio to TLow (1 ms / 50 µs).
	tp := datapath.TimelyParamsOf(cfg.Datapath)
	// Automatic mode: congestion control for sessions across a network.
	// The core has it; sessions to peers on this host, and every session
	// of a datapath that cannot congest, are exempt (sessionNoCC).
	ep.ccAuto = !cc.Enable && !cc.Disable
	ep.ccUncongested = tp.Uncongested
	if ep.ccAuto {
		cc.Enable = true
	}
	if cc.MinRTT == 0 {
		cc.MinRTT = tp.MinRTT
	}
	if cc.LinkRate == 0 {
		cc.LinkRate = tp.LinkRate
	}
	if cc.TLow == 0 && tp.TLow > 0 {
		cc.TLow = tp.TLow
		if cc.THigh == 0 {
			cc.THigh = 20 * tp.TLow
		}
	}
	if cc.NoBatchTimestamps && cc.Clock == nil {
		cc.Clock = ep.now // per-packet clock reads on the endpoint's time base
	}
	core, err := proto.New(proto.Config{Credits: cfg.Credits, Window: cfg.Window, RTO: cfg.RTO,
		DataPerPkt: dpp, MaxMsgSize: cfg.MaxMsgSize, MaxBacklog: cfg.MaxBacklog, Selective: cfg.Selective,
		CC: cc}, (*rxAllocator)(ep))
	if err != nil {
		return nil, err
	}
	ep.core = core
	ep.maxMsg = core.Config().MaxMsgSize
	if ep.pool == nil {
		p, err := mem.NewPool(mem.PoolConfig{Name: fmt.Sprintf("rpc-ep%d", cfg.ID)})
		if err != nil {
			return nil, err
		}
		ep.pool, ep.ownPool = p, true
	}
	if !cfg.NoReserve {
		reserveClasses(ep.pool, InlineMax+1, cfg.PreRespSize) // smaller bodies live inline
	}
	ep.rx = make([]datapath.Packet, cfg.Batch)
	ep.copyBuf = make([]byte, cfg.Datapath.MaxPayload())
	ep.appender, _ = cfg.Datapath.(packetAppender)
	ep.waker, _ = cfg.Datapath.(waker)
	if err := n.addEndpoint(cfg.ID, ep); err != nil {
		if ep.ownPool {
			_ = ep.pool.Close()
		}
		return nil, err
	}
	return ep, nil
}

// ID is the endpoint id.
func (ep *Endpoint) ID() uint8 { return ep.id }

// Nexus is the endpoint's Nexus.
func (ep *Endpoint) Nexus() *Nexus { return ep.nx }

// Pool is the endpoint's message pool.
func (ep *Endpoint) Pool() *mem.Pool { return ep.pool }

// MaxMsgSize is the largest request or response.
func (ep *Endpoint) MaxMsgSize() int { return ep.maxMsg }

// DataPerPacket is the number of message bytes one packet carries.
func (ep *Endpoint) DataPerPacket() int { return ep.dpp }

// rxAllocator is the endpoint as the core's allocator of reassembly
// buffers (proto.Allocator), without putting AllocRx in Endpoint's API.
type rxAllocator Endpoint

// AllocRx implements proto.Allocator.
func (a *rxAllocator) AllocRx(n int) (proto.RxBuf, error) {
	ep := (*Endpoint)(a)
	b, err := ep.pool.Alloc(n)
	if err != nil {
		return nil, err
	}
	var r *rxBuf
	if k := len(ep.rxFree); k > 0 {
		r = ep.rxFree[k-1]
		ep.rxFree = ep.rxFree[:k-1]
	} else {
		r = &rxBuf{ep: ep}
	}
	r.buf = b
	return r, nil
}

// ---- ownership guard ----

// enter marks the endpoint busy. Calls from handlers and continuations
// (the loop is running a callback, on its own goroutine) are nested and
// allowed; the same calls from any other goroutine meanwhile are
// concurrent use.
func (ep *Endpoint) enter() (nested bool, err error) {
	// Calls from a handler or continuation (the common case on the hot
	// path: a continuation enqueues the next request) take three loads,
	// the goroutine id's included, and no compare-and-swap.
	if ep.inCallback.Load() > 0 && ep.state.Load() == 1 {
		if goid.Get() == ep.owner.Load() {
			return true, nil
		}
		return false, ErrConcurrentUse
	}
	if ep.state.CompareAndSwap(0, 1) {
		// Read only while state is 1 and a callback runs, which this
		// goroutine starts after the store: never a previous holder's.
		// Stored only when it changes (a loop driven by RunOnce enters
		// once per iteration, always from the same goroutine): an atomic
		// store is an exchange on amd64.
		if id := goid.Get(); ep.owner.Load() != id {
			ep.owner.Store(id)
		}
		return false, nil
	}
	switch ep.state.Load() {
	case 2:
		return false, ErrClosed
	case 1:
		if ep.inCallback.Load() > 0 && goid.Get() == ep.owner.Load() {
			return true, nil
		}
	}
	return false, ErrConcurrentUse
}

// reentry is the error of an entry into the event loop (RunOnce, Run,
// Call, Close) while it runs a callback: ErrReentrant from the callback
// itself, ErrConcurrentUse from another goroutine; nil otherwise.
func (ep *Endpoint) reentry() error {
	if ep.inCallback.Load() > 0 && ep.state.Load() == 1 {
		if goid.Get() == ep.owner.Load() {
			return ErrReentrant
		}
		return ErrConcurrentUse
	}
	return nil
}

// enterLoop is enter for the calls that run the event loop (RunOnce, Run,
// Call, WaitConnected, Close): from a handler or continuation they are
// ErrReentrant, not nested.
func (ep *Endpoint) enterLoop() (nested bool, err error) {
	if err := ep.reentry(); err != nil {
		return false, err
	}
	return ep.enter()
}

func (ep *Endpoint) exit(nested bool) {
	if !nested {
		ep.state.CompareAndSwap(1, 0)
	}
}

func (ep *Endpoint) callback(fn func()) {
	ep.inCallback.Add(1)
	defer ep.inCallback.Add(-1)
	fn()
}

// Post runs fn on the endpoint goroutine during a later RunOnce. It is safe
// from any goroutine: the way for worker handlers and other goroutines to
// hand work (for example nested RPCs) to the endpoint.
func (ep *Endpoint) Post(fn func()) error {
	if ep.state.Load() == 2 {
		return ErrClosed
	}
	if !ep.post(mail{kind: mailFunc, fn: fn}) {
		return ErrClosed
	}
	return nil
}

// post queues m for the loop; false once Close has taken the mailbox (m
// would never be delivered).
func (ep *Endpoint) post(m mail) bool {
	ep.mailMu.Lock()
	if ep.mailClosed {
		ep.mailMu.Unlock()
		return false
	}
	ep.mailQ = append(ep.mailQ, m)
	ep.hasMail.Store(true)
	ep.mailMu.Unlock()
	ep.wakeUp()
	return true
}

// waker is the optional datapath method that makes a Wait in progress (or
// the next one) return, callable from any goroutine (udp: an eventfd in
// its poll set; memnet: its notification channel). With it an idle Run
// sleeps until its next timer instead of polling the mailbox.
type waker interface {
	Wake() error
}

// maxIdleWait bounds one sleep of Run on a datapath with Wake: a safety
// net only (every hand-over wakes the loop, and timers bound the sleep).
const maxIdleWait = 100 * time.Millisecond

// Without Wake, Run polls the mailbox: it sleeps at most pollIdleWait, and
// pollWorkerWait while worker handlers may answer.
const (
	pollIdleWait   = 500 * time.Microsecond
	pollWorkerWait = 20 * time.Microsecond
)

// wakeUp interrupts Run's sleep after a hand-over. No wake-up is lost:
// the poster stores hasMail (or the context's cancellation) before it
// loads sleeping, and Run stores sleeping before it loads hasMail (and
// ctx.Err) and sleeps, so one of the two sees the other.
func (ep *Endpoint) wakeUp() {
	if ep.waker != nil && ep.sleeping.CompareAndSwap(true, false) {
		_ = ep.waker.Wake() // ErrClosed: nobody is left to wake
	}
}

// ---- event loop ----

func (ep *Endpoint) now() int64 { return int64(time.Since(ep.start)) }

// RunOnce runs one iteration of the event loop: session management and
// handed-over work, timers (loss detection, rate limiter), one receive batch,
// handlers and continuations, and a transmit flush. Like Run, it returns
// datapath errors only once the datapath is closed (Stats counts the others).
func (ep *Endpoint) RunOnce() error {
	nested, err := ep.enterLoop()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	_, err = ep.runOnce()
	return err
}

// Run runs the event loop until ctx is done, sleeping in the datapath's
// Wait when idle. It returns ctx.Err(), or the datapath's error once it is
// closed; transient datapath errors are counted in Stats and the loop goes
// on.
//
// On a datapath with Wake (udp, memnet) an idle Run sleeps until its next
// timer (loss scan with requests in flight, rate limiter, session
// handshakes; at most 100 ms): packets, Post, worker answers, session
// management and ctx's cancellation wake it. Otherwise it sleeps at most
// 500 µs (20 µs while worker handlers run) and polls its mailbox.
func (ep *Endpoint) Run(ctx context.Context) error {
	nested, err := ep.enterLoop()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	defer ep.publishStats() // the final counts, for other goroutines
	spin := ep.cfg.IdleSpin
	if spin == 0 {
		spin = 100 * time.Microsecond
	}
	if ep.waker != nil {
		stop := context.AfterFunc(ctx, ep.wakeUp)
		defer stop()
	}
	lastProgress := ep.now()
	for i := 0; ; i++ {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		progress, err := ep.runOnce()
		if err != nil {
			return err
		}
		now := ep.loopNow // one clock read per iteration
		if progress {
			lastProgress = now
			continue
		}
		if now-lastProgress <= int64(spin) {
			continue
		}
		wait := time.Duration(ep.core.NextDeadline() - now)
		if len(ep.smPending) > 0 {
			wait = min(wait, time.Duration(ep.smDeadline()-now))
		}
		switch {
		case ep.waker != nil:
			wait = min(wait, maxIdleWait)
		case ep.atWorkers > 0:
			// Worker answers arrive through the mailbox, which does not
			// wake this datapath's Wait: poll it often.
			wait = min(wait, pollWorkerWait)
		default:
			wait = min(wait, pollIdleWait)
		}
		if wait <= 0 {
			continue
		}
		if ep.waker == nil {
			if err := ep.dp.Wait(wait); err != nil {
				return err
			}
			continue
		}
		ep.sleeping.Store(true)
		if ep.hasMail.Load() || ctx.Err() != nil {
			ep.sleeping.Store(false)
			i = -1 // check ctx at once
			continue
		}
		err = ep.dp.Wait(wait)
		if !ep.sleeping.Swap(false) {
			ep.stats.Wakeups++ // a poster cleared it and called Wake
		}
		if err != nil {
			return err
		}
		i = -1 // a wake-up may be ctx's cancellation: check it at once
	}
}

// smDeadline is the earliest retransmission or deadline of a pending
// session handshake.
func (ep *Endpoint) smDeadline() int64 {
	d := int64(math.MaxInt64)
	for _, num := range ep.smPending {
		if si := ep.session(num); si != nil && si.pendingSM {
			d = min(d, si.nextSM, si.deadline)
		}
	}
	return d
}

func (ep *Endpoint) runOnce() (progress bool, err error) {
	ep.inLoop = true
	defer func() { ep.inLoop = false }()
	now := ep.now()
	ep.loopNow = now
	if now >= ep.nextPub {
		ep.publishStats()
		ep.nextPub = now + int64(statsPublishEvery)
	}
	if ep.hasMail.Load() {
		ep.drainMail()
		progress = true
	}
	if len(ep.smPending) > 0 {
		ep.smTimers(now)
	}
	// Receive before the timers run (Core.Observe): after a stall longer
	// than the RTO the responses already queued complete their requests
	// instead of being preceded by a spurious rollback and retransmission.
	ep.core.Observe(now)
	if ep.core.HasReady() {
		progress = true
		ep.process()
	}
	// Recv may return packets and an error together: the packets are
	// served (and released) first.
	n, rerr := ep.dp.Recv(ep.rx)
	if n > 0 {
		progress = true
		// The batch's buffers stay in ep.rx until its handlers and
		// continuations ran (borrowed data, Retain by rxID).
		rx := ep.rx[:n]
		for i := range rx {
			if ep.cfg.AcceptAnySource {
				ep.core.Step(rx[i].Buf.Bytes(), i)
			} else {
				ep.core.StepFrom(unmap(rx[i].From), rx[i].Buf.Bytes(), i)
			}
			if ep.cfg.FlushEvery > 0 && ep.core.Events() >= ep.cfg.FlushEvery && i+1 < n {
				// Handle the messages delivered so far and send their
				// answers while the rest of the batch waits
				// (EndpointConfig.FlushEvery).
				ep.process()
				_ = ep.flush() // counted in Stats; the final flush reports a closed datapath
			}
		}
		ep.process()
		for i := range rx {
			_ = rx[i].Buf.Release()
			rx[i] = datapath.Packet{}
		}
	}
	ep.core.Tick(now)
	if ep.core.HasReady() {
		progress = true
		ep.process()
	}
	if rerr != nil {
		ep.stats.RecvErrors++
		if err := ep.datapathErr(rerr); err != nil {
			return progress, err
		}
	}
	return progress, ep.flush()
}

// flush sends what the datapath queued; see datapathErr for its error.
func (ep *Endpoint) flush() error {
	if err := ep.dp.Flush(); err != nil {
		ep.stats.SendErrors++
		return ep.datapathErr(err)
	}
	return nil
}

// datapathErr keeps a datapath error for Stats and returns it if it ends
// the event loop: only a closed datapath does. Everything else is
// transient for the protocol: a send that failed (a full socket buffer, an
// unreachable peer) is a lost packet that it retransmits, a receive that
// failed (no free buffer in the pool) is retried by the next iteration.
// Ending the loop instead would take every session of the endpoint down
// for one peer's or one moment's trouble.
func (ep *Endpoint) datapathErr(err error) error {
	ep.stats.LastDatapathErr = err
	if errors.Is(err, datapath.ErrClosed) {
		return err
	}
	return nil
}

// process sends the core's packets and handles its events until quiet.
func (ep *Endpoint) process() {
	for i := 0; i < 1000 && ep.core.HasReady(); i++ {
		rd := ep.core.Ready()
		for j := range rd.Packets {
			ep.sendPkt(&rd.Packets[j])
		}
		if len(rd.Events) > 0 {
			ep.handleEvents(rd.Events)
		}
		ep.core.Advance(rd)
	}
}

// handleEvents runs the handlers and continuations of evs as one callback
// section (one pair of atomic updates per batch instead of per event).
func (ep *Endpoint) handleEvents(evs []proto.Event) {
	ep.inCallback.Add(1)
	defer ep.inCallback.Add(-1)
	for j := range evs {
		ep.handleEvent(&evs[j])
	}
}

// ReservedClassMax is the largest pool size class NewEndpoint reserves a
// region of (EndpointConfig.NoReserve): bodies copied into the pool
// (BytesMsg above InlineMax, object heads) and reassembly buffers up to it
// find their memory committed.
const ReservedClassMax = 16 << 10

// reserveClasses grows p by one region (2 MiB) per size class from the
// one of from to ReservedClassMax, and for extra's class: best effort (a
// pool with a lower MaxClass or MaxBytes keeps what fits).
func reserveClasses(p *mem.Pool, from, extra int) {
	size := 1
	for size < from {
		size *= 2
	}
	for ; size <= min(ReservedClassMax, p.MaxSize()); size *= 2 {
		_ = p.Reserve(size, 1)
	}
	if extra > 0 {
		_ = p.Reserve(extra, 1)
	}
}

// SmallCopyMax is the largest data payload of one packet that sendPkt
// copies next to the header instead of sending it as zero-copy
// scatter-gather entries: below it a copy costs less than a clone, a
// completion and a release (Cornflakes' hybrid rule; BenchmarkSmallRPC).
const SmallCopyMax = 256

// packetAppender is the optional in-place send of a datapath (udp's
// AppendPacket): it queues a packet of n bytes and returns its payload to
// fill before the next call on the datapath.
type packetAppender interface {
	AppendPacket(dst netip.AddrPort, n int) ([]byte, error)
}

func (ep *Endpoint) sendPkt(p *proto.OutPacket) {
	var err error
	if p.Msg != nil && p.Len <= SmallCopyMax {
		// A small packet costs less to copy than to clone, track and
		// release as scatter-gather entries (Cornflakes copies small
		// fields likewise): header and data go straight into one buffer.
		if ep.appender != nil {
			// Straight into the datapath's TX buffer (no staging copy).
			var b []byte
			if b, err = ep.appender.AppendPacket(p.Peer, proto.HeaderSize+p.Len); err == nil {
				if err = p.Hdr.Encode(b); err == nil && copyData(b[proto.HeaderSize:], p) != p.Len {
					err = ErrBadMessage // cannot happen: the core names ranges inside m
				}
				if err != nil {
					// The packet is already queued: zeroed, its magic is
					// wrong and the peer drops it.
					clear(b)
				}
			}
		} else {
			b := ep.copyBuf[:proto.HeaderSize+p.Len]
			if err = p.Hdr.Encode(b); err == nil {
				if copyData(b[proto.HeaderSize:], p) == p.Len {
					err = ep.dp.Send(p.Peer, b)
				} else {
					err = ErrBadMessage // cannot happen: the core names ranges inside m
				}
			}
		}
		if err != nil {
			ep.stats.SendErrors++ // a lost packet: the protocol recovers
		}
		return
	}
	if err := p.Hdr.Encode(ep.hdr[:]); err != nil {
		ep.stats.SendErrors++
		return
	}
	if p.Msg == nil {
		err = ep.dp.Send(p.Peer, ep.hdr[:])
	} else {
		m := p.Msg.(*txMsg)
		segs := m.window(ep.segs[:0], p.Off, p.Len)
		if len(segs) <= ep.dp.MaxSegments()-1 {
			err = ep.dp.SendSegments(p.Peer, ep.hdr[:], segs)
		} else {
			// More pieces than scatter-gather entries: copy this packet.
			ep.stats.CopiedPackets++
			b := ep.copyBuf[:proto.HeaderSize+p.Len]
			copy(b, ep.hdr[:])
			o := proto.HeaderSize
			for _, s := range segs {
				o += copy(b[o:], s.Bytes())
			}
			err = ep.dp.Send(p.Peer, b)
		}
		for i := range segs {
			segs[i] = mem.Buf{}
		}
		ep.segs = segs[:0]
	}
	if err != nil {
		ep.stats.SendErrors++ // a lost packet: the protocol recovers
	}
}

// copyData copies the data of p to dst and returns the bytes copied. Its
// message is ours, or the core's copy of a small response in its slot
// (proto.SlotInline).
func copyData(dst []byte, p *proto.OutPacket) int {
	if m, ok := p.Msg.(*txMsg); ok {
		return m.copyRange(dst, p.Off)
	}
	return copy(dst, p.Msg.Flat()[p.Off:p.Off+p.Len])
}

// The core's slot copies (proto.SlotInline) must take sendPkt's copying
// path, the only one that accepts messages other than txMsg.
var _ [SmallCopyMax - proto.SlotInline]struct{}

func (ep *Endpoint) handleEvent(e *proto.Event) {
	switch e.Kind {
	case proto.EvRequest:
		ep.handleRequest(e)
	case proto.EvResponse:
		ep.handleResponse(e)
	}
}

// ---- server side ----

func (ep *Endpoint) newRequest() *Request {
	if k := len(ep.reqFree); k > 0 {
		r := ep.reqFree[k-1]
		ep.reqFree = ep.reqFree[:k-1]
		return r
	}
	return &Request{ep: ep}
}

func (ep *Endpoint) freeRequest(r *Request) {
	if r.tracked {
		r.tracked = false
		if si := ep.session(r.h.Session); si != nil && si.reqs != nil && si.reqs[r.h.Slot] == r {
			si.reqs[r.h.Slot] = nil
		}
	}
	if !r.buf.IsZero() {
		_ = r.buf.Release()
		r.buf = mem.Buf{}
	}
	if r.mode == Worker {
		// The worker goroutine may still read r (after posting its
		// answer); worker requests are not recycled.
		return
	}
	*r = Request{ep: ep}
	ep.reqFree = append(ep.reqFree, r)
}

// finish ends r after it was answered (or the answer failed).
func (ep *Endpoint) finish(r *Request) {
	if r.inHandler {
		r.done = true // handleRequest frees it when the handler returns
		return
	}
	ep.freeRequest(r)
}

func (ep *Endpoint) handleRequest(e *proto.Event) {
	h := ep.nx.handlers[e.ReqType].Load()
	if h == nil {
		_ = ep.core.RespondStatus(e.Handle, proto.StatusNoHandler)
		if e.Buf != nil {
			e.Buf.Release()
		}
		return
	}
	r := ep.newRequest()
	r.h, r.reqType, r.mode = e.Handle, e.ReqType, h.mode
	r.fn = h.fn
	if e.Buf != nil {
		r.buf = e.Buf.(*rxBuf).take()
		r.data = r.buf.Bytes()
	} else if ep.cfg.CopyRequests && len(e.Data) > 0 && h.mode == Dispatch { // toWorker copies worker requests anyway
		b, err := ep.pool.Alloc(len(e.Data))
		if err != nil {
			_ = ep.core.RespondStatus(e.Handle, proto.StatusRejected)
			ep.freeRequest(r)
			return
		}
		copy(b.Bytes(), e.Data)
		r.buf, r.data = b, b.Bytes()
	} else {
		r.data = e.Data
		r.rxID = e.RxID
		r.borrowed = true
	}
	ep.stats.Handlers++
	if h.mode == Worker {
		ep.toWorker(r)
		return
	}
	r.inHandler = true
	r.fn(r) // inside handleEvents' callback section
	r.inHandler = false
	if r.done {
		ep.freeRequest(r)
		return
	}
	r.own() // answered later: keep the request bytes alive until then
	ep.track(r)
	_ = ep.core.Ack(r.h) // and acknowledge it now (Core.Ack)
}

// toWorker hands r to the Nexus's workers. Its bytes are copied into the
// Nexus's concurrent pool first (eRPC copies background requests too): a
// worker may decode them, which takes references, while this goroutine
// goes on using its own single-goroutine pools, and they stay the
// worker's until it answers, even if the session goes away meanwhile.
func (ep *Endpoint) toWorker(r *Request) {
	var wb mem.Buf
	if len(r.data) > 0 {
		var err error
		if wb, err = ep.nx.workPool.Alloc(len(r.data)); err != nil {
			_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
			ep.freeRequest(r)
			return
		}
		copy(wb.Bytes(), r.data)
	}
	if !r.buf.IsZero() {
		_ = r.buf.Release()
		r.buf = mem.Buf{}
	}
	r.borrowed = false
	r.wbuf, r.data = wb, wb.Bytes()
	ep.track(r)
	select {
	case ep.nx.work <- r:
		ep.atWorkers++
		_ = ep.core.Ack(r.h) // the response waits for a worker: acknowledge the request now (Core.Ack)
	default:
		_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
		r.releaseWorkerBufs()
		ep.freeRequest(r)
	}
}

// track records an unanswered request in its session (which fails it if
// the session goes away first). Requests answered during their dispatch
// handler, the common case, are never recorded: one cold cache line less
// per request with many sessions.
func (ep *Endpoint) track(r *Request) {
	si := ep.session(r.h.Session)
	if si == nil {
		return
	}
	if si.reqs == nil {
		si.reqs = make([]*Request, ep.core.Config().Window)
	}
	si.reqs[r.h.Slot] = r
	r.tracked = true
}

// preResp returns the preallocated response buffer of the slot h names,
// replacing it if a previous response still uses it.
func (ep *Endpoint) preResp(h proto.ReqHandle) []byte {
	si := ep.session(h.Session)
	if si == nil {
		return nil
	}
	if si.pre == nil {
		si.pre = make([]mem.Buf, ep.core.Config().Window)
	}
	b := &si.pre[h.Slot]
	if !b.IsZero() && b.Refs() > 1 {
		_ = b.Release() // still referenced by an unfinished send: let it go
		*b = mem.Buf{}
	}
	if b.IsZero() {
		nb, err := ep.pool.Alloc(ep.cfg.PreRespSize)
		if err != nil {
			return nil
		}
		*b = nb
	}
	return b.Bytes()
}

// respond answers r with m on the endpoint goroutine; m is always consumed.
func (ep *Endpoint) respond(r *Request, m Msg, pre int) error {
	if r.dead {
		m.release()
		return ErrAlreadyResponded
	}
	var tx *txMsg
	if pre >= 0 {
		si := ep.session(r.h.Session)
		if si == nil || int(r.h.Slot) >= len(si.pre) {
			ep.finish(r)
			return ErrAlreadyResponded
		}
		b := &si.pre[r.h.Slot]
		if b.IsZero() || pre > b.Len() {
			ep.finish(r)
			return ErrAlreadyResponded
		}
		// Move the slot's buffer into the message (txMsg.home): the
		// core's copy of the response keeps it until it is buried.
		tx = ep.newTxMsgPre(si, int(r.h.Slot), *b, pre)
		*b = mem.Buf{}
	} else {
		var err error
		if tx, err = ep.newTxMsg(m); err != nil {
			m.release()
			_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
			ep.finish(r)
			return err
		}
	}
	return ep.respondTx(r, tx)
}

// respondTx saves tx as r's response and sends it (tx is consumed), and
// ends r.
func (ep *Endpoint) respondTx(r *Request, tx *txMsg) error {
	err := ep.core.Respond(r.h, tx)
	if err != nil {
		tx.Release()
	}
	ep.finish(r)
	if err != nil {
		return mapCoreErr(err)
	}
	if !ep.inLoop {
		ep.process()
		_ = ep.flush()
	}
	return nil
}

// respondPrepared sends the answer a worker prepared for r (Request.prepare),
// or rejects r when it could not be prepared.
func (ep *Endpoint) respondPrepared(r *Request) {
	if r.dead {
		r.releaseAnswer()
		return
	}
	if r.wreject {
		_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
		ep.finish(r)
		return
	}
	tx := ep.getTxMsg()
	tx.segs = append(tx.segs, r.wsegs...)
	if len(r.wsegs) == 1 {
		tx.flat = r.wsegs[0].Bytes()
	}
	tx.total = r.wtotal
	clear(r.wsegs) // the references are tx's now
	r.wsegs = nil
	_ = ep.respondTx(r, tx) // a failure has no one to report to: the worker returned
}

// sessionNoCC reports whether a client session to peer is exempt from
// congestion control: in automatic mode, when no network lies between (a
// peer on this host, or a datapath that cannot congest), where Timely would
// measure only the hosts' scheduling (a descheduled peer reads as a
// congested link, see docs/RPC.md).
func (ep *Endpoint) sessionNoCC(peer netip.AddrPort) bool {
	if !ep.ccAuto {
		return false
	}
	a := peer.Addr().Unmap()
	if ep.ccUncongested || a.IsLoopback() {
		return true
	}
	_, local := datapath.InterfaceOf(a) // an address of this host: packets to it never leave it
	return local
}

// ---- client side ----

// Enqueue sends a request of type reqType on session s; cont runs on the
// endpoint goroutine when the response arrives or the request fails
// (Response.Err). req is consumed in every case (released on error).
// With all of the session's slots busy, the request waits in a backlog.
func (ep *Endpoint) Enqueue(s Session, reqType uint8, req Msg, cont func(*Response)) error {
	_, err := ep.enqueue(s, reqType, req, cont)
	return err
}

func (ep *Endpoint) enqueue(s Session, reqType uint8, req Msg, cont func(*Response)) (uint64, error) {
	nested, err := ep.enter()
	if err != nil {
		req.release()
		return 0, err
	}
	defer ep.exit(nested)
	return ep.enqueueLocked(s, reqType, req, cont)
}

func (ep *Endpoint) enqueueLocked(s Session, reqType uint8, req Msg, cont func(*Response)) (uint64, error) {
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		req.release()
		return 0, ErrNoSession
	}
	if si.state != sessConnected {
		req.release()
		return 0, ErrNotConnected
	}
	tx, err := ep.newTxMsg(req)
	if err != nil {
		req.release()
		return 0, err
	}
	tag := uint64(ep.conts.Add(contEntry{fn: cont, used: true}))
	if !ep.inLoop {
		// The core's clock advances only in the loop, and an idle client
		// may not have run it for milliseconds: without this, the new
		// request's send time (its loss-detection reference) would be
		// stale and the next loss scan would retransmit it spuriously
		// (an RTO rollback with go-back-N costs the client an extra
		// round trip and the server a duplicate response). Observe, not
		// Tick: the loss scan waits until the loop has received what
		// arrived meanwhile.
		ep.core.Observe(ep.now())
	}
	if err := ep.core.Enqueue(uint16(s), reqType, tx, tag); err != nil {
		tx.Release()
		ep.conts.Take(int32(tag))
		return 0, mapCoreErr(err)
	}
	if !ep.inLoop {
		ep.process()
		_ = ep.flush()
	}
	return tag, nil
}

func (ep *Endpoint) handleResponse(e *proto.Event) {
	if e.Tag >= uint64(ep.conts.Len()) || !ep.conts.At(int32(e.Tag)).used {
		if e.Buf != nil {
			e.Buf.Release()
		}
		return
	}
	fn := ep.conts.Take(int32(e.Tag)).fn
	r := &ep.resp
	*r = Response{ep: ep}
	switch {
	case e.Err != nil:
		r.Err = mapCoreErr(e.Err)
		if errors.Is(e.Err, proto.ErrNoMemory) {
			r.Err = fmt.Errorf("rpc: response reassembly: %w", e.Err)
		}
	case e.Status == proto.StatusNoHandler:
		r.Err = ErrNoHandler
	case e.Status != proto.StatusOK:
		r.Err = ErrRejected
	}
	if e.Buf != nil {
		r.buf = e.Buf.(*rxBuf).take()
		r.data = r.buf.Bytes()
	} else if r.Err == nil {
		r.data = e.Data
		r.rxID = e.RxID
		r.borrowed = true
	}
	ep.stats.Continuations++
	if fn != nil {
		fn(r) // inside handleEvents' callback section
	}
	if !r.buf.IsZero() {
		_ = r.buf.Release()
	}
	*r = Response{}
}

// Call sends a request and runs the event loop until its response arrives,
// ctx is done (the request is cancelled: late packets are dropped and the
// server may still run it once) or the request fails. The returned buffer
// holds the response (zero Buf for an empty response); the caller must
// Release it. req is consumed. Call must not be used from handlers or
// continuations (ErrReentrant): use Enqueue there.
func (ep *Endpoint) Call(ctx context.Context, s Session, reqType uint8, req Msg) (mem.Buf, error) {
	nested, err := ep.enterLoop()
	if err != nil {
		req.release()
		return mem.Buf{}, err
	}
	defer ep.exit(nested)
	if err := ctx.Err(); err != nil {
		req.release()
		return mem.Buf{}, err
	}
	var (
		done bool
		out  mem.Buf
		cerr error
	)
	tag, err := ep.enqueueLocked(s, reqType, req, func(r *Response) {
		done = true
		if cerr = r.Err; cerr == nil {
			out = r.Retain()
		}
	})
	if err != nil {
		return mem.Buf{}, err
	}
	dctx := ctx.Done()
	for !done {
		select {
		case <-dctx:
			ep.core.Cancel(uint16(s), tag, ctx.Err())
			ep.process()
			return mem.Buf{}, ctx.Err()
		default:
		}
		if _, err := ep.runOnce(); err != nil {
			ep.core.Cancel(uint16(s), tag, err)
			ep.process()
			return mem.Buf{}, err
		}
	}
	return out, cerr
}

// ---- sessions ----

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
	ep.nx.sendSM(si.remoteNexus, &smPkt{typ: smConnectReq, token: si.token, clientEp: ep.id, serverEp: si.remoteEp,
		clientSess: si.num, dataAddr: ep.dp.LocalAddr()})
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
			ep.handleSM(m.from, &m.sm)
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

func (ep *Endpoint) handleSM(from netip.AddrPort, p *smPkt) {
	p.dataAddr = unmap(p.dataAddr)
	if a := p.dataAddr.Addr(); !a.IsValid() || a.IsUnspecified() {
		// The peer's datapath is bound to a wildcard address: reach it at
		// the address its control packet came from.
		p.dataAddr = netip.AddrPortFrom(from.Addr(), p.dataAddr.Port())
	}
	switch p.typ {
	case smConnectReq:
		key := tokenKey{from, p.token}
		if num, ok := ep.tokens[key]; ok {
			ep.replyConnect(from, p, num, smOK)
			return
		}
		si, ok := ep.newSession()
		if !ok {
			ep.replyConnect(from, p, 0, smErrNoSessions)
			return
		}
		si.state = sessConnected
		si.remoteNexus, si.remoteEp, si.remoteSess, si.token = from, p.clientEp, p.clientSess, p.token
		if err := ep.core.AddSession(proto.SessionConfig{Num: si.num, Remote: p.clientSess, Peer: p.dataAddr}); err != nil {
			ep.freeSession(si, nil)
			ep.replyConnect(from, p, 0, smErrNoSessions)
			return
		}
		si.inCore = true
		ep.tokens[key] = si.num
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
			if p.err == smErrNoEndpoint {
				err = fmt.Errorf("%w: %w", ErrConnectFailed, ErrInvalidEndpointID)
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

// statsPublishEvery is how often a running event loop publishes its
// counters for Stats calls from other goroutines.
const statsPublishEvery = time.Millisecond

// Stats returns the endpoint's counters. On the endpoint's goroutine they
// are current. Any other goroutine (a metrics exporter) gets them as the
// event loop last published them: at most statsPublishEvery (1 ms) old
// while the loop runs, final once Run has returned or the endpoint is
// closed; zero before the loop first ran. It never takes the endpoint, so
// it cannot make the loop's own calls fail with ErrConcurrentUse.
func (ep *Endpoint) Stats() Stats {
	if ep.state.Load() != 2 && ep.owner.Load() == goid.Get() {
		return ep.statsNow()
	}
	ep.pubMu.Lock()
	defer ep.pubMu.Unlock()
	return ep.pub
}

func (ep *Endpoint) statsNow() Stats {
	s := ep.stats
	s.Proto = ep.core.Stats()
	s.Datapath = ep.dp.Stats()
	return s
}

// publishStats copies the counters for other goroutines' Stats.
func (ep *Endpoint) publishStats() {
	s := ep.statsNow()
	ep.pubMu.Lock()
	ep.pub = s
	ep.pubMu.Unlock()
}

// Close fails every pending request (ErrClosed), tells servers of client
// sessions (best effort), closes the datapath endpoint and releases every
// buffer. Requests handed to workers that answer later are dropped.
func (ep *Endpoint) Close() error {
	_, err := ep.enterLoop() // held until state 2 below: Close never exits
	if err != nil {
		return err
	}
	ep.nx.removeEndpoint(ep.id, ep)
	for _, si := range ep.sessions {
		if si == nil {
			continue
		}
		if si.client && si.state == sessConnected {
			ep.sendDisconnect(si, ep.now())
		}
		ep.freeSession(si, ErrClosed)
		ep.process()
	}
	// Answers handed over by workers: release their messages.
	ep.mailMu.Lock()
	q := ep.mailQ
	ep.mailQ, ep.mailClosed = nil, true
	ep.mailMu.Unlock()
	for i := range q {
		if q[i].kind == mailRespond {
			q[i].req.releaseAnswer()
			ep.freeRequest(q[i].req)
		}
	}
	ep.process()
	for i := range ep.rx {
		if !ep.rx[i].Buf.IsZero() {
			_ = ep.rx[i].Buf.Release()
			ep.rx[i] = datapath.Packet{}
		}
	}
	ep.publishStats() // the final counts, for Stats after Close
	err = ep.dp.Close()
	ep.coll.Release()
	ep.state.Store(2)
	if ep.ownPool {
		if perr := ep.pool.Close(); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

func unmap(a netip.AddrPort) netip.AddrPort {
	if a.Addr().Is4In6() {
		return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	}
	return a
}
