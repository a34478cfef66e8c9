// Package proto is the eRPC protocol core: a pure state machine with no I/O,
// in the style of etcd raft. Packets (byte slices) and clock ticks go in;
// packets to send and events (requests for handlers, completed responses)
// come out through Ready. The caller (rpc.Endpoint) moves the packets over a
// datapath and runs the handlers and continuations.
//
// Message bodies are abstract: a transmitted message is a Msg (its length and
// a Release function); an outgoing data packet names the message and the byte
// range [Off, Off+Len) it carries, and the caller turns that range into
// scatter-gather segments. The core counts references explicitly: a Msg is
// released only after its slot is done with it AND no packet referring to it
// is still in a Ready that has not been Advanced or in the rate limiter.
//
// Everything here runs on one goroutine and allocates nothing on the steady
// state path.
package proto

import (
	"errors"
	"math"
	"net/netip"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
)

// Msg is a message body the core transmits. The core calls Release exactly
// once, when neither a slot nor any queued packet refers to it any more.
type Msg interface {
	Len() int
	// Flat returns the message's Len() bytes when they are one slice, nil
	// otherwise: the core copies a small response into its slot
	// (SlotInline).
	Flat() []byte
	Release()
}

// SlotInline is the largest response a server slot keeps in its own
// memory. The core copies such a response (Msg.Flat) into the slot, sends
// the first packet from the message and lets the message go once that send
// is handed to the datapath; a retransmission is sent from the slot's copy
// (an OutPacket whose Msg is the slot's). Burying the response on the
// slot's next request then touches nothing but the slot: with thousands of
// sessions, a message record kept per slot for the previous response is a
// cold object on every request, and these small answers are the common
// case (eRPC's small-RPC experiments, §6.2 and §6.3, answer 32 B).
const SlotInline = 64

// RxBuf is a writable buffer the core reassembles a multi-packet message into.
type RxBuf interface {
	Bytes() []byte // exactly the message size
	Release()
}

// Allocator provides reassembly buffers for multi-packet messages.
type Allocator interface {
	AllocRx(n int) (RxBuf, error)
}

// Errors returned by the core (wrapped by the rpc package).
var (
	ErrNoSession   = errors.New("rpc/proto: no such session")
	ErrNotClient   = errors.New("rpc/proto: not a client session")
	ErrTooLarge    = errs.New("rpc/proto: message larger than MaxMsgSize", cornflakes.ErrTooLarge)
	ErrBacklogFull = errors.New("rpc/proto: session backlog full")
	ErrStaleHandle = errors.New("rpc/proto: request handle is stale (session reset or already answered)")
	ErrSessionDown = errors.New("rpc/proto: session failed or disconnected")
	ErrNoMemory    = errors.New("rpc/proto: no memory for a reassembly buffer")
	ErrSessionUsed = errors.New("rpc/proto: session number in use")
)

// OutPacket is one packet to transmit: the header followed by bytes
// [Off, Off+Len) of Msg (no data when Msg is nil). Msg is a caller's
// message, or the copy of a small response kept in its server slot
// (SlotInline), which the core may overwrite after the next Advance: its
// bytes (Msg.Flat) must be copied when the packet is handed over.
type OutPacket struct {
	Peer netip.AddrPort
	Hdr  Header
	Msg  Msg // nil for control packets (CR, RFR)
	Off  int
	Len  int
	ref  *msgRef
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EvRequest: a complete request arrived at a server session; run the
	// handler and answer with Core.Respond(Handle, ...).
	EvRequest EventKind = iota + 1
	// EvResponse: a client request completed (Err == nil) or failed.
	EvResponse
)

// ReqHandle identifies one request at a server slot.
type ReqHandle struct {
	Session uint16
	Slot    uint8
	Gen     uint32
	ReqNum  uint64
}

// Event is one output of the core for the caller to act on.
//
// Message bytes: when Buf != nil the reassembled message is in Buf.Bytes()
// and ownership of Buf passes to the caller. Otherwise Data aliases the
// payload of the packet passed to Step with id RxID (single-packet
// messages, zero-copy) and is valid only as long as that packet is.
type Event struct {
	Kind    EventKind
	Session uint16
	ReqType uint8
	Handle  ReqHandle // EvRequest
	Tag     uint64    // EvResponse: the tag given to Enqueue
	Data    []byte
	Buf     RxBuf
	RxID    int
	Err     error  // EvResponse: non-nil when the request failed locally
	Status  Status // EvResponse: the server's status (non-OK: the server did not run a handler)
}

// Ready is the batch of outputs accumulated since the last Ready call.
// Send the packets, handle the events, then call Advance(rd).
type Ready struct {
	Packets []OutPacket
	Events  []Event
}

// Empty reports whether there is nothing to do.
func (r *Ready) Empty() bool { return len(r.Packets) == 0 && len(r.Events) == 0 }

// Stats counts protocol activity.
type Stats struct {
	TxData, TxCtrl    uint64 // data (REQ/RESP) and control (CR/RFR) packets emitted
	Retransmits       uint64 // packets re-sent by RTO rollback or fast retransmission
	RTOs              uint64 // slots rolled back by the loss scan
	FastRetransmits   uint64 // holes resent early (selective mode)
	DupResponses      uint64 // saved responses re-sent to a retransmitted request
	Acks              uint64 // request acknowledgements sent (server, Ack) or accepted (client)
	Handlers          uint64 // EvRequest events (handler invocations)
	Completed, Failed uint64 // EvResponse events without / with error
	DropBad           uint64 // malformed packets (header, size, session)
	DropOrder         uint64 // out-of-order or duplicate packets dropped
	DropWheel         uint64 // responses dropped while a retransmitted copy sits in the rate limiter
	Released          uint64 // Msg.Release calls
	RateLimited       uint64 // packets that went through the rate limiter
	TimelyUpdates     uint64 // Timely rate updates (not bypassed)
	AllocFailures     uint64 // reassembly buffer allocation failures
	// Server reassembly (Config.ReasmBudget): requests refused with
	// StatusNoMemory because a budget or the allocator ran out
	// (ReasmRefused) or because they stalled past ReasmTimeout
	// (ReasmTimeouts); buffer growths; the bytes held now and at most.
	ReasmRefused, ReasmTimeouts uint64
	ReasmGrows                  uint64
	ReasmBytes, ReasmPeak       int64
}

type msgRef struct {
	m    Msg
	refs int
}

// Core is the protocol state of one endpoint: all its client and server
// sessions. It is not safe for concurrent use.
type Core struct {
	cfg        Config
	alloc      Allocator
	now        int64
	rttFrom    int64 // Timely ignores RTT samples of packets sent before this time (a stall of the caller)
	scan       int64 // next loss-scan time
	sessions   []*session
	active     []*slot // client slots with a request in flight (loss scan)
	cur, spare *Ready
	refFree    []*msgRef
	wheel      *wheel
	gen        uint32 // session generations (stale-handle detection)
	stats      Stats
	reasmSlots int   // server slots receiving a multi-packet request
	reasmScan  int64 // next reassembly-timeout scan
}

// New returns a core with cfg (defaults filled in) that reassembles
// multi-packet messages into buffers from alloc.
func New(cfg Config, alloc Allocator) (*Core, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Core{cfg: cfg, alloc: alloc, cur: &Ready{}, spare: &Ready{}}
	c.wheel = newWheel(cfg.CC)
	return c, nil
}

// Config returns the effective configuration.
func (c *Core) Config() Config { return c.cfg }

// Stats returns the counters.
func (c *Core) Stats() Stats { return c.stats }

// Now is the time of the last Tick (nanoseconds on the caller's clock).
func (c *Core) Now() int64 { return c.now }

// HasReady reports whether Ready would return a non-empty batch.
func (c *Core) HasReady() bool { return !c.cur.Empty() }

// Events is the number of events accumulated since the last Ready: the
// messages delivered whose handlers and continuations have not run.
func (c *Core) Events() int { return len(c.cur.Events) }

// Ready returns the outputs accumulated so far. Outputs generated while
// handling it (handlers that respond or enqueue) go to the next Ready.
func (c *Core) Ready() *Ready {
	r := c.cur
	if c.spare != nil {
		c.cur, c.spare = c.spare, nil
	} else {
		c.cur = &Ready{}
	}
	return r
}

// Advance tells the core that rd's packets have been handed to the datapath
// (which holds its own references from then on) and its events handled. The
// core drops the packets' message references, releasing messages no longer
// needed.
func (c *Core) Advance(rd *Ready) {
	for i := range rd.Packets {
		if r := rd.Packets[i].ref; r != nil {
			c.unref(r)
		}
		rd.Packets[i] = OutPacket{}
	}
	for i := range rd.Events {
		rd.Events[i] = Event{}
	}
	rd.Packets = rd.Packets[:0]
	rd.Events = rd.Events[:0]
	if c.spare == nil {
		c.spare = rd
	}
}

func (c *Core) newRef(m Msg) *msgRef {
	var r *msgRef
	if n := len(c.refFree); n > 0 {
		r = c.refFree[n-1]
		c.refFree = c.refFree[:n-1]
	} else {
		r = &msgRef{}
	}
	r.m, r.refs = m, 1
	return r
}

func (c *Core) unref(r *msgRef) {
	r.refs--
	if r.refs == 0 {
		m := r.m
		r.m = nil
		c.refFree = append(c.refFree, r)
		c.stats.Released++
		m.Release()
	} else if r.refs < 0 {
		panic("rpc/proto: message reference count below zero")
	}
}

func (c *Core) emit(p *OutPacket) {
	q := c.newPacket()
	*q = *p
	c.emitted(q)
}

// newPacket appends a zero packet to the output batch and returns it for
// the caller to fill in place, then pass to emitted. The hot paths build
// packets and events in place: a struct built on the stack from small
// fields and then copied costs a store-forwarding stall per copy (the
// wide loads of the copy straddle the narrow stores).
func (c *Core) newPacket() *OutPacket {
	c.cur.Packets = append(c.cur.Packets, OutPacket{})
	return &c.cur.Packets[len(c.cur.Packets)-1]
}

// emitted completes a packet made by newPacket: it takes its message
// reference and counts it.
func (c *Core) emitted(p *OutPacket) {
	if p.ref != nil {
		p.ref.refs++
		p.Msg = p.ref.m
	}
	if p.Msg != nil {
		c.stats.TxData++
	} else {
		c.stats.TxCtrl++
	}
}

func (c *Core) event(e Event) { *c.newEvent() = e }

// newEvent appends a zero event to the output batch and returns it for
// the caller to fill in place (see newPacket).
func (c *Core) newEvent() *Event {
	c.cur.Events = append(c.cur.Events, Event{})
	return &c.cur.Events[len(c.cur.Events)-1]
}

// ---- sessions ----

type pendingReq struct {
	reqType uint8
	ref     *msgRef
	tag     uint64
}

type session struct {
	// Read for every packet, by both sides: first, next to slot0's
	// fields (see slot0).
	num     uint16
	remote  uint16
	gen     uint32
	client  bool
	inited  bool // slot0 (and the client's free-slot list) set up: the session carried traffic
	ccOn    bool // client session under congestion control (Config.CC.Enable and not SessionConfig.NoCC)
	stalled bool // a kick ran out of credits: slots may wait for a credit return
	credits int
	peer    netip.AddrPort
	lastRx  int64 // clock (|1) of the last packet accepted for the session; 0: none yet
	// slot0 is the first slot, inline: a session with one request at a
	// time (the common case with many sessions; the client reuses its
	// lowest free slot) touches no other object, and its fields that a
	// packet reads follow the session's own in the same few cache lines
	// (with thousands of sessions every one of them is a miss). The other
	// Window-1 slots (more) are allocated when one is first used.
	slot0     slot
	freeSlots []uint8 // client: free slot indexes (LIFO); on free8 up to 8 slots
	free8     [8]uint8
	backlog   []pendingReq
	blHead    int
	cc        timely
	more      []slot
	reasm     int64 // server: bytes of reassembly buffers its slots hold
}

// slotIf returns slot i, or nil if it was never set up.
func (s *session) slotIf(i int) *slot {
	if i == 0 {
		if !s.inited {
			return nil
		}
		return &s.slot0
	}
	if i-1 < len(s.more) {
		return &s.more[i-1]
	}
	return nil
}

// numSlots is the number of slots set up (slotIf is non-nil below it).
func (s *session) numSlots() int {
	if !s.inited {
		return 0
	}
	return 1 + len(s.more)
}

// SessionConfig describes a session the caller (session management) created.
type SessionConfig struct {
	Num    uint16         // local session number (≠ InvalidSession)
	Client bool           // true: we send requests; false: we serve them
	Remote uint16         // the peer's session number (header dest_session of our packets)
	Peer   netip.AddrPort // where our packets go
	// NoCC exempts a client session from congestion control when the core
	// has it (Config.CC.Enable): a path that cannot congest, such as
	// loopback, where Timely would only measure the hosts' scheduling.
	NoCC bool
}

// AddSession installs a connected session.
func (c *Core) AddSession(sc SessionConfig) error {
	if sc.Num == InvalidSession {
		return ErrNoSession
	}
	for int(sc.Num) >= len(c.sessions) {
		c.sessions = append(c.sessions, nil)
	}
	if c.sessions[sc.Num] != nil {
		return ErrSessionUsed
	}
	s := &session{num: sc.Num, client: sc.Client, remote: sc.Remote, peer: sc.Peer, credits: c.cfg.Credits}
	c.gen++
	s.gen = c.gen
	if sc.Client {
		s.cc.init(&c.cfg.CC, c.now)
		s.ccOn = c.cfg.CC.Enable && !sc.NoCC
	}
	c.sessions[sc.Num] = s
	return nil
}

// ensureSlots sets s up on the session's first packet or request: slot0
// and the client's free-slot list. A connected session that carries no
// traffic costs only the session struct, and one that never has two
// requests in flight never allocates its other slots (20000 sessions per
// endpoint are expected).
func (c *Core) ensureSlots(s *session) {
	if s.inited {
		return
	}
	s.inited = true
	c.initSlot(s, &s.slot0, 0)
	if s.client {
		s.freeSlots = s.free8[:0] // one cache line fewer per request with many sessions
		if c.cfg.Window > len(s.free8) {
			s.freeSlots = make([]uint8, 0, c.cfg.Window)
		}
		for i := c.cfg.Window - 1; i >= 0; i-- {
			s.freeSlots = append(s.freeSlots, uint8(i))
		}
		if s.ccOn {
			s.slot0.txTS = new(txRing) // RTT stamps only where Timely uses them
		}
	}
}

func (c *Core) initSlot(s *session, sl *slot, i int) {
	sl.s = s
	sl.idx = uint8(i)
	sl.reqNum = uint64(i)
	sl.activeIdx = -1
}

// slotAt returns slot i (< Window) of s (set up by ensureSlots), allocating
// slots 1..Window-1 when one of them is first needed.
func (c *Core) slotAt(s *session, i int) *slot {
	if i == 0 {
		return &s.slot0
	}
	if s.more == nil {
		s.more = make([]slot, c.cfg.Window-1)
		var ts []txRing
		if s.ccOn {
			ts = make([]txRing, len(s.more))
		}
		for j := range s.more {
			c.initSlot(s, &s.more[j], j+1)
			if ts != nil {
				s.more[j].txTS = &ts[j]
			}
		}
	}
	return &s.more[i-1]
}

func (c *Core) session(num uint16) *session {
	if int(num) >= len(c.sessions) {
		return nil
	}
	return c.sessions[num]
}

// CCOn reports whether client session num is under congestion control.
func (c *Core) CCOn(num uint16) bool {
	s := c.session(num)
	return s != nil && s.ccOn
}

// LastRx is the time (the clock of Observe and Tick, odd) of the last
// packet accepted for session num, 0 if none arrived yet or the session
// does not exist.
func (c *Core) LastRx(num uint16) int64 {
	if s := c.session(num); s != nil {
		return s.lastRx
	}
	return 0
}

// HasSession reports whether session num exists.
func (c *Core) HasSession(num uint16) bool { return c.session(num) != nil }

// Pending is the number of requests of client session num in flight or
// backlogged (0 for unknown sessions).
func (c *Core) Pending(num uint16) int {
	s := c.session(num)
	if s == nil || !s.client {
		return 0
	}
	if !s.inited {
		return 0 // never used (the backlog is empty too)
	}
	return c.cfg.Window - len(s.freeSlots) + len(s.backlog) - s.blHead
}

// Credits returns a client session's available credits (for tests and stats).
func (c *Core) Credits(num uint16) int {
	if s := c.session(num); s != nil {
		return s.credits
	}
	return 0
}

// RemoveSession tears session num down: every request of a client session
// (in flight or backlogged) completes with err; a server session drops its
// saved responses and partial requests, and handles for requests still in a
// handler become stale. Messages are released as soon as no queued packet
// refers to them.
func (c *Core) RemoveSession(num uint16, err error) error {
	s := c.session(num)
	if s == nil {
		return ErrNoSession
	}
	if err == nil {
		err = ErrSessionDown
	}
	c.wheel.dropSession(c, s)
	c.sessions[num] = nil // first, so failing slots do not start backlogged requests
	for i := 0; i < s.numSlots(); i++ {
		sl := s.slotIf(i)
		if s.client {
			if sl.req != nil {
				c.failClient(sl, err)
			}
		} else {
			c.resetServerSlot(s, sl)
		}
	}
	for i := s.blHead; i < len(s.backlog); i++ {
		p := s.backlog[i]
		c.unref(p.ref)
		c.stats.Failed++
		c.event(Event{Kind: EvResponse, Session: s.num, ReqType: p.reqType, Tag: p.tag, Err: err})
	}
	s.backlog = nil
	return nil
}

// ---- time ----

// Observe advances the clock to now (nanoseconds, monotonic) without
// running any timer: packets stepped afterwards are stamped with it. An
// event loop observes the time, steps what it received and then Ticks, so
// that after a stall longer than the RTO it takes the responses waiting in
// its receive queue before the loss scan would declare them lost (eRPC's
// event loop likewise receives before its loss scan).
//
// A gap of at least Timely's T_low since the previous call means the
// caller stopped looking (descheduled, or idle): the RTT of a packet sent
// before it includes time its answer waited unreceived, which is not
// network delay, so Timely does not sample it.
func (c *Core) Observe(now int64) {
	if now > c.now {
		if c.cfg.CC.Enable && now-c.now >= int64(c.cfg.CC.TLow) {
			c.rttFrom = now
		}
		c.now = now
	}
}

// Tick advances the clock to now (nanoseconds, monotonic) and runs the loss
// scan every RTO/10 and the rate limiter.
func (c *Core) Tick(now int64) {
	c.Observe(now)
	c.wheel.reap(c)
	if c.now >= c.scan {
		c.scan = c.now + int64(c.cfg.RTO)/10
		c.lossScan()
	}
	if c.reasmSlots > 0 && c.now >= c.reasmScan {
		c.reasmScan = c.now + int64(c.cfg.ReasmTimeout)/4
		c.reasmTimeouts()
	}
}

// NextDeadline is the next time Tick has work (loss scan or rate limiter);
// an idle caller may sleep until then. With no request in flight and an
// empty rate limiter it is math.MaxInt64: the loss scan has nothing to do
// (a request enqueued later is scanned from its send time on).
func (c *Core) NextDeadline() int64 {
	d := int64(math.MaxInt64)
	if len(c.active) > 0 {
		d = c.scan
	}
	if w, ok := c.wheel.next(); ok && w < d {
		d = w
	}
	if c.reasmSlots > 0 && c.reasmScan < d {
		d = c.reasmScan
	}
	return d
}

// ---- receive ----

// Step processes one received packet (header and payload) from peer. rxID is
// echoed in events whose Data aliases pkt, so the caller can keep the packet
// buffer alive. Malformed or unexpected packets are dropped (counted); Step
// never panics on bad input and never retains pkt after returning except
// through such events.
func (c *Core) Step(pkt []byte, rxID int) { c.step(netip.AddrPort{}, pkt, 0, rxID) }

// StepFrom is Step for a packet that arrived from the address from: a data
// packet for a session whose peer is another address is dropped (a stray
// or spoofed packet must not complete or inject requests).
func (c *Core) StepFrom(from netip.AddrPort, pkt []byte, rxID int) { c.step(from, pkt, 0, rxID) }

// StepSegmented is StepFrom for a packet received in place as a head
// (header and the first payload bytes, head) followed by tail more payload
// bytes that the caller keeps elsewhere (the sender's segments on
// datapath/shm). Only a response that fits in one packet can complete
// that way: its EvResponse event's Data is the head's payload part only,
// and the caller finds the rest by RxID. Any other packet with tail > 0
// (a request, a control packet, one packet of a multi-packet response) is
// dropped as malformed: the caller must gather such packets and Step the
// contiguous copy. A from that is not valid matches every session (Step).
func (c *Core) StepSegmented(from netip.AddrPort, head []byte, tail int, rxID int) {
	if tail < 0 {
		c.stats.DropBad++
		return
	}
	c.step(from, head, tail, rxID)
}

func (c *Core) step(from netip.AddrPort, pkt []byte, tail int, rxID int) {
	var h Header
	if err := h.Decode(pkt); err != nil {
		c.stats.DropBad++
		return
	}
	if tail > 0 && h.Type != PktResp {
		c.stats.DropBad++
		return
	}
	data := pkt[HeaderSize:]
	s := c.session(h.DestSession)
	if s == nil || (from.IsValid() && from != s.peer) {
		c.stats.DropBad++
		return
	}
	s.lastRx = c.now | 1
	c.ensureSlots(s)
	sl := c.slotAt(s, int(h.ReqNum&uint64(c.cfg.Window-1)))
	if int(h.MsgSize) > c.cfg.MaxMsgSize {
		c.stats.DropBad++
		if s.client && h.Type == PktResp && sl.req != nil && sl.reqNum == h.ReqNum {
			// The server's answer exceeds our limit: retrying cannot
			// help, so the request fails.
			c.returnCredits(sl)
			c.failClient(sl, ErrTooLarge)
			c.kickSession(s)
		}
		return
	}
	switch h.Type {
	case PktReq, PktRFR:
		if s.client {
			c.stats.DropBad++
			return
		}
		if h.Type == PktReq {
			c.serverReq(s, sl, &h, data, rxID)
		} else {
			c.serverRFR(s, sl, &h, data)
		}
	case PktCR, PktResp:
		if !s.client {
			c.stats.DropBad++
			return
		}
		c.clientRx(s, sl, &h, data, tail, rxID)
	}
}
