package proto

import (
	"time"

	"github.com/cornflakes-go/cornflakes/internal/freelist"
)

// CCConfig configures congestion control: Timely per client session and a
// Carousel timing wheel that paces packets of congested sessions. Zero
// fields take eRPC's values.
type CCConfig struct {
	// Enable turns congestion control on (off: packets go out as soon as
	// credits allow). The core applies it to every client session but
	// those added with SessionConfig.NoCC.
	Enable bool
	// Disable turns it off explicitly. The core reads only Enable; for an
	// rpc.Endpoint, neither set means automatic: on for sessions whose
	// peer is across a network, off for peers on this host and for
	// datapaths that cannot congest (datapath.TimelyParams.Uncongested).
	// Both set is a configuration error.
	Disable bool
	// LinkRate is the line rate in bytes/s, Timely's initial and maximum
	// rate (default 1.25e9, 10 Gbit/s).
	LinkRate  float64
	MinRate   float64 // bytes/s, default 15 MB/s
	AddRate   float64 // additive increase, bytes/s, default 5 MB/s
	MinRTT    time.Duration
	TLow      time.Duration
	THigh     time.Duration
	HaiThresh int
	EwmaAlpha float64
	Beta      float64
	// The three common-case optimizations of eRPC §5.2.2, each on by
	// default; the No* fields switch one off (factor analysis).
	NoTimelyBypass    bool // update the rate even for small RTTs on uncongested sessions
	NoWheelBypass     bool // put every packet through the rate limiter
	NoBatchTimestamps bool // read Clock per packet instead of once per batch
	// Clock reads the time per packet when NoBatchTimestamps is set.
	Clock func() int64
	// WheelSlot is the timing-wheel granularity (default 1µs); WheelSlots
	// the number of slots (default: horizon of Credits×MTU at MinRate).
	WheelSlot  time.Duration
	WheelSlots int
}

func (c CCConfig) withDefaults() CCConfig {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.LinkRate, 1.25e9)
	def(&c.MinRate, 15e6)
	def(&c.AddRate, 5e6)
	def(&c.EwmaAlpha, 0.46)
	def(&c.Beta, 0.26)
	if c.MinRTT == 0 {
		c.MinRTT = 2 * time.Microsecond
	}
	if c.TLow == 0 {
		c.TLow = 50 * time.Microsecond
	}
	if c.THigh == 0 {
		c.THigh = 1000 * time.Microsecond
	}
	if c.HaiThresh == 0 {
		c.HaiThresh = 5
	}
	if c.WheelSlot == 0 {
		c.WheelSlot = time.Microsecond
	}
	if c.WheelSlots == 0 {
		horizon := float64(DefaultCredits*1024) / c.MinRate * 1e9
		c.WheelSlots = 1 + int(horizon/float64(c.WheelSlot))
	}
	return c
}

// timely is one session's rate state (Mittal et al., eRPC's cc/timely.h).
type timely struct {
	rate       float64 // bytes/s
	prevRTT    float64 // ns
	avgDiff    float64
	negGrad    int
	lastUpdate int64
	nextTx     int64 // desired TX time of the session's last paced packet
	inWheel    int
}

func (t *timely) init(cfg *CCConfig, now int64) {
	*t = timely{rate: cfg.LinkRate, lastUpdate: now}
}

// Rate returns client session num's current Timely rate in bytes/s (0 if none).
func (c *Core) Rate(num uint16) float64 {
	if s := c.session(num); s != nil && s.client {
		return s.cc.rate
	}
	return 0
}

func (c *Core) txTime() int64 {
	if c.cfg.CC.NoBatchTimestamps && c.cfg.CC.Clock != nil {
		return c.cfg.CC.Clock()
	}
	return c.now
}

func (c *Core) rttSample(s *session, sl *slot, p int) {
	cc := &c.cfg.CC
	if !s.ccOn {
		return
	}
	if sl.txTS == nil {
		return
	}
	ts := sl.txTS.at(p)
	if ts == nil || int(ts.pkt) != p || ts.ts < c.rttFrom {
		return
	}
	ts.pkt = -1 // one sample per send: a request's ack and its response do not both count
	now := c.txTime()
	rtt := float64(now - ts.ts)
	t := &s.cc
	if !cc.NoTimelyBypass && t.rate >= cc.LinkRate && rtt <= float64(cc.TLow) {
		return // Timely bypass
	}
	if rtt < float64(cc.MinRTT) {
		return
	}
	c.stats.TimelyUpdates++
	minRTT := float64(cc.MinRTT)
	diff := rtt - t.prevRTT
	if diff < 0 {
		t.negGrad++
	} else {
		t.negGrad = 0
	}
	t.avgDiff = (1-cc.EwmaAlpha)*t.avgDiff + cc.EwmaAlpha*diff
	delta := float64(now-t.lastUpdate) / minRTT
	if delta > 1 {
		delta = 1
	}
	old := t.rate
	switch {
	case rtt < float64(cc.TLow):
		t.rate += cc.AddRate * delta
	case rtt <= float64(cc.THigh):
		if g := t.avgDiff / minRTT; g <= 0 {
			n := 1.0
			if t.negGrad >= cc.HaiThresh {
				n = 5
			}
			t.rate += n * cc.AddRate * delta
		} else {
			t.rate *= 1 - cc.Beta*delta*g
		}
	default:
		t.rate *= 1 - cc.Beta*delta*(1-float64(cc.THigh)/rtt)
	}
	if t.rate < 0.5*old {
		t.rate = 0.5 * old
	}
	if t.rate > cc.LinkRate {
		t.rate = cc.LinkRate
	}
	if t.rate < cc.MinRate {
		t.rate = cc.MinRate
	}
	t.prevRTT = rtt
	t.lastUpdate = now
}

// pace emits a client packet now or schedules it in the timing wheel.
func (c *Core) pace(sl *slot, p *OutPacket) {
	s := sl.s
	if c.bypass(s) {
		c.emit(p) // rate-limiter bypass
		return
	}
	size := float64(HeaderSize + p.Len)
	desired := s.cc.nextTx + int64(size/s.cc.rate*1e9)
	if desired < c.now {
		desired = c.now
	}
	s.cc.nextTx = desired
	if p.ref != nil {
		p.ref.refs++ // the wheel's own reference
	}
	c.wheel.insert(wheelEnt{sl: sl, reqNum: sl.reqNum, pkt: *p}, c.now, desired)
	c.markWheel(sl, int(p.Hdr.PktNum), true)
	sl.inWheel++
	s.cc.inWheel++
	c.stats.RateLimited++
}

// markWheel records that client packet pkt of sl entered (or left) the
// rate limiter. A slot has at most Credits packets in flight, so packet
// numbers modulo Credits tell them apart (eRPC's in_wheel_ array).
func (c *Core) markWheel(sl *slot, pkt int, in bool) {
	if sl.wheelPkt == nil {
		sl.wheelPkt = make([]uint64, (c.cfg.Credits+63)/64) // once per slot
	}
	i := pkt % c.cfg.Credits
	if in {
		sl.wheelPkt[i/64] |= 1 << (i % 64)
	} else {
		sl.wheelPkt[i/64] &^= 1 << (i % 64)
	}
}

// pktInWheel reports whether a copy of client packet pkt of sl waits in
// the rate limiter.
func (c *Core) pktInWheel(sl *slot, pkt int) bool {
	if sl.wheelPkt == nil {
		return false
	}
	i := pkt % c.cfg.Credits
	return sl.wheelPkt[i/64]&(1<<(i%64)) != 0
}

// bypass reports whether s's packets skip the rate limiter (congestion
// control off, or eRPC's bypass: an uncongested session with nothing in
// the wheel).
func (c *Core) bypass(s *session) bool {
	cc := &c.cfg.CC
	return !s.ccOn || (!cc.NoWheelBypass && s.cc.rate >= cc.LinkRate && s.cc.inWheel == 0)
}

type wheelEnt struct {
	sl     *slot
	reqNum uint64
	pkt    OutPacket
	next   int32 // next entry of the same wheel slot (-1: last)
}

// wheelList is one wheel slot: a FIFO of entries (indices into wheel.ents).
type wheelList struct{ head, tail int32 }

// wheel is a Carousel timing wheel: slot i holds the packets due in
// [base+(i-cur)·width, base+(i-cur+1)·width). Its entries live in one
// store with a free list, linked per slot (eRPC chains fixed buckets from
// a mempool likewise), so pacing allocates nothing once the store has
// grown to the most packets ever paced at once (at most the sessions'
// credits).
type wheel struct {
	width int64
	slots []wheelList
	ents  freelist.List[wheelEnt]
	cur   int
	base  int64
	count int
}

func newWheel(cfg CCConfig) *wheel {
	w := &wheel{width: int64(cfg.WheelSlot)}
	if cfg.Enable {
		w.slots = make([]wheelList, cfg.WheelSlots)
		for i := range w.slots {
			w.slots[i] = wheelList{-1, -1}
		}
	}
	return w
}

func (w *wheel) insert(e wheelEnt, now, desired int64) {
	if w.count == 0 {
		w.base = now
	}
	d := (desired - w.base) / w.width
	if d < 0 {
		d = 0
	}
	if d >= int64(len(w.slots)) {
		d = int64(len(w.slots)) - 1
	}
	e.next = -1
	k := w.ents.Add(e)
	l := &w.slots[(w.cur+int(d))%len(w.slots)]
	if l.tail < 0 {
		l.head = k
	} else {
		w.ents.At(l.tail).next = k
	}
	l.tail = k
	w.count++
}

func (w *wheel) next() (int64, bool) {
	if w.count == 0 {
		return 0, false
	}
	return w.base + w.width, true
}

// take removes entry k from the store, returning it.
func (w *wheel) take(k int32) wheelEnt {
	w.count--
	return w.ents.Take(k)
}

// reap transmits every packet whose slot has expired.
func (w *wheel) reap(c *Core) {
	if w.count == 0 {
		return
	}
	for n := 0; w.base+w.width <= c.now && n < len(w.slots) && w.count > 0; n++ {
		l := &w.slots[w.cur]
		for k := l.head; k >= 0; {
			e := w.take(k)
			k = e.next
			w.release(c, &e, true)
		}
		*l = wheelList{-1, -1}
		w.cur = (w.cur + 1) % len(w.slots)
		w.base += w.width
	}
	if w.base+w.width <= c.now {
		w.base = c.now - w.width + 1
	}
}

// release takes e out of the wheel, transmitting it if its request is still
// the slot's current one.
func (w *wheel) release(c *Core, e *wheelEnt, send bool) {
	sl := e.sl
	if sl.reqNum == e.reqNum {
		c.markWheel(sl, int(e.pkt.Hdr.PktNum), false)
	}
	sl.inWheel--
	sl.s.cc.inWheel--
	if send && sl.req != nil && sl.reqNum == e.reqNum && c.sessions[sl.s.num] == sl.s {
		// The RTT starts when the packet leaves the wheel, as in eRPC
		// (process_wheel_st): time spent paced is not network delay, and
		// counting it made Timely cut the rate of a session it had
		// itself slowed down.
		c.stampTx(sl, int(e.pkt.Hdr.PktNum))
		c.emit(&e.pkt)
	}
	if e.pkt.ref != nil {
		c.unref(e.pkt.ref)
	}
}

// dropSession removes a session's packets from the wheel (Appendix B: a
// failed session's queued packets must not keep its messages alive).
func (w *wheel) dropSession(c *Core, s *session) {
	if w.count == 0 || s.cc.inWheel == 0 {
		return
	}
	for i := range w.slots {
		l := &w.slots[i]
		prev := int32(-1)
		for k := l.head; k >= 0; {
			next := w.ents.At(k).next
			if w.ents.At(k).sl.s != s {
				prev, k = k, next
				continue
			}
			if prev < 0 {
				l.head = next
			} else {
				w.ents.At(prev).next = next
			}
			if l.tail == k {
				l.tail = prev
			}
			e := w.take(k)
			w.release(c, &e, false)
			k = next
		}
	}
}
