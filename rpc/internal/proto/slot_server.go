package proto

// ---- server ----

func (c *Core) serverReq(s *session, sl *slot, h *Header, data []byte, rxID int) {
	p := int(h.PktNum)
	switch {
	case h.ReqNum < sl.reqNum:
		c.stats.DropOrder++ // stale request
		return
	case h.ReqNum > sl.reqNum:
		if sl.srv == srvInHandler {
			c.stats.DropOrder++ // the previous request on this slot is still being handled
			return
		}
		if p != 0 && !(c.cfg.Selective && p < SackWindow) {
			c.stats.DropOrder++
			return
		}
		size := int(h.MsgSize)
		R := numPkts(size, c.cfg.DataPerPkt)
		if R > MaxPktNum+1 || p >= R {
			c.stats.DropBad++
			return
		}
		if _, n := c.pktRange(size, p); n < 0 || len(data) != n {
			c.stats.DropBad++
			return
		}
		c.resetServerSlot(s, sl) // bury the previous response (at-most-once: one per slot)
		sl.reqNum, sl.reqType, sl.reqSize, sl.reqPkts = h.ReqNum, h.ReqType, size, R
		sl.ackWanted = h.Flags&FlagAck != 0
		sl.numRx, sl.sack = 0, 0
		if R == 1 {
			sl.numRx = 1
			c.deliverRequest(s, sl, data, rxID, nil)
			return
		}
		// A multi-packet request: its buffer follows the packets that
		// arrive, within the budgets (reasm.go).
		if !c.reasmStart(s, sl) {
			return
		}
		c.serverReqPkt(s, sl, h, p, data)
	default: // the current request
		if sl.srv == srvReceiving {
			if int(h.MsgSize) != sl.reqSize || p >= sl.reqPkts {
				c.stats.DropBad++
				return
			}
			c.serverReqPkt(s, sl, h, p, data)
			return
		}
		if sl.srv == srvIdle || p >= sl.reqPkts {
			c.stats.DropOrder++
			return
		}
		// A retransmission of a packet of a request already received.
		if p == sl.reqPkts-1 {
			if sl.srv == srvResponded {
				c.stats.DupResponses++
				c.sendResp(s, sl, 0)
			} else {
				c.stats.DropOrder++ // handler still running: the client will retry
			}
			return
		}
		c.sendCR(s, sl, p)
	}
}

// serverReqPkt handles packet p of a multi-packet request being received.
func (c *Core) serverReqPkt(s *session, sl *slot, h *Header, p int, data []byte) {
	off, n := c.pktRange(sl.reqSize, p)
	if len(data) != n {
		c.stats.DropBad++
		return
	}
	sl.progress = c.now // any packet of it: the peer is alive (ReasmTimeout)
	k := p - sl.numRx
	if off+n > sl.rxCap && (k == 0 || (c.cfg.Selective && k > 0 && k < SackWindow && sl.sack&(1<<k) == 0)) {
		if !c.reasmGrow(s, sl, off+n) {
			return
		}
	}
	switch {
	case k < 0 || (k > 0 && k < 64 && sl.sack&(1<<k) != 0):
		// Already have it: the CR was lost; resend it (the last packet's
		// acknowledgement is the response, which is not ready yet).
		if p < sl.reqPkts-1 {
			c.sendCR(s, sl, p)
		} else {
			c.stats.DropOrder++
		}
		return
	case k == 0:
		copy(sl.rxBuf.Bytes()[off:], data)
		sl.numRx++
		sl.sack >>= 1
		for sl.sack&1 != 0 {
			sl.numRx++
			sl.sack >>= 1
		}
	case c.cfg.Selective && k < SackWindow:
		copy(sl.rxBuf.Bytes()[off:], data)
		sl.sack |= 1 << k
	default:
		c.stats.DropOrder++
		return
	}
	if p < sl.reqPkts-1 {
		c.sendCR(s, sl, p)
	}
	if sl.numRx == sl.reqPkts {
		buf := c.reasmDone(s, sl)
		c.deliverRequest(s, sl, nil, 0, buf)
	}
}

func (c *Core) deliverRequest(s *session, sl *slot, data []byte, rxID int, buf RxBuf) {
	sl.srv = srvInHandler
	c.stats.Handlers++
	e := c.newEvent()
	e.Kind, e.Session, e.ReqType = EvRequest, s.num, sl.reqType
	e.Handle = ReqHandle{Session: s.num, Slot: sl.idx, Gen: s.gen, ReqNum: sl.reqNum}
	e.RxID, e.Buf = rxID, buf
	if buf != nil {
		e.Data = buf.Bytes()
	} else {
		e.Data = data
	}
}

func (c *Core) serverRFR(s *session, sl *slot, h *Header, data []byte) {
	if h.ReqNum != sl.reqNum || sl.srv != srvResponded {
		c.stats.DropOrder++
		return
	}
	idx := int(h.PktNum) - (sl.reqPkts - 1)
	if idx < 1 || idx >= sl.respPkts {
		c.stats.DropBad++
		return
	}
	// Stateless: any RFR for an existing response packet is answered
	// (eRPC drops "future" RFRs; answering them is harmless and lets
	// selective retransmission ask for any missing packet).
	c.sendResp(s, sl, idx)
}

func (c *Core) resetServerSlot(s *session, sl *slot) {
	if sl.resp != nil {
		c.unref(sl.resp)
		sl.resp = nil
	}
	if sl.rxBuf != nil {
		c.reasmDrop(s, sl)
	}
	sl.srv = srvIdle
	sl.respPkts, sl.respSize, sl.status, sl.respInl = 0, 0, StatusOK, false
}

func (c *Core) sendCR(s *session, sl *slot, p int) {
	c.emit(&OutPacket{Peer: s.peer, Hdr: Header{ReqType: sl.reqType, DestSession: s.remote,
		Type: PktCR, PktNum: uint16(p), ReqNum: sl.reqNum}})
}

func (c *Core) sendResp(s *session, sl *slot, idx int) {
	off, n := c.pktRange(sl.respSize, idx)
	p := c.newPacket() // in place (see newPacket)
	p.Peer = s.peer
	h := &p.Hdr
	h.ReqType, h.MsgSize, h.DestSession, h.Type = sl.reqType, uint32(sl.respSize), s.remote, PktResp
	h.PktNum, h.ReqNum, h.Status = uint16(sl.reqPkts-1+idx), sl.reqNum, sl.status
	if sl.resp != nil {
		p.ref = sl.resp
	} else if sl.respInl {
		p.Msg = &sl.respInline
	}
	p.Off, p.Len = off, n
	c.emitted(p)
}

// inHandler returns the server session and slot of the request h names
// while it waits for its answer; a nil slot when h is stale (the session
// was reset, or the request was answered or superseded).
func (c *Core) inHandler(h ReqHandle) (*session, *slot) {
	s := c.session(h.Session)
	if s == nil || s.gen != h.Gen || s.client {
		return nil, nil
	}
	sl := s.slotIf(int(h.Slot))
	if sl == nil || sl.reqNum != h.ReqNum || sl.srv != srvInHandler {
		return nil, nil
	}
	return s, sl
}

// RespondStatus answers the request h names with an empty response carrying
// a non-OK status (the client's request fails with it). Like a response, it
// is saved in the slot and re-sent to retransmissions.
func (c *Core) RespondStatus(h ReqHandle, st Status) error {
	s, sl := c.inHandler(h)
	if sl == nil {
		return ErrStaleHandle
	}
	sl.status = st
	sl.respSize, sl.respPkts = 0, 1
	sl.srv = srvResponded
	c.sendResp(s, sl, 0)
	return nil
}

// Cancel fails the request with tag on client session sess (in flight or
// backlogged) with err, as if it had completed; late packets of it are
// dropped. It reports whether the request was found.
func (c *Core) Cancel(sess uint16, tag uint64, err error) bool {
	s := c.session(sess)
	if s == nil || !s.client {
		return false
	}
	for i := 0; i < s.numSlots(); i++ {
		if sl := s.slotIf(i); sl.req != nil && sl.tag == tag {
			c.returnCredits(sl)
			c.failClient(sl, err)
			c.kickSession(s)
			return true
		}
	}
	for i := s.blHead; i < len(s.backlog); i++ {
		if p := s.backlog[i]; p.tag == tag {
			copy(s.backlog[i:], s.backlog[i+1:])
			s.backlog[len(s.backlog)-1] = pendingReq{}
			s.backlog = s.backlog[:len(s.backlog)-1]
			c.unref(p.ref)
			c.stats.Failed++
			c.event(Event{Kind: EvResponse, Session: s.num, ReqType: p.reqType, Tag: p.tag, Err: err})
			return true
		}
	}
	return false
}

// Ack acknowledges the request h names, received in full, whose response
// will not follow at once (a worker handler, or a dispatch handler that
// answers later): an explicit credit-return packet for the request's last
// packet. The client takes its RTT sample from it instead of from the
// response, so that Timely does not read the handler's running time as
// network delay. It carries no credit: the response still returns the
// last packet's. Only requests whose packets carry FlagAck (clients under
// congestion control) are acknowledged; for the others Ack sends nothing.
func (c *Core) Ack(h ReqHandle) error {
	s, sl := c.inHandler(h)
	if sl == nil {
		return ErrStaleHandle
	}
	if !sl.ackWanted {
		return nil
	}
	c.stats.Acks++
	c.sendCR(s, sl, sl.reqPkts-1)
	return nil
}

// Respond saves m as the response to the request h names and sends its
// first packet. On success the core owns m (it is released when the next
// request on the slot buries it, or when the session goes away); on error
// the caller keeps it.
func (c *Core) Respond(h ReqHandle, m Msg) error {
	s, sl := c.inHandler(h)
	if sl == nil {
		return ErrStaleHandle
	}
	size := m.Len()
	if size > c.cfg.MaxMsgSize {
		return ErrTooLarge
	}
	sl.respSize = size
	sl.respPkts = numPkts(size, c.cfg.DataPerPkt)
	sl.srv = srvResponded
	if size <= SlotInline {
		if b := m.Flat(); len(b) == size {
			// Kept in the slot; the first packet still goes out from m,
			// which is warm, and m is released at the next Advance (see
			// SlotInline).
			sl.respInline.n = copy(sl.respInline.b[:], b)
			sl.respInl = true
			r := c.newRef(m)
			sl.resp = r
			c.sendResp(s, sl, 0)
			r.refs-- // the packet's is the only reference (sendResp took it)
			sl.resp = nil
			return nil
		}
	}
	sl.resp = c.newRef(m)
	c.sendResp(s, sl, 0)
	return nil
}
