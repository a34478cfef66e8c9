package proto

import "math/bits"

type srvState uint8

const (
	srvIdle      srvState = iota // no request, or its response was buried
	srvReceiving                 // multi-packet request partly received
	srvInHandler                 // request delivered, waiting for Respond
	srvResponded                 // response saved in the slot
)

// slot is one of a session's Window request slots. Request numbers of slot
// i are ≡ i (mod Window).
type slot struct {
	s         *session
	reqNum    uint64
	activeIdx int // index in Core.active, -1 if not there
	idx       uint8
	reqType   uint8
	srv       srvState // server
	status    Status   // server
	ackWanted bool     // server: the request's packets carry FlagAck (Core.Ack sends only then)
	respInl   bool     // server: the response is respInline (SlotInline), resp is nil

	// Shared by client and server: request/response geometry and the
	// receive window (unified packet-number space, eRPC numbering).
	reqSize  int
	reqPkts  int // R
	respSize int
	respPkts int // S (0 = not known yet, client)
	numRx    int // next in-order packet number expected
	sack     uint64

	// Server, next to the shared fields: what a request reads.
	rxBuf RxBuf
	rxCap int // bytes of rxBuf, charged to the reassembly budgets
	resp  *msgRef

	// Client.
	req      *msgRef
	tag      uint64
	numTx    int // next new packet number to send
	maxTx    int // high-water of numTx (sends below it are retransmissions)
	progress int64
	respBuf  RxBuf
	fastAt   int
	inWheel  int      // packets of this slot in the rate limiter
	wheelPkt []uint64 // which of them, by packet number mod Credits (allocated at the first paced packet)
	txTS     *txRing  // send times for Timely's RTT samples; nil without congestion control

	// respInline holds a server's response of at most SlotInline bytes:
	// last, in cache lines of its own, written once per response and read
	// only by retransmissions.
	respInline inlineResp
}

// inlineResp is the copy of a small response kept in its slot (SlotInline),
// sent as the Msg of its retransmissions. It is the slot's: Release does
// nothing.
type inlineResp struct {
	n int
	b [SlotInline]byte
}

func (r *inlineResp) Len() int     { return r.n }
func (r *inlineResp) Flat() []byte { return r.b[:r.n] }
func (r *inlineResp) Release()     {}

type txStamp struct {
	pkt int32
	ts  int64
}

// txRing holds a client slot's send times for Timely, by packet number.
// Eight cover requests of up to eight packets; a larger request can have
// a session's whole credit window in flight, and its slot then gets a
// ring of Credits entries (eRPC keeps kSessionCredits per slot), so that
// the stamp of a packet is still there when its acknowledgement arrives.
type txRing struct {
	small [8]txStamp
	big   []txStamp
}

// at returns the entry of packet pkt (nil when there is none to read).
func (r *txRing) at(pkt int) *txStamp {
	if r.big != nil {
		return &r.big[pkt%len(r.big)]
	}
	if pkt < len(r.small) {
		return &r.small[pkt]
	}
	return nil
}

func (c *Core) pktRange(size, i int) (off, n int) {
	off = i * c.cfg.DataPerPkt
	n = size - off
	if n > c.cfg.DataPerPkt {
		n = c.cfg.DataPerPkt
	}
	return off, n
}

// ---- client ----

// Enqueue starts (or backlogs, when all slots are busy) a request of type
// reqType carrying m on client session sess; its completion is reported by an
// EvResponse event with tag. On success the core owns m; on error the caller
// keeps it.
func (c *Core) Enqueue(sess uint16, reqType uint8, m Msg, tag uint64) error {
	s := c.session(sess)
	if s == nil {
		return ErrNoSession
	}
	if !s.client {
		return ErrNotClient
	}
	if m.Len() > c.cfg.MaxMsgSize {
		return ErrTooLarge
	}
	c.ensureSlots(s)
	if n := len(s.freeSlots); n > 0 && s.blHead == len(s.backlog) {
		i := s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
		c.start(s, c.slotAt(s, int(i)), reqType, c.newRef(m), tag)
		return nil
	}
	if len(s.backlog)-s.blHead >= c.cfg.MaxBacklog {
		return ErrBacklogFull
	}
	if s.blHead > 0 && len(s.backlog) == cap(s.backlog) {
		// A steady backlog never drains to empty: move the live entries
		// to the front instead of growing the array (which grew without
		// bound, copying ever more on every growth).
		n := copy(s.backlog, s.backlog[s.blHead:])
		clear(s.backlog[n:])
		s.backlog, s.blHead = s.backlog[:n], 0
	}
	s.backlog = append(s.backlog, pendingReq{reqType: reqType, ref: c.newRef(m), tag: tag})
	return nil
}

func (c *Core) start(s *session, sl *slot, reqType uint8, ref *msgRef, tag uint64) {
	sl.reqNum += uint64(c.cfg.Window)
	sl.reqType, sl.req, sl.tag = reqType, ref, tag
	sl.reqSize = ref.m.Len()
	sl.reqPkts = numPkts(sl.reqSize, c.cfg.DataPerPkt)
	sl.respSize, sl.respPkts = 0, 0
	sl.numTx, sl.numRx, sl.maxTx, sl.sack, sl.fastAt = 0, 0, 0, 0, -1
	if sl.wheelPkt != nil {
		// Packets of a cancelled request may still wait in the wheel; they
		// leave it unsent and say nothing about this request's packets.
		clear(sl.wheelPkt)
	}
	sl.progress = c.now
	sl.activeIdx = len(c.active)
	c.active = append(c.active, sl)
	c.kick(sl)
}

// kick sends as many new packets of sl (request packets, then RFRs) as the
// session's credits allow. Running out of credits marks the session
// stalled, so that the next credit return kicks its other slots.
func (c *Core) kick(sl *slot) {
	s := sl.s
	for {
		if s.credits <= 0 {
			s.stalled = true
			return
		}
		p := sl.numTx
		if p < sl.reqPkts {
			c.txReq(sl, p)
		} else if sl.respPkts > 0 && p < sl.reqPkts+sl.respPkts-1 {
			c.txRFR(sl, p)
		} else {
			return
		}
		sl.numTx++
		if sl.numTx > sl.maxTx {
			sl.maxTx = sl.numTx
		}
		s.credits--
	}
}

// kickSession kicks every busy slot of s, if one may be waiting for
// credits (s.stalled). Without a stall every slot sent all it could when
// it was last kicked, and a credit return concerns only its own slot,
// which the caller kicks: the common case (single-packet requests, never
// out of credits) does not walk the session's slots at all.
func (c *Core) kickSession(s *session) {
	if !s.stalled || s.credits <= 0 {
		return
	}
	s.stalled = false
	for i := 0; i < s.numSlots(); i++ {
		if s.credits == 0 {
			return
		}
		if sl := s.slotIf(i); sl.req != nil {
			c.kick(sl)
		}
	}
}

func (c *Core) txReq(sl *slot, p int) {
	s := sl.s
	off, n := c.pktRange(sl.reqSize, p)
	if c.bypass(s) {
		// The common case, built in place (see newPacket): txClient
		// without the rate limiter.
		q := c.newPacket()
		q.Peer = s.peer
		h := &q.Hdr
		h.ReqType, h.MsgSize, h.DestSession, h.Type = sl.reqType, uint32(sl.reqSize), s.remote, PktReq
		h.PktNum, h.ReqNum, h.Flags = uint16(p), sl.reqNum, s.reqFlags()
		q.ref, q.Off, q.Len = sl.req, off, n
		c.txNote(sl, p)
		c.emitted(q)
		return
	}
	c.txClient(sl, &OutPacket{Peer: s.peer, Hdr: Header{ReqType: sl.reqType, MsgSize: uint32(sl.reqSize),
		DestSession: s.remote, Type: PktReq, PktNum: uint16(p), ReqNum: sl.reqNum, Flags: s.reqFlags()},
		ref: sl.req, Off: off, Len: n})
}

// reqFlags are the header flags of the session's request packets: FlagAck
// when it runs congestion control (acknowledgements carry RTT samples).
func (s *session) reqFlags() uint8 {
	if s.ccOn {
		return FlagAck
	}
	return 0
}

func (c *Core) txRFR(sl *slot, p int) {
	s := sl.s
	c.txClient(sl, &OutPacket{Peer: s.peer, Hdr: Header{ReqType: sl.reqType, DestSession: s.remote,
		Type: PktRFR, PktNum: uint16(p), ReqNum: sl.reqNum}})
}

// resend retransmits packet p of sl (a request packet or an RFR).
func (c *Core) resend(sl *slot, p int) {
	if p < sl.reqPkts {
		c.txReq(sl, p)
	} else {
		c.txRFR(sl, p)
	}
}

func (c *Core) txClient(sl *slot, p *OutPacket) {
	c.txNote(sl, int(p.Hdr.PktNum))
	c.pace(sl, p)
}

// txNote counts a retransmission and stamps the send time of client
// packet pkt of sl.
func (c *Core) txNote(sl *slot, pkt int) {
	if pkt < sl.maxTx {
		c.stats.Retransmits++
	}
	c.stampTx(sl, pkt)
}

// stampTx records the send time of client packet pkt of sl for Timely.
func (c *Core) stampTx(sl *slot, pkt int) {
	r := sl.txTS
	if r == nil {
		return
	}
	if r.big == nil && (sl.reqPkts > len(r.small) || pkt >= len(r.small)) {
		r.big = make([]txStamp, max(c.cfg.Credits, len(r.small))) // once per slot
	}
	ts := r.at(pkt)
	ts.pkt, ts.ts = int32(pkt), c.txTime()
}

// clientRx handles a response or control packet of a client slot. data is
// the payload received contiguously; tail more payload bytes follow it
// elsewhere (StepSegmented: single-packet responses only).
func (c *Core) clientRx(s *session, sl *slot, h *Header, data []byte, tail int, rxID int) {
	if sl.req == nil || h.ReqNum != sl.reqNum {
		c.stats.DropOrder++
		return
	}
	p := int(h.PktNum)
	R := sl.reqPkts
	if (h.Type == PktCR && p > R-1) || (h.Type == PktResp && p < R-1) {
		c.stats.DropBad++
		return
	}
	if p >= sl.numTx {
		c.stats.DropOrder++ // never sent (or rolled back): a stale or future packet
		return
	}
	if sl.inWheel > 0 && c.pktInWheel(sl, p) {
		// eRPC Appendix C (in_order_client): the client packet this one
		// answers has a copy still in the rate limiter (a retransmission
		// after a false-positive loss, rare); drop the answer and let the
		// copy's own answer or the RTO recover. Only that packet's copy
		// counts: other packets of the slot waiting in the wheel (the
		// RFRs of a paced large response) must not block the answers to
		// those already sent.
		c.stats.DropWheel++
		return
	}
	if h.Type == PktCR && p == R-1 {
		c.clientAck(s, sl, p, data)
		return
	}
	var newResp int // S when this is the first response packet seen
	if h.Type == PktResp {
		idx := p - (R - 1)
		size := int(h.MsgSize)
		S := sl.respPkts
		if S == 0 {
			S = numPkts(size, c.cfg.DataPerPkt)
			if R+S-1 > MaxPktNum+1 {
				c.stats.DropBad++
				return
			}
			newResp = S
		} else if size != sl.respSize {
			c.stats.DropBad++
			return
		}
		if idx >= S {
			c.stats.DropBad++
			return
		}
		if _, n := c.pktRange(size, idx); len(data)+tail != n {
			c.stats.DropBad++
			return
		}
		if tail > 0 && S > 1 {
			// Only a single-packet response completes in place.
			c.stats.DropBad++
			return
		}
		if h.Status != StatusOK && (size != 0 || idx != 0) {
			c.stats.DropBad++
			return
		}
		if sl.numRx < R-1 {
			// A response means the server has the whole request: every
			// request packet is acknowledged, even if its CR was lost.
			c.implicitAck(sl, R-1)
		}
	} else if len(data) != 0 {
		c.stats.DropBad++
		return
	}
	k := p - sl.numRx
	if k < 0 || (k > 0 && (!c.cfg.Selective || k >= SackWindow || sl.sack&(1<<k) != 0)) {
		c.stats.DropOrder++
		return
	}
	if newResp > 0 {
		if newResp > 1 {
			b, err := c.alloc.AllocRx(int(h.MsgSize))
			if err != nil {
				c.stats.AllocFailures++
				c.returnCredits(sl)
				c.failClient(sl, ErrNoMemory)
				c.kickSession(s)
				return
			}
			sl.respBuf = b
		}
		sl.respSize, sl.respPkts = int(h.MsgSize), newResp
	}
	if sl.respBuf != nil && h.Type == PktResp {
		off, _ := c.pktRange(sl.respSize, p-(R-1))
		copy(sl.respBuf.Bytes()[off:], data)
	}
	// Accepted.
	c.rttSample(s, sl, p)
	s.credits++
	sl.progress = c.now
	if k == 0 {
		sl.numRx++
		sl.sack >>= 1
		for sl.sack&1 != 0 {
			sl.numRx++
			sl.sack >>= 1
		}
	} else {
		sl.sack |= 1 << k
	}
	if sl.respPkts > 0 && sl.numRx == R+sl.respPkts-1 {
		c.completeClient(sl, data, rxID, h.Status)
		c.kickSession(s)
		return
	}
	if c.cfg.Selective && sl.sack != 0 && sl.fastAt != sl.numRx &&
		bits.OnesCount64(sl.sack) >= FastRetransmitThresh && sl.inWheel == 0 {
		sl.fastAt = sl.numRx
		c.stats.FastRetransmits++
		c.resend(sl, sl.numRx)
	}
	c.kick(sl)
	c.kickSession(s)
}

// clientAck handles the server's acknowledgement of a whole request whose
// response comes later (Core.Ack): an RTT sample for the last request
// packet, and progress for the loss scan. Credits and the receive window
// are left to the response.
func (c *Core) clientAck(s *session, sl *slot, p int, data []byte) {
	if len(data) != 0 {
		c.stats.DropBad++
		return
	}
	if sl.respPkts > 0 {
		c.stats.DropOrder++ // the response is already arriving: a stale ack
		return
	}
	c.stats.Acks++
	c.rttSample(s, sl, p)
	sl.progress = c.now
}

// implicitAck acknowledges every packet of sl below upto (returning the
// credits of those not yet acknowledged).
func (c *Core) implicitAck(sl *slot, upto int) {
	for sl.numRx < upto {
		if sl.sack&1 == 0 {
			sl.s.credits++
		}
		sl.numRx++
		sl.sack >>= 1
	}
}

// outstanding is the number of sl's packets sent and not yet acknowledged.
func outstanding(sl *slot) int {
	return sl.numTx - sl.numRx - bits.OnesCount64(sl.sack)
}

func (c *Core) returnCredits(sl *slot) {
	sl.s.credits += outstanding(sl)
	sl.numTx = sl.numRx
	sl.sack = 0
}

func (c *Core) completeClient(sl *slot, data []byte, rxID int, st Status) {
	s := sl.s
	e := c.newEvent()
	e.Kind, e.Session, e.ReqType, e.Tag, e.Status = EvResponse, s.num, sl.reqType, sl.tag, st
	if sl.respBuf != nil {
		e.Buf = sl.respBuf
		e.Data = sl.respBuf.Bytes()
		sl.respBuf = nil
	} else {
		e.Data, e.RxID = data, rxID
	}
	c.stats.Completed++
	c.freeClientSlot(sl)
}

func (c *Core) failClient(sl *slot, err error) {
	e := Event{Kind: EvResponse, Session: sl.s.num, ReqType: sl.reqType, Tag: sl.tag, Err: err}
	if sl.respBuf != nil {
		sl.respBuf.Release()
		sl.respBuf = nil
	}
	c.stats.Failed++
	c.event(e)
	c.freeClientSlot(sl)
}

func (c *Core) freeClientSlot(sl *slot) {
	s := sl.s
	c.unref(sl.req)
	sl.req = nil
	if i := sl.activeIdx; i >= 0 {
		last := len(c.active) - 1
		c.active[i] = c.active[last]
		c.active[i].activeIdx = i
		c.active[last] = nil
		c.active = c.active[:last]
		sl.activeIdx = -1
	}
	if s.blHead < len(s.backlog) && c.sessions[s.num] == s {
		p := s.backlog[s.blHead]
		s.backlog[s.blHead] = pendingReq{}
		s.blHead++
		if s.blHead == len(s.backlog) {
			s.backlog, s.blHead = s.backlog[:0], 0
		}
		c.start(s, sl, p.reqType, p.ref, p.tag)
		return
	}
	s.freeSlots = append(s.freeSlots, sl.idx)
}

// lossScan rolls back client slots without progress for an RTO.
func (c *Core) lossScan() {
	rto := int64(c.cfg.RTO)
	for i := 0; i < len(c.active); i++ {
		sl := c.active[i]
		if outstanding(sl) == 0 || c.now-sl.progress < rto {
			continue
		}
		if sl.inWheel > 0 {
			continue // eRPC: never roll back while copies sit in the rate limiter
		}
		c.stats.RTOs++
		sl.progress = c.now
		s := sl.s
		if c.cfg.Selective {
			for p := sl.numRx; p < sl.numTx; p++ {
				if k := p - sl.numRx; k >= 64 || sl.sack&(1<<k) == 0 {
					c.resend(sl, p)
				}
			}
			continue
		}
		// Go-back-N: forget everything after the last in-order packet.
		c.returnCredits(sl)
		c.kick(sl)
		c.kickSession(s)
	}
}
