package proto

import (
	"testing"
	"time"
)

// timelyFixture is a core with congestion control cfg (defaults applied by
// the caller), one client session under it and one of its slots, for
// tests that feed Timely RTT samples directly.
func timelyFixture(cfg CCConfig) (*Core, *session, *slot) {
	c := &Core{cfg: Config{CC: cfg}}
	s := &session{client: true, ccOn: true}
	s.cc.init(&c.cfg.CC, 0)
	return c, s, &slot{s: s, txTS: new(txRing)}
}

func TestTimelyRateReactsToRTT(t *testing.T) {
	cfg := CCConfig{Enable: true}.withDefaults()
	c, s, sl := timelyFixture(cfg)
	sample := func(p int, rtt time.Duration) {
		c.stampTx(sl, p)
		c.now += int64(rtt)
		c.rttSample(s, sl, p)
	}
	// Small RTTs on an uncongested session: bypassed, no update.
	sample(0, 5*time.Microsecond)
	if c.stats.TimelyUpdates != 0 || s.cc.rate != cfg.LinkRate {
		t.Fatalf("bypass: updates %d rate %v", c.stats.TimelyUpdates, s.cc.rate)
	}
	// RTTs above T_high cut the rate (at most by half per update).
	for i := 1; i < 20; i++ {
		sample(i, 2*time.Millisecond)
	}
	if s.cc.rate >= cfg.LinkRate/2 {
		t.Fatalf("rate %v not reduced", s.cc.rate)
	}
	low := s.cc.rate
	// Small RTTs again: additive increase.
	for i := 20; i < 40; i++ {
		sample(i, 10*time.Microsecond)
	}
	if s.cc.rate <= low {
		t.Fatalf("rate %v did not increase from %v", s.cc.rate, low)
	}
	if s.cc.rate < cfg.MinRate || s.cc.rate > cfg.LinkRate {
		t.Fatalf("rate %v out of bounds", s.cc.rate)
	}
}

func TestTimelyNoBypass(t *testing.T) {
	cfg := CCConfig{Enable: true, NoTimelyBypass: true}.withDefaults()
	c, s, sl := timelyFixture(cfg)
	sl.txTS.small[0] = txStamp{pkt: 0, ts: 0}
	c.now = int64(5 * time.Microsecond)
	c.rttSample(s, sl, 0)
	if c.stats.TimelyUpdates != 1 {
		t.Fatal("without the bypass every sample updates the rate")
	}
}

// With the wheel bypass off, every client packet goes through the rate
// limiter and leaves only when its time slot is reaped.
func TestWheelPacing(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e6}})
	w.enqueue(5000, 10) // 5 packets of ~1 KB at 1 MB/s: ~1 ms apart
	if len(w.c2s) != 0 {
		t.Fatalf("%d packets bypassed the wheel", len(w.c2s))
	}
	if w.cli.Stats().RateLimited != 5 {
		t.Fatalf("rate limited %d", w.cli.Stats().RateLimited)
	}
	w.tick(int64(10 * time.Microsecond))
	if len(w.c2s) != 0 {
		t.Fatalf("after 10µs %d packets left the wheel", len(w.c2s))
	}
	w.tick(int64(1500 * time.Microsecond))
	if first := len(w.c2s); first == 0 || first == 5 {
		t.Fatalf("after 1.5ms %d packets left the wheel, want some but not all", first)
	}
	for i := 0; i < 10 && len(w.c2s) < 5; i++ {
		w.tick(int64(time.Millisecond))
	}
	if len(w.c2s) != 5 {
		t.Fatalf("%d packets after 10ms", len(w.c2s))
	}
	w.exchange(20, nil)
	for i := 0; i < 20 && len(w.done) == 0; i++ {
		w.tick(int64(time.Millisecond))
		w.exchange(20, nil)
	}
	if len(w.done) != 1 {
		t.Fatal("not completed")
	}
	w.closeAll()
}

// eRPC Appendix C: a response that arrives while a retransmitted copy of
// the request is in the rate limiter is dropped, and the request message
// is not released while the wheel holds a reference.
func TestWheelHoldsReference(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, RTO: 2 * time.Millisecond, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e5}})
	tag := w.enqueue(100, 10)
	w.tick(int64(1500 * time.Microsecond)) // first copy leaves the wheel
	if len(w.c2s) != 1 {
		t.Fatalf("%d packets", len(w.c2s))
	}
	first := w.c2s[0]
	w.c2s = nil
	// The RTO fires: a retransmitted copy goes into the wheel, scheduled
	// after the first one's pacing slot.
	w.tick(int64(2 * time.Millisecond))
	sl := &w.cli.sessions[0].slot0
	if sl.inWheel == 0 {
		t.Skip("retransmission left the wheel immediately; pacing too fast for this check")
	}
	// The server answers the first copy; the client must drop the answer.
	w.srv.Step(first.b, 0)
	w.flush()
	w.respond()
	w.deliver("s2c", all(len(w.s2c)))
	if w.done[tag] != 0 || w.cli.Stats().DropWheel == 0 {
		t.Fatalf("response accepted while a copy is in the wheel (done %d)", w.done[tag])
	}
	for i := 0; i < 500 && w.done[tag] == 0; i++ {
		w.tick(int64(100 * time.Microsecond))
		w.exchange(10, nil)
	}
	if w.done[tag] != 1 || w.handled[tag] != 1 {
		t.Fatalf("done %d handled %d", w.done[tag], w.handled[tag])
	}
	w.closeAll()
}

// Only a copy of the packet an answer is for blocks the answer (eRPC's
// in_wheel_ per packet): a paced large response has RFRs for later
// packets waiting in the wheel while the answers to the first ones
// arrive, and those answers are accepted. Blocking on any packet of the
// slot in the wheel dropped them, and on kernel UDP a paced 8 MB echo
// then crawled at one packet per RTO.
func TestWheelBlocksOnlyItsOwnPacket(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e5}})
	tag := w.enqueue(100, 6000) // one request packet, six response packets
	for i := 0; i < 100 && len(w.c2s) == 0; i++ {
		w.tick(int64(100 * time.Microsecond))
	}
	w.deliver("c2s", all(len(w.c2s)))
	w.respond()
	w.deliver("s2c", all(len(w.s2c))) // the first response packet: five RFRs go to the wheel
	sl := &w.cli.sessions[0].slot0
	if sl.inWheel != 5 {
		t.Fatalf("%d RFRs in the wheel, want 5", sl.inWheel)
	}
	// 16-byte RFRs at 100 kB/s leave 160 µs apart: release the first.
	for i := 0; i < 100 && len(w.c2s) == 0; i++ {
		w.tick(int64(20 * time.Microsecond))
	}
	if len(w.c2s) != 1 || sl.inWheel != 4 {
		t.Fatalf("%d RFRs sent, %d in the wheel", len(w.c2s), sl.inWheel)
	}
	w.deliver("c2s", all(1))
	rx := sl.numRx
	w.deliver("s2c", all(len(w.s2c)))
	if w.cli.stats.DropWheel != 0 || sl.numRx != rx+1 {
		t.Fatalf("answer to a sent RFR dropped while other RFRs wait (DropWheel %d, numRx %d -> %d)", w.cli.stats.DropWheel, rx, sl.numRx)
	}
	for i := 0; i < 200 && w.done[tag] == 0; i++ {
		w.tick(int64(100 * time.Microsecond))
		w.exchange(10, nil)
	}
	if w.done[tag] != 1 || w.cli.stats.RTOs != 0 {
		t.Fatalf("done %d, RTOs %d", w.done[tag], w.cli.stats.RTOs)
	}
	w.closeAll()
}

// A cancelled request's packets leave the wheel unsent; they must not
// clear the marks of the next request on the same slot, whose packet with
// the same number is still waiting there.
func TestWheelMarksOfCancelledRequest(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e5}})
	a := w.enqueue(100, 10) // 116 B at 100 kB/s: leaves the wheel after ~1.2 ms
	if !w.cli.Cancel(0, a, ErrStaleHandle) {
		t.Fatal("cancel")
	}
	w.flush()
	w.enqueue(100, 10) // the same slot; queued behind the cancelled packet
	sl := &w.cli.sessions[0].slot0
	if sl.inWheel != 2 || !w.cli.pktInWheel(sl, 0) {
		t.Fatalf("inWheel %d, packet 0 marked %v", sl.inWheel, w.cli.pktInWheel(sl, 0))
	}
	for i := 0; i < 100 && sl.inWheel == 2; i++ {
		w.tick(int64(50 * time.Microsecond))
	}
	if sl.inWheel != 1 || len(w.c2s) != 0 {
		t.Fatalf("inWheel %d, %d packets sent: want the cancelled one gone unsent", sl.inWheel, len(w.c2s))
	}
	if !w.cli.pktInWheel(sl, 0) {
		t.Fatal("the cancelled request's packet cleared the mark of the waiting one")
	}
	for i := 0; i < 200 && len(w.done) < 2; i++ {
		w.tick(int64(100 * time.Microsecond))
		w.exchange(10, nil)
	}
	if len(w.done) != 2 {
		t.Fatalf("%d of 2 requests done", len(w.done))
	}
	w.closeAll()
}

func TestRemoveSessionDrainsWheel(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e5}})
	w.enqueue(8000, 10)
	if w.cli.wheel.count == 0 {
		t.Fatal("nothing in the wheel")
	}
	_ = w.cli.RemoveSession(0, nil)
	w.flush()
	if w.cli.wheel.count != 0 {
		t.Fatalf("%d packets left in the wheel", w.cli.wheel.count)
	}
	w.closeAll()
}

// A paced packet's RTT starts when it leaves the wheel (eRPC stamps it in
// process_wheel_st): the time it waited there is the rate limiter's, not
// the network's, and counting it made Timely cut the rate of sessions it
// had itself slowed down.
func TestWheelDelayIsNotRTT(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e6}})
	w.enqueue(100, 10) // one packet, paced
	if len(w.c2s) != 0 {
		t.Fatal("the packet bypassed the wheel")
	}
	for i := 0; i < 100 && len(w.c2s) == 0; i++ {
		w.tick(int64(100 * time.Microsecond))
	}
	if len(w.c2s) != 1 {
		t.Fatalf("%d packets left the wheel", len(w.c2s))
	}
	sl := &w.cli.sessions[0].slot0
	if got := sl.txTS.small[0].ts; got != w.cli.now {
		t.Fatalf("send time stamped at %d, the packet left the wheel at %d", got, w.cli.now)
	}
	w.exchange(20, nil)
	if len(w.done) != 1 {
		t.Fatal("not completed")
	}
	w.closeAll()
}

// An RTT that spans a stall of the caller's own loop (no Observe for T_low
// or longer) measures the stall, not the network: Timely skips it. Packets
// sent after the stall are sampled again.
func TestTimelySkipsSamplesAcrossLocalStall(t *testing.T) {
	cfg := CCConfig{Enable: true}.withDefaults()
	c, s, sl := timelyFixture(cfg)
	c.Observe(int64(time.Millisecond))
	sl.txTS.small[0] = txStamp{pkt: 0, ts: c.now}
	c.Observe(c.now + int64(3*time.Millisecond)) // the loop was away 3 ms
	c.rttSample(s, sl, 0)
	if c.stats.TimelyUpdates != 0 || s.cc.rate != cfg.LinkRate {
		t.Fatalf("sample across the stall used: updates %d rate %v", c.stats.TimelyUpdates, s.cc.rate)
	}
	// A packet sent after the stall that takes 3 ms is congestion.
	sl.txTS.small[1] = txStamp{pkt: 1, ts: c.now}
	for i := 0; i < 75; i++ {
		c.Observe(c.now + int64(40*time.Microsecond)) // the loop keeps running
	}
	c.rttSample(s, sl, 1)
	if c.stats.TimelyUpdates != 1 || s.cc.rate >= cfg.LinkRate {
		t.Fatalf("sample after the stall skipped: updates %d rate %v", c.stats.TimelyUpdates, s.cc.rate)
	}
}

// A request larger than eight packets keeps a stamp for every packet of
// the credit window in flight (eRPC: kSessionCredits per slot), so Timely
// still gets RTT samples for large messages; with an 8-entry ring it lost
// nearly all of them and a rate it had cut never recovered.
func TestTimelySamplesLargeRequests(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoTimelyBypass: true}})
	tag := w.enqueue(64*1000, 10) // 64 packets, 32 credits in flight
	for i := 0; i < 1000 && w.done[tag] == 0; i++ {
		w.tick(int64(10 * time.Microsecond))
		w.exchange(1, nil)
	}
	if w.done[tag] != 1 {
		t.Fatal("not completed")
	}
	// One sample per credit return or response packet; the last packet's
	// is its response.
	if got := w.cli.Stats().TimelyUpdates; got < 60 {
		t.Fatalf("%d Timely updates for a 64-packet request", got)
	}
	w.closeAll()
}

// A request whose handler runs long (a worker handler) is acknowledged
// by the server (Core.Ack): the client's RTT sample then measures the
// network, not the handler, and the session keeps its rate. Without the
// acknowledgement the response's sample reads 3 ms of handler time as
// congestion and cuts the rate.
func TestAckKeepsHandlerTimeOutOfRTT(t *testing.T) {
	for _, ack := range []bool{true, false} {
		t.Run(map[bool]string{true: "ack", false: "noack"}[ack], func(t *testing.T) {
			w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: true}})
			w.enqueue(100, 10)
			w.deliverRequest()
			w.tick(int64(20 * time.Microsecond))
			if ack {
				if err := w.srv.Ack(w.pending[0].Handle); err != nil {
					t.Fatal(err)
				}
				w.flush()
				if len(w.s2c) != 1 || w.s2c[0].hdr.Type != PktCR || w.s2c[0].hdr.PktNum != 0 {
					t.Fatalf("ack not sent: %v", w.s2c)
				}
				credits := w.cli.Credits(0)
				w.deliver("s2c", all(1))
				if w.cli.stats.Acks != 1 || w.srv.stats.Acks != 1 {
					t.Fatalf("acks: client %d server %d", w.cli.stats.Acks, w.srv.stats.Acks)
				}
				if w.cli.Credits(0) != credits || len(w.done) != 0 {
					t.Fatal("an ack returned a credit or completed the request")
				}
			}
			// The handler runs 3 ms (both loops keep running meanwhile).
			for i := 0; i < 75; i++ {
				w.tick(int64(40 * time.Microsecond))
			}
			w.exchange(10, nil)
			if len(w.done) != 1 || w.cli.stats.RTOs != 0 {
				t.Fatalf("done %d, RTOs %d", len(w.done), w.cli.stats.RTOs)
			}
			rate, link := w.cli.sessions[0].cc.rate, w.cli.cfg.CC.LinkRate
			if ack && rate != link {
				t.Fatalf("rate cut to %v of %v with the ack", rate, link)
			}
			if !ack && rate >= link {
				t.Fatalf("rate %v not cut without the ack: the test no longer measures handler time", rate)
			}
			w.closeAll()
		})
	}
}

// A client under congestion control marks its request packets FlagAck and
// the server acknowledges a request answered later; a client without it
// leaves the flag off, and the server's Ack sends nothing (the client
// would only drop the packet).
func TestAckOnlyWhenAsked(t *testing.T) {
	for _, cc := range []bool{true, false} {
		t.Run(map[bool]string{true: "cc", false: "nocc"}[cc], func(t *testing.T) {
			w := newWorld(t, Config{DataPerPkt: 1000, CC: CCConfig{Enable: cc}})
			w.enqueue(2500, 10) // three request packets
			for _, p := range w.c2s {
				if got := p.hdr.Flags&FlagAck != 0; got != cc {
					t.Fatalf("request packet %d: FlagAck %v, want %v", p.hdr.PktNum, got, cc)
				}
			}
			w.deliverRequest()
			if err := w.srv.Ack(w.pending[0].Handle); err != nil {
				t.Fatal(err)
			}
			w.flush()
			acks := 0
			for _, p := range w.s2c {
				if p.hdr.Type == PktCR && int(p.hdr.PktNum) == 2 {
					acks++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[cc]; acks != want || w.srv.stats.Acks != uint64(want) {
				t.Fatalf("%d acknowledgements sent (stats %d), want %d", acks, w.srv.stats.Acks, want)
			}
			w.respond()
			w.exchange(20, nil)
			if len(w.done) != 1 {
				t.Fatal("request not completed")
			}
		})
	}
}

// Acks that cannot belong to the current request are dropped: one for a
// request whose response already arrived in part, one with data, and one
// for a request packet that was never sent.
func TestStaleAcksDropped(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000})
	w.enqueue(100, 3000) // a 3-packet response
	w.deliver("c2s", all(len(w.c2s)))
	h := w.pending[0].Handle
	w.respond()
	w.deliver("s2c", all(1)) // the first response packet
	ack := make([]byte, HeaderSize)
	hdr := Header{ReqType: 1, DestSession: 0, Type: PktCR, PktNum: 0, ReqNum: h.ReqNum}
	if err := hdr.Encode(ack); err != nil {
		t.Fatal(err)
	}
	order := w.cli.stats.DropOrder
	w.cli.Step(ack, 0)
	if w.cli.stats.DropOrder != order+1 || w.cli.stats.Acks != 0 {
		t.Fatalf("ack after the response started: DropOrder %d->%d, acks %d", order, w.cli.stats.DropOrder, w.cli.stats.Acks)
	}
	bad := w.cli.stats.DropBad
	w.cli.Step(append(ack, 1), 0)
	if w.cli.stats.DropBad != bad+1 {
		t.Fatal("an ack with data was not dropped as bad")
	}
	if err := w.srv.Ack(h); err != ErrStaleHandle {
		t.Fatalf("Ack of an answered request: %v", err)
	}
	w.exchange(20, nil)
	if len(w.done) != 1 {
		t.Fatal("not completed")
	}
	// A new request rolled back (the loss scan's go-back-N) before its
	// ack arrived: the ack names a packet not in flight and is stale.
	w.enqueue(100, 10)
	w.drop("c2s", all(len(w.c2s)))
	sl := &w.cli.sessions[0].slot0
	w.cli.returnCredits(sl)
	hdr.ReqNum = sl.reqNum
	if err := hdr.Encode(ack); err != nil {
		t.Fatal(err)
	}
	order = w.cli.stats.DropOrder
	w.cli.Step(ack[:HeaderSize], 0)
	if w.cli.stats.DropOrder != order+1 || w.cli.stats.Acks != 0 {
		t.Fatal("ack of an unsent packet accepted")
	}
	w.cli.kick(sl) // the rest of the loss scan's rollback: resend
	w.flush()
	w.exchange(20, nil)
	if len(w.done) != 2 {
		t.Fatal("second request not completed")
	}
	w.closeAll()
}

// A client session added with NoCC bypasses congestion control in a core
// that has it: no pacing even with the wheel bypass off, no RTT samples
// even with the Timely bypass off, no send stamps. The other sessions of
// the core keep it.
func TestSessionWithoutCC(t *testing.T) {
	cfg := Config{DataPerPkt: 1000, CC: CCConfig{Enable: true, NoWheelBypass: true, NoTimelyBypass: true, LinkRate: 1e5}}
	w := newWorldSession(t, cfg, SessionConfig{NoCC: true})
	if w.cli.CCOn(0) {
		t.Fatal("CCOn for a NoCC session")
	}
	w.enqueue(3000, 10)
	if len(w.c2s) != 3 || w.cli.stats.RateLimited != 0 {
		t.Fatalf("%d of 3 packets sent at once, %d rate limited", len(w.c2s), w.cli.stats.RateLimited)
	}
	w.tick(int64(20 * time.Microsecond))
	w.exchange(20, nil)
	if len(w.done) != 1 || w.cli.stats.TimelyUpdates != 0 || w.cli.sessions[0].slot0.txTS != nil {
		t.Fatalf("done %d, Timely updates %d, stamps %v", len(w.done), w.cli.stats.TimelyUpdates, w.cli.sessions[0].slot0.txTS != nil)
	}
	w.closeAll()

	w = newWorld(t, cfg)
	if !w.cli.CCOn(0) {
		t.Fatal("CCOn false for a session of a core with congestion control")
	}
	w.enqueue(3000, 10)
	if w.cli.stats.RateLimited != 3 {
		t.Fatalf("%d of 3 packets rate limited", w.cli.stats.RateLimited)
	}
	w.closeAll()
}
