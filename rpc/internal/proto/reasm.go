package proto

// Server reassembly memory. A multi-packet request's buffer starts small
// (Config.ReasmInitial) and doubles as its packets arrive, so that a peer
// holds memory in proportion to what it sent, not to the size its first
// packet claims. Every buffer is charged to its session's budget and to
// the core's (Config.ReasmSessionBudget, ReasmBudget); a request whose
// buffer would exceed one is refused with StatusNoMemory, and a request
// that makes no progress for ReasmTimeout is reclaimed the same way.

// reasmCharge reserves n more bytes for session s, or reports false (and
// reserves nothing) when a budget would be exceeded.
func (c *Core) reasmCharge(s *session, n int64) bool {
	if b := c.cfg.ReasmSessionBudget; b > 0 && s.reasm+n > b {
		return false
	}
	if b := c.cfg.ReasmBudget; b > 0 && c.stats.ReasmBytes+n > b {
		return false
	}
	s.reasm += n
	c.stats.ReasmBytes += n
	if c.stats.ReasmBytes > c.stats.ReasmPeak {
		c.stats.ReasmPeak = c.stats.ReasmBytes
	}
	return true
}

func (c *Core) reasmUncharge(s *session, n int64) {
	s.reasm -= n
	c.stats.ReasmBytes -= n
}

// reasmStart gives the new request in sl (reqSize, reqPkts set) its first
// buffer and puts the slot in srvReceiving; when the budget or the
// allocator refuses, it answers StatusNoMemory and reports false.
func (c *Core) reasmStart(s *session, sl *slot) bool {
	n := min(sl.reqSize, c.cfg.ReasmInitial)
	b, ok := c.reasmAlloc(s, n)
	if !ok {
		c.stats.ReasmRefused++
		c.reasmRefuse(s, sl)
		return false
	}
	sl.rxBuf, sl.rxCap = b, n
	sl.srv = srvReceiving
	sl.progress = c.now
	c.reasmSlots++
	return true
}

func (c *Core) reasmAlloc(s *session, n int) (RxBuf, bool) {
	if !c.reasmCharge(s, int64(n)) {
		return nil, false
	}
	b, err := c.alloc.AllocRx(n)
	if err != nil {
		c.stats.AllocFailures++
		c.reasmUncharge(s, int64(n))
		return nil, false
	}
	return b, true
}

// reasmGrow makes sl's buffer hold at least need bytes (doubling, at most
// the request's size), copying what it holds; on refusal it answers
// StatusNoMemory and reports false.
//
// The budgets are checked for the new buffer in place of the old one (the
// two coexist only during the copy).
func (c *Core) reasmGrow(s *session, sl *slot, need int) bool {
	n := min(max(2*sl.rxCap, need), sl.reqSize)
	c.reasmUncharge(s, int64(sl.rxCap))
	b, ok := c.reasmAlloc(s, n)
	if !ok {
		c.reasmUncharge(s, -int64(sl.rxCap)) // charged again: reasmRefuse releases it
		c.stats.ReasmRefused++
		c.reasmRefuse(s, sl)
		return false
	}
	copy(b.Bytes(), sl.rxBuf.Bytes()[:sl.rxCap])
	sl.rxBuf.Release()
	sl.rxBuf, sl.rxCap = b, n
	c.stats.ReasmGrows++
	return true
}

// reasmDone hands sl's complete buffer over (it is the request's from now
// on, no longer reassembly memory).
func (c *Core) reasmDone(s *session, sl *slot) RxBuf {
	b := sl.rxBuf
	c.reasmUncharge(s, int64(sl.rxCap))
	sl.rxBuf, sl.rxCap = nil, 0
	c.reasmSlots--
	return b
}

// reasmDrop releases sl's partial buffer.
func (c *Core) reasmDrop(s *session, sl *slot) {
	c.reasmDone(s, sl).Release()
}

// reasmRefuse answers the request in sl with StatusNoMemory (saved like
// any response, so retransmissions get it again) and releases its buffer.
func (c *Core) reasmRefuse(s *session, sl *slot) {
	if sl.rxBuf != nil {
		c.reasmDrop(s, sl)
	}
	sl.status = StatusNoMemory
	sl.respSize, sl.respPkts = 0, 1
	sl.srv = srvResponded
	c.sendResp(s, sl, 0)
}

// reasmTimeouts reclaims requests that got no packet for ReasmTimeout.
func (c *Core) reasmTimeouts() {
	limit := c.now - int64(c.cfg.ReasmTimeout)
	for _, s := range c.sessions {
		if s == nil || s.client || s.reasm == 0 {
			continue
		}
		for i := 0; i < s.numSlots(); i++ {
			if sl := s.slotIf(i); sl.srv == srvReceiving && sl.progress <= limit {
				c.stats.ReasmTimeouts++
				c.reasmRefuse(s, sl)
			}
		}
	}
}
