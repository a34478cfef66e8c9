package rpc

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petermattis/goid"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
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
	// a transparent hugepage; it can take longer than the RTO, so the peer
	// retransmits) instead of NewEndpoint paying once (docs/RPC-NOTES.md,
	// "Moved from godoc").
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
	// batch, at the cost of one more send system call per full batch
	// (measurements: docs/RPC-NOTES.md, "Moved from godoc"). Packets that
	// complete no message (the middle of a large one) do not count: their
	// credit returns gain nothing from an early send.
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
	// ContiguousRecv receives with the datapath's Recv even when it can
	// hand packets over in place (datapath.SegmentReceiver: datapath/shm).
	// By default, once the endpoint has connected a client session (only
	// responses can be delivered in place), such a datapath's
	// single-packet responses whose payload lies partly in the sender's
	// memory are delivered in place (Response.Segments); every other
	// packet is gathered into one buffer as Recv would. An endpoint that
	// only serves keeps Recv: requests are always parsed contiguously.
	ContiguousRecv bool
	// OnSession, if set, is called on the endpoint goroutine for session events.
	OnSession func(s Session, ev SessionEvent, err error)

	// Reassembly budgets of a server (docs/SECURITY.md). A multi-packet
	// request's buffer starts at 8 packets and doubles as its packets
	// arrive, so a peer holds memory in proportion to what it sent, not to
	// the size it claims. ReasmBudget bounds the bytes all sessions hold
	// for requests still being received (default 512 MiB; negative: no
	// limit), ReasmSessionBudget those of one session (default
	// Window*MaxMsgSize; negative: no limit). A request that would exceed a
	// budget is refused: its client gets ErrOverBudget, the handler does
	// not run, and Stats.Proto.ReasmRefused counts it. ReasmTimeout
	// (default 5s) reclaims a request that got no packet for that long
	// (Stats.Proto.ReasmTimeouts).
	ReasmBudget        int64
	ReasmSessionBudget int64
	ReasmTimeout       time.Duration

	// Session limits of a server (docs/SECURITY.md). MaxSessions bounds
	// the server sessions of the endpoint (default DefaultMaxSessions),
	// MaxSessionsPerPeer those of one peer address: an IPv4 address or
	// an IPv6 /64, whatever the ports (every Nexus on one host shares it;
	// default DefaultMaxSessionsPerPeer). At a limit, a new session
	// evicts the oldest session that never carried a request, or else
	// the oldest idle one (no packet for IdleEvict, default 10s); when
	// there is none, the connect is refused. Evicted sessions are counted
	// (Stats.SessionsEvicted) and their clients told (their session
	// fails with ErrEvicted).
	MaxSessions        int
	MaxSessionsPerPeer int
	IdleEvict          time.Duration

	// PoolIdle is how long a region of Pool must go unused before the
	// loop returns its memory to the OS (mem.Pool.Trim, checked every
	// second; default DefaultPoolIdle; negative: never), so that the
	// process shrinks after a burst of large messages.
	PoolIdle time.Duration
}

// DefaultPoolIdle is EndpointConfig.PoolIdle's default.
const DefaultPoolIdle = 5 * time.Second

// trimEvery is how often the loop trims its pool.
const trimEvery = time.Second

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
	counted     bool             // server: in the session limits' books (endpoint_admit.go)
	cookie      [cookieSize]byte // client: the server's latest challenge
	key         string           // server: the credential the client authenticated with
	role        uint8            // server: that credential's role
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
	key  string // mailSM connect requests: the credential that authenticated it
	role uint8
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
	// Deferred counts packets the datapath refused for want of room
	// (a busy peer: shm's ErrBusy) that the endpoint kept and sent on a
	// later loop turn, in order, instead of losing them.
	Deferred uint64
	// RecvErrors counts datapath receive errors (a full pool, a failed
	// system call): the loop goes on and receives in its next iteration.
	RecvErrors uint64
	// LastDatapathErr is the most recent send, flush or receive error
	// (nil if none): transient errors do not end the event loop, they are
	// counted above and kept here for diagnosis.
	LastDatapathErr error
	// On a datapath that hands packets over in place (ContiguousRecv):
	// RxInPlace counts responses delivered in place (Response.Segments),
	// RxInPlaceGathered those of them whose continuation asked for Data
	// (gathered then), and RxGathered the packets with segments of the
	// sender's memory gathered at once (requests, parts of large
	// messages).
	RxInPlace, RxInPlaceGathered, RxGathered uint64
	// CopiedPackets counts packets whose segments exceeded MaxSegments and were copied.
	CopiedPackets uint64
	// SessionsAccepted counts server sessions created; SessionsRefused
	// connect requests refused at the session limits (no session to
	// evict) or for want of session numbers; SessionsEvicted sessions
	// dropped to make room (EndpointConfig.MaxSessions,
	// MaxSessionsPerPeer). Handshakes refused before they reach the
	// endpoint (cookie, rate limit, credential) are Nexus.Stats's.
	SessionsAccepted, SessionsRefused, SessionsEvicted uint64
	// ServerSessions is the number of server sessions now.
	ServerSessions int
	// PoolTrimmed is the bytes of the pool's regions the loop returned to
	// the OS (EndpointConfig.PoolIdle).
	PoolTrimmed int64
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
	pubMu    sync.Mutex
	pub      Stats
	nextPub  int64
	nextTrim int64

	state      atomic.Int32 // 0 idle, 1 busy, 2 closed
	owner      atomic.Int64 // the goroutine id that set state to 1
	inCallback atomic.Int32
	inLoop     bool
	// guarding: the RegisterLoop handler of guardR, with a recovered
	// function, runs; handleEventsFrom's guard recovers a panic only
	// while it is set (loop.go). guardR is left set after the handler.
	guarding bool
	guardR   *Request
	// batching: Enqueue from outside the loop queues without sending
	// (BeginBatch .. EndBatch).
	batching bool
	loopNow  int64 // the clock read of the current (or last) runOnce

	rx []datapath.Packet
	// The datapath's segmented receive (nil: Recv), its batch, and per
	// packet of ep.rx the parts of one received in place (endpoint_segrx.go).
	loopClk  datapath.LoopClock       // the datapath takes the loop's clock reading
	segRxDP  datapath.SegmentReceiver // the datapath's, unless ContiguousRecv
	segRx    datapath.SegmentReceiver // segRxDP once the endpoint connected a client session
	rxSeg    []datapath.Segmented
	rxIn     []rxInPlace
	respSegs [][]byte // Response.Segments of the current continuation
	gather   []byte   // Response.Data of a response received in place
	segs     []mem.Buf
	hdr      [proto.HeaderSize]byte
	copyBuf  []byte
	appender packetAppender      // the datapath's in-place send, if it has one
	held     datapath.HeldSender // the datapath's send of segments a message keeps alive, if it has one
	// Packets a busy peer refused, in order per peer (endpoint_defer.go).
	deferred  map[netip.AddrPort][]mem.Buf
	nDeferred int
	coll      driver.EntryCollector
	msgFree   []*txMsg
	rxFree    []*rxBuf
	reqFree   []*Request
	resp      Response

	// smCore is the session management (session_core.go): the sessions,
	// their handshakes and limits; the endpoint is its host.
	smCore

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
		return nil, fmt.Errorf("%w: EndpointConfig.Datapath is required", ErrConfig)
	}
	dpp := cfg.Datapath.MaxPayload() - proto.HeaderSize
	if dpp < 64 {
		return nil, fmt.Errorf("%w: datapath MaxPayload %d too small", ErrConfig, cfg.Datapath.MaxPayload())
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
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxSessionsPerPeer <= 0 {
		cfg.MaxSessionsPerPeer = DefaultMaxSessionsPerPeer
	}
	if cfg.IdleEvict <= 0 {
		cfg.IdleEvict = DefaultIdleEvict
	}
	if cfg.PoolIdle == 0 {
		cfg.PoolIdle = DefaultPoolIdle
	}
	ep := &Endpoint{nx: n, id: cfg.ID, dp: cfg.Datapath, pool: cfg.Pool, cfg: cfg, dpp: dpp,
		start: time.Now()}
	ep.smCore.init(ep, smCoreConfig{ID: cfg.ID, Local: cfg.Datapath.LocalAddr(), Credential: n.cfg.Credential,
		Incarnation: n.incarnation, SMTimeout: int64(n.cfg.SMTimeout), ConnectTimeout: int64(n.cfg.ConnectTimeout),
		MaxSessions: cfg.MaxSessions, MaxPerPeer: cfg.MaxSessionsPerPeer, IdleEvict: int64(cfg.IdleEvict)}, &ep.stats)
	cc := cfg.CC
	if cc.Enable && cc.Disable {
		return nil, fmt.Errorf("%w: CCConfig.Enable and CCConfig.Disable both set", ErrConfig)
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
	rto := cfg.RTO
	if rto == 0 && isLossless(cfg.Datapath) {
		rto = LosslessRTO
	}
	core, err := proto.New(proto.Config{Credits: cfg.Credits, Window: cfg.Window, RTO: rto,
		DataPerPkt: dpp, MaxMsgSize: cfg.MaxMsgSize, MaxBacklog: cfg.MaxBacklog, Selective: cfg.Selective,
		CC: cc, ReasmBudget: cfg.ReasmBudget, ReasmSessionBudget: cfg.ReasmSessionBudget,
		ReasmTimeout: cfg.ReasmTimeout}, (*rxAllocator)(ep))
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
	if sr, ok := cfg.Datapath.(datapath.SegmentReceiver); ok && !cfg.ContiguousRecv {
		ep.segRxDP = sr
		ep.rxSeg = make([]datapath.Segmented, cfg.Batch)
		ep.rxIn = make([]rxInPlace, cfg.Batch)
	}
	ep.copyBuf = make([]byte, cfg.Datapath.MaxPayload())
	ep.appender, _ = cfg.Datapath.(packetAppender)
	ep.held, _ = cfg.Datapath.(datapath.HeldSender)
	ep.waker, _ = cfg.Datapath.(waker)
	ep.loopClk, _ = cfg.Datapath.(datapath.LoopClock)
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
	s.ServerSessions = ep.srvSessions
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
	ep.dropDeferred()
	for i := range ep.rx {
		if !ep.rx[i].Buf.IsZero() {
			_ = ep.rx[i].Buf.Release()
			ep.rx[i] = datapath.Packet{}
		}
	}
	clear(ep.rxIn)
	clear(ep.rxSeg)
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
