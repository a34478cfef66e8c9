package proto

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

func TestSmallRPC(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000})
	tag := w.enqueue(32, 32)
	if len(w.c2s) != 1 {
		t.Fatalf("want 1 request packet, got %d", len(w.c2s))
	}
	w.deliver("c2s", all(1))
	if len(w.pending) != 1 {
		t.Fatalf("handler not invoked")
	}
	w.respond()
	w.deliver("s2c", all(1))
	if w.done[tag] != 1 || w.handled[tag] != 1 {
		t.Fatalf("done=%d handled=%d\n%s", w.done[tag], w.handled[tag], w.log.String())
	}
	if c := w.cli.Credits(0); c != DefaultCredits {
		t.Fatalf("credits %d", c)
	}
	w.closeAll()
}

func TestLargeRPCGeometry(t *testing.T) {
	for _, sel := range []bool{false, true} {
		w := newWorld(t, Config{DataPerPkt: 100, Selective: sel})
		tag := w.enqueue(1000, 750) // R=10, S=8
		w.exchange(100, nil)
		if w.done[tag] != 1 || w.handled[tag] != 1 {
			t.Fatalf("sel=%v: done=%d handled=%d", sel, w.done[tag], w.handled[tag])
		}
		st := w.srv.Stats()
		// 9 CRs + 8 response packets; client: 10 request packets + 7 RFRs.
		if st.TxCtrl != 9 || st.TxData != 8 {
			t.Fatalf("server sent %d ctrl %d data", st.TxCtrl, st.TxData)
		}
		ct := w.cli.Stats()
		if ct.TxData != 10 || ct.TxCtrl != 7 {
			t.Fatalf("client sent %d data %d ctrl", ct.TxData, ct.TxCtrl)
		}
		w.closeAll()
	}
}

func TestZeroSizeMessages(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	tag := w.enqueue(0, 0)
	w.exchange(10, nil)
	if w.done[tag] != 1 {
		t.Fatal("zero-size RPC did not complete")
	}
	w.closeAll()
}

// Server-side request reordering: past, current (retransmission), future.
func TestServerReqReorderSmall(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	tag := w.enqueue(50, 20)
	req := w.c2s[0]
	w.deliver("c2s", all(1))
	// Current request retransmitted while the handler runs: dropped.
	w.srv.Step(req.b, 0)
	w.flush()
	if len(w.s2c) != 0 || w.handled[tag] != 1 {
		t.Fatalf("retransmission during handler: %d packets, handled %d", len(w.s2c), w.handled[tag])
	}
	w.respond()
	w.drop("s2c", all(1)) // the response is lost
	// Retransmission after the response: the saved response is resent, the handler is not run again.
	w.srv.Step(req.b, 0)
	w.flush()
	if len(w.s2c) != 1 || w.handled[tag] != 1 || w.srv.Stats().DupResponses != 1 {
		t.Fatalf("retransmission after response: %d packets, handled %d", len(w.s2c), w.handled[tag])
	}
	w.deliver("s2c", all(1))
	if w.done[tag] != 1 {
		t.Fatal("not completed")
	}
	// Next request on another slot, then the old (past) request again: dropped.
	tag2 := w.enqueue(50, 20)
	w.exchange(10, nil)
	before := w.srv.Stats().DropOrder
	// A past request: same slot as req but an older request number.
	var h Header
	_ = h.Decode(req.b)
	h.ReqNum -= uint64(DefaultWindow)
	old := append([]byte(nil), req.b...)
	_ = h.Encode(old)
	w.srv.Step(old, 0)
	w.flush()
	if w.srv.Stats().DropOrder != before+1 || len(w.s2c) != 0 {
		t.Fatal("past request not dropped")
	}
	if w.handled[tag2] != 1 || w.done[tag2] != 1 {
		t.Fatal("second request")
	}
	w.closeAll()
}

func TestServerReqReorderLarge(t *testing.T) {
	for _, sel := range []bool{false, true} {
		w := newWorld(t, Config{DataPerPkt: 100, Selective: sel, Credits: 8})
		tag := w.enqueue(500, 10) // 5 packets
		if len(w.c2s) != 5 {
			t.Fatalf("sent %d", len(w.c2s))
		}
		// Future packet: 2 before 1.
		w.deliver("c2s", []int{0, 2})
		crs := len(w.s2c)
		if !sel && crs != 1 {
			t.Fatalf("go-back-N: future packet must be dropped, got %d CRs", crs)
		}
		if sel && crs != 2 {
			t.Fatalf("selective: future packet must be accepted, got %d CRs", crs)
		}
		// Past packet (0 again): CR re-sent.
		w.srv.Step(w.s2c[0].b[:0:0], 0) // garbage to the server: dropped
		pkt0 := []byte(nil)
		_ = pkt0
		w.exchange(100, nil)
		// The client never rolls back without an RTO; under go-back-N packet 2 is lost for good.
		for i := 0; i < 10 && w.done[tag] == 0; i++ {
			w.tick(int64(DefaultRTO))
			w.exchange(100, nil)
		}
		if w.done[tag] != 1 || w.handled[tag] != 1 {
			t.Fatalf("sel=%v done=%d handled=%d\n%s", sel, w.done[tag], w.handled[tag], w.log.String())
		}
		w.closeAll()
	}
}

// Client-side response reordering: duplicate (past) and future response packets.
func TestClientRespReorder(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Credits: 8})
	tag := w.enqueue(10, 400) // R=1, S=4
	w.deliver("c2s", all(1))
	w.respond()
	resp0 := w.s2c[0]
	w.deliver("s2c", all(1))
	if len(w.c2s) != 3 {
		t.Fatalf("want 3 RFRs, got %d", len(w.c2s))
	}
	// Duplicate of response 0: dropped.
	before := w.cli.Stats().DropOrder
	w.cli.Step(resp0.b, 0)
	w.flush()
	if w.cli.Stats().DropOrder != before+1 {
		t.Fatal("duplicate response not dropped")
	}
	w.deliver("c2s", all(3))
	// Deliver response 3 before 1 and 2: future, dropped (go-back-N).
	w.deliver("s2c", []int{2})
	if w.cli.Stats().DropOrder != before+2 {
		t.Fatal("future response not dropped")
	}
	w.deliver("s2c", all(2))
	if w.done[tag] != 0 {
		t.Fatal("completed without the last packet")
	}
	w.tick(int64(DefaultRTO)) // rollback: RFR for packet 3 resent
	if len(w.c2s) != 1 || w.c2s[0].hdr.Type != PktRFR || w.c2s[0].hdr.PktNum != 3 {
		t.Fatalf("rollback sent %v", w.c2s)
	}
	w.exchange(10, nil)
	if w.done[tag] != 1 {
		t.Fatal("not completed")
	}
	w.closeAll()
}

func TestCreditReturnAndKick(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Credits: 4})
	tag := w.enqueue(1000, 10) // R=10
	if len(w.c2s) != 4 || w.cli.Credits(0) != 0 {
		t.Fatalf("kick with 4 credits sent %d, credits %d", len(w.c2s), w.cli.Credits(0))
	}
	// A second request finds no credits: it takes a slot but sends nothing.
	tag2 := w.enqueue(10, 10)
	if len(w.c2s) != 4 {
		t.Fatal("kick without credits sent packets")
	}
	w.deliver("c2s", all(2)) // 2 CRs come back
	if len(w.s2c) != 2 {
		t.Fatalf("want 2 CRs, got %d", len(w.s2c))
	}
	w.deliver("s2c", all(2))
	if len(w.c2s) != 4 {
		t.Fatalf("2 credits returned should allow 2 more packets, in flight %d", len(w.c2s))
	}
	w.checkInvariants()
	w.exchange(100, nil)
	if w.done[tag] != 1 || w.done[tag2] != 1 {
		t.Fatal("not completed")
	}
	if w.cli.Credits(0) != 4 {
		t.Fatalf("credits %d after completion", w.cli.Credits(0))
	}
	w.closeAll()
}

func TestRFRCreditsPaced(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Credits: 2})
	tag := w.enqueue(10, 1000) // S=10
	w.deliver("c2s", all(1))
	w.respond()
	w.deliver("s2c", all(1))
	if len(w.c2s) != 2 {
		t.Fatalf("RFRs limited by 2 credits, got %d", len(w.c2s))
	}
	for _, p := range w.c2s {
		if p.hdr.Type != PktRFR {
			t.Fatalf("not an RFR: %v", p.hdr)
		}
	}
	w.exchange(100, nil)
	if w.done[tag] != 1 {
		t.Fatal("not completed")
	}
	w.closeAll()
}

func TestRollback(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Credits: 8})
	tag := w.enqueue(800, 10) // R=8
	w.drop("c2s", []int{3})
	w.exchange(10, nil) // 3 CRs come back (0..2); 4..7 dropped as future
	if w.done[tag] != 0 {
		t.Fatal("completed despite loss")
	}
	st := w.cli.sessions[0].slot0
	if st.numRx != 3 || st.numTx != 8 {
		t.Fatalf("numRx %d numTx %d", st.numRx, st.numTx)
	}
	w.tick(int64(DefaultRTO) / 2)
	if len(w.c2s) != 0 {
		t.Fatal("retransmitted before the RTO")
	}
	w.tick(int64(DefaultRTO))
	if len(w.c2s) != 5 || w.c2s[0].hdr.PktNum != 3 {
		t.Fatalf("go-back-N should resend packets 3..7, got %d", len(w.c2s))
	}
	if w.cli.Stats().Retransmits != 5 {
		t.Fatalf("retransmits %d", w.cli.Stats().Retransmits)
	}
	w.exchange(10, nil)
	if w.done[tag] != 1 || w.handled[tag] != 1 {
		t.Fatal("not completed")
	}
	w.closeAll()
}

func TestSelectiveResendsOnlyMissing(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Credits: 8, Selective: true})
	tag := w.enqueue(800, 10)
	w.drop("c2s", []int{3})
	w.exchange(10, nil)
	// Four packets (4..7) acknowledged after the hole: fast retransmission of 3 only.
	if w.cli.Stats().FastRetransmits != 1 || w.cli.Stats().Retransmits != 1 {
		t.Fatalf("fast retransmits %d retransmits %d", w.cli.Stats().FastRetransmits, w.cli.Stats().Retransmits)
	}
	if w.done[tag] != 1 || w.handled[tag] != 1 {
		t.Fatalf("not completed\n%s", w.log.String())
	}
	w.closeAll()
}

func TestBacklog(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	var tags []uint64
	for i := 0; i < 20; i++ {
		tags = append(tags, w.enqueue(150, 150))
	}
	if w.cli.Pending(0) != 20 {
		t.Fatalf("pending %d", w.cli.Pending(0))
	}
	w.exchange(200, nil)
	for _, tg := range tags {
		if w.done[tg] != 1 || w.handled[tg] != 1 {
			t.Fatalf("tag %d done %d handled %d", tg, w.done[tg], w.handled[tg])
		}
	}
	w.closeAll()
}

// A backlog that never drains (one slot, always three waiting) keeps
// its array bounded: it used to grow by one entry per request.
func TestSteadyBacklogBounded(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Window: 1})
	for i := 0; i < 4; i++ {
		w.enqueue(10, 10)
	}
	// 200 rounds: the harness tells requests of one size apart by a
	// pattern that repeats every 256 tags.
	for i := 0; i < 200; i++ {
		w.deliver("c2s", all(len(w.c2s)))
		w.respond()
		w.deliver("s2c", all(len(w.s2c)))
		w.enqueue(10, 10)
		if got := w.cli.Pending(0); got != 4 {
			t.Fatalf("round %d: %d pending, want 4", i, got)
		}
	}
	if c := cap(w.cli.session(0).backlog); c > 16 {
		t.Fatalf("backlog array grew to %d entries for 3 waiting requests", c)
	}
	w.exchange(100, nil)
	if len(w.done) != 204 {
		t.Fatalf("%d requests completed, want 204", len(w.done))
	}
	w.closeAll()
}

func TestBacklogLimit(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Window: 1, MaxBacklog: 1})
	w.enqueue(10, 10)
	w.enqueue(10, 10)
	m := w.newMsg(1, 10)
	if err := w.cli.Enqueue(0, 1, m, 99); !errors.Is(err, ErrBacklogFull) {
		t.Fatalf("got %v", err)
	}
	w.released++ // the caller keeps m on error
	if err := w.cli.Enqueue(0, 1, &testMsg{b: make([]byte, DefaultMaxMsgSize+1)}, 1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
	if err := w.srv.Enqueue(5, 1, m, 1); !errors.Is(err, ErrNotClient) {
		t.Fatalf("got %v", err)
	}
	if err := w.cli.Enqueue(9, 1, m, 1); !errors.Is(err, ErrNoSession) {
		t.Fatalf("got %v", err)
	}
	w.exchange(50, nil)
	w.closeAll()
}

// The server buries a response on the next request, but a response whose
// packets are still queued (Ready not yet advanced) stays referenced.
func TestResponseNotReleasedWhileQueued(t *testing.T) {
	// Both a response kept in its slot (SlotInline) and a larger one.
	for _, n := range []int{10, SlotInline + 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testResponseNotReleasedWhileQueued(t, n) })
	}
}

func testResponseNotReleasedWhileQueued(t *testing.T, n int) {
	w := newWorld(t, Config{DataPerPkt: 100, Window: 1})
	w.enqueue(10, n)
	w.deliver("c2s", all(1))
	e := w.pending[0]
	w.pending = nil
	resp := w.newMsg(e.Tag+1000, n)
	if err := w.srv.Respond(e.Handle, resp); err != nil {
		t.Fatal(err)
	}
	rd := w.srv.Ready() // the response packet is "in the TX queue"
	if len(rd.Packets) != 1 {
		t.Fatal("no response packet")
	}
	pkt := encodePkt(&rd.Packets[0])
	// Deliver the response, complete, send the next request on the same slot.
	w.cli.Step(pkt, 0)
	w.flush()
	w.enqueue(10, 10)
	w.deliver("c2s", all(1)) // buries resp
	if resp.freed {
		t.Fatal("response released while a packet referring to it is queued")
	}
	w.srv.Advance(rd)
	if !resp.freed {
		t.Fatal("response not released after the queue drained")
	}
	w.respond()
	w.exchange(10, nil)
	w.closeAll()
}

// TestSmallResponseKeptInSlot: a response of at most SlotInline bytes is
// copied into its slot and its message released once the first send is
// handed over; a retransmitted request is answered from the slot's copy,
// byte for byte, and the handler still runs once. A larger response keeps
// its message until the slot's next request buries it.
func TestSmallResponseKeptInSlot(t *testing.T) {
	for _, n := range []int{0, 1, 32, SlotInline, SlotInline + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := newWorld(t, Config{DataPerPkt: 100, Window: 1})
			tag := w.enqueue(10, n)
			w.deliverRequest()
			e := w.pending[0]
			w.pending = nil
			resp := w.newMsg(e.Tag+1000, n)
			if err := w.srv.Respond(e.Handle, resp); err != nil {
				t.Fatal(err)
			}
			inSlot := n <= SlotInline
			if got := w.srv.sessions[5].slot0.respInl; got != inSlot {
				t.Fatalf("kept in slot %v, want %v", got, inSlot)
			}
			w.flush() // the response is sent (and dropped below)
			if resp.freed != inSlot {
				t.Fatalf("released after its first send: %v, want %v", resp.freed, inSlot)
			}
			w.drop("s2c", all(len(w.s2c)))
			w.tick(int64(DefaultRTO) + int64(DefaultRTO)/10) // the client retransmits its request
			if len(w.c2s) != 1 {
				t.Fatalf("%d client packets after the RTO, want the retransmission", len(w.c2s))
			}
			w.exchange(10, nil) // the server answers the duplicate from its slot
			if w.done[tag] != 1 || w.handled[tag] != 1 || w.badData != 0 {
				t.Fatalf("done %d handled %d bad data %d", w.done[tag], w.handled[tag], w.badData)
			}
			if st := w.srv.Stats(); st.DupResponses != 1 {
				t.Fatalf("%d duplicate responses sent, want 1", st.DupResponses)
			}
			w.exchange(10, nil)
			w.enqueue(10, 10) // buries the response
			w.deliverRequest()
			if !resp.freed {
				t.Fatal("response not released after its slot's next request")
			}
			w.respond()
			w.exchange(10, nil)
			w.closeAll()
		})
	}
}

func TestRequestNotReleasedWhileQueued(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	m := w.newMsg(1, 10)
	w.nextTag = 1
	w.reqSizes[1], w.respSize[1] = 10, 10
	if err := w.cli.Enqueue(0, 1, m, 1); err != nil {
		t.Fatal(err)
	}
	rdc := w.cli.Ready()
	w.srv.Step(encodePkt(&rdc.Packets[0]), 0)
	w.flush()
	w.respond()
	w.deliver("s2c", all(1)) // completes while the request packet is "queued"
	if w.done[1] != 1 {
		t.Fatal("not completed")
	}
	if m.freed {
		t.Fatal("request released while queued")
	}
	w.cli.Advance(rdc)
	if !m.freed {
		t.Fatal("request not released")
	}
	w.closeAll()
}

func TestRemoveSessionFailsPending(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	var tags []uint64
	for i := 0; i < 12; i++ {
		tags = append(tags, w.enqueue(300, 300))
	}
	w.deliver("c2s", all(5))
	boom := errors.New("peer failed")
	if err := w.cli.RemoveSession(0, boom); err != nil {
		t.Fatal(err)
	}
	w.flush()
	for _, tg := range tags {
		if w.done[tg] != 1 {
			t.Fatalf("tag %d completed %d times", tg, w.done[tg])
		}
	}
	if w.cli.Stats().Failed != 12 {
		t.Fatalf("failed %d", w.cli.Stats().Failed)
	}
	// Handles into a removed server session are stale.
	w.exchange(1, nil)
	e := Event{Handle: ReqHandle{Session: 5, Gen: 12345}}
	if err := w.srv.Respond(e.Handle, w.newMsg(1, 1)); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("got %v", err)
	}
	w.released++
	w.closeAll()
}

func TestRandomLoss(t *testing.T) {
	for _, sel := range []bool{false, true} {
		for seed := uint64(1); seed <= 6; seed++ {
			rng := rand.New(rand.NewPCG(seed, 99))
			w := newWorld(t, Config{DataPerPkt: 64, Selective: sel})
			var tags []uint64
			for i := 0; i < 10; i++ {
				req := 64*64 + rng.IntN(32*64) // 64-96 packets
				resp := rng.IntN(40 * 64)
				tags = append(tags, w.enqueue(req, resp))
			}
			lossy := func() bool { return rng.Float64() < 0.3 }
			for round := 0; round < 40000; round++ {
				w.exchange(20, lossy)
				if len(w.done) == len(tags) {
					break
				}
				w.tick(int64(DefaultRTO) / 10)
			}
			for _, tg := range tags {
				if w.done[tg] != 1 || w.handled[tg] != 1 {
					t.Fatalf("sel=%v seed=%d: tag %d done %d handled %d\n%s\n%+v\n%+v", sel, seed, tg, w.done[tg], w.handled[tg], w.state(), w.cli.Stats(), w.srv.Stats())
				}
			}
			w.checkInvariants()
			w.closeAll()
		}
	}
}

func TestDuplicationAndReorder(t *testing.T) {
	for _, sel := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, 7))
		w := newWorld(t, Config{DataPerPkt: 50, Selective: sel})
		var tags []uint64
		for i := 0; i < 16; i++ {
			tags = append(tags, w.enqueue(rng.IntN(2000), rng.IntN(2000)))
		}
		for round := 0; round < 3000 && len(w.done) < len(tags); round++ {
			for len(w.pending) > 0 {
				w.respond()
			}
			for _, dst := range []*Core{w.srv, w.cli} {
				q := &w.c2s
				if dst == w.cli {
					q = &w.s2c
				}
				pkts := *q
				*q = nil
				rng.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
				for i, p := range pkts {
					dst.Step(p.b, i)
					if rng.IntN(4) == 0 {
						dst.Step(p.b, i) // duplicate
					}
				}
				w.flush()
				w.checkInvariants()
			}
			w.tick(int64(DefaultRTO) / 10)
		}
		for _, tg := range tags {
			if w.done[tg] != 1 || w.handled[tg] != 1 {
				t.Fatalf("sel=%v tag %d done %d handled %d", sel, tg, w.done[tg], w.handled[tg])
			}
		}
		w.closeAll()
	}
}

func TestNoAllocsSteadyState(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   CCConfig
	}{
		{"plain", CCConfig{}},
		{"paced", CCConfig{Enable: true, NoWheelBypass: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { testNoAllocsSteadyState(t, tc.cc) })
	}
}

func testNoAllocsSteadyState(t *testing.T, cc CCConfig) {
	cli, _ := New(Config{DataPerPkt: 1000, CC: cc}, &testAlloc{})
	srv, _ := New(Config{DataPerPkt: 1000}, &testAlloc{})
	_ = cli.AddSession(SessionConfig{Num: 0, Client: true, Remote: 0, Peer: srvAddr})
	_ = srv.AddSession(SessionConfig{Num: 0, Remote: 0, Peer: cliAddr})
	released := 0
	req := &testMsg{b: make([]byte, 32), released: &released}
	resp := &testMsg{b: make([]byte, 32), released: &released}
	buf := make([]byte, 2048)
	move := func(from, to *Core) {
		rd := from.Ready()
		for i := range rd.Packets {
			p := &rd.Packets[i]
			_ = p.Hdr.Encode(buf)
			to.Step(buf[:HeaderSize+p.Len], 0)
		}
		from.Advance(rd)
	}
	var h ReqHandle
	var now int64
	round := func() {
		req.freed, resp.freed = false, false
		_ = cli.Enqueue(0, 1, req, 1)
		now += int64(10 * time.Microsecond) // a paced packet leaves the wheel
		cli.Tick(now)
		move(cli, srv)
		rd := srv.Ready()
		for _, e := range rd.Events {
			h = e.Handle
		}
		srv.Advance(rd)
		_ = srv.Respond(h, resp)
		move(srv, cli)
		cli.Advance(cli.Ready())
	}
	for i := 0; i < 100; i++ {
		round()
	}
	if n := testing.AllocsPerRun(1000, round); n != 0 {
		t.Fatalf("%v allocations per RPC", n)
	}
	if cc.Enable && cli.Stats().RateLimited == 0 {
		t.Fatal("no packet went through the rate limiter")
	}
}

func TestRespondStatusAndCancel(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100, Window: 1})
	tag := w.enqueue(10, 0)
	w.deliver("c2s", all(1))
	e := w.pending[0]
	w.pending = nil
	if err := w.srv.RespondStatus(e.Handle, StatusNoHandler); err != nil {
		t.Fatal(err)
	}
	if err := w.srv.RespondStatus(e.Handle, StatusNoHandler); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("second answer: %v", err)
	}
	w.flush()
	var got Status
	rd := w.cli.Ready()
	_ = rd
	w.cli.Advance(rd)
	w.cli.Step(w.s2c[0].b, 0)
	w.s2c = nil
	rd = w.cli.Ready()
	for _, ev := range rd.Events {
		got = ev.Status
		w.done[ev.Tag]++
	}
	w.cli.Advance(rd)
	if got != StatusNoHandler || w.done[tag] != 1 {
		t.Fatalf("status %d done %d", got, w.done[tag])
	}
	// Cancel one in flight and one backlogged.
	t1 := w.enqueue(500, 10)
	t2 := w.enqueue(10, 10)
	if !w.cli.Cancel(0, t2, ErrSessionDown) || !w.cli.Cancel(0, t1, ErrSessionDown) {
		t.Fatal("cancel did not find the requests")
	}
	w.flush()
	if w.done[t1] != 1 || w.done[t2] != 1 || w.cli.Credits(0) != DefaultCredits {
		t.Fatalf("done %d %d credits %d", w.done[t1], w.done[t2], w.cli.Credits(0))
	}
	// Late packets of the cancelled request are harmless; a new request works.
	w.exchange(20, nil)
	t3 := w.enqueue(10, 10)
	w.exchange(20, nil)
	for i := 0; i < 5 && w.done[t3] == 0; i++ {
		w.tick(int64(DefaultRTO) * 2)
		w.exchange(20, nil)
	}
	if w.done[t3] != 1 {
		t.Fatalf("request after cancel not completed\n%s", w.log.String())
	}
	w.closeAll()
}

func TestResponseLargerThanClientLimit(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	// A client with a smaller limit than the server.
	small, err := New(Config{DataPerPkt: 100, MaxMsgSize: 500}, &w.ca)
	if err != nil {
		t.Fatal(err)
	}
	w.cli = small
	_ = w.cli.AddSession(SessionConfig{Num: 0, Client: true, Remote: 5, Peer: srvAddr})
	tag := w.enqueue(10, 1000)
	w.exchange(10, nil)
	if w.done[tag] != 1 || w.cli.Stats().Failed != 1 {
		t.Fatalf("oversized response: done %d failed %d", w.done[tag], w.cli.Stats().Failed)
	}
	w.closeAll()
}

func TestStepFromChecksPeer(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	tag := w.enqueue(10, 10)
	req := w.c2s[0].b
	w.c2s = nil
	w.srv.StepFrom(netip.MustParseAddrPort("10.9.9.9:1"), req, 0)
	w.flush()
	if len(w.pending) != 0 || w.srv.Stats().DropBad != 1 {
		t.Fatal("request from a stranger accepted")
	}
	w.srv.StepFrom(cliAddr, req, 0)
	w.flush()
	if len(w.pending) != 1 {
		t.Fatal("request from the peer dropped")
	}
	w.exchange(10, nil)
	if w.done[tag] != 1 {
		t.Fatal("not completed")
	}
	w.closeAll()
}

// An idle core has no deadline (its caller may sleep until something
// arrives); a request in flight brings the loss scan back, and completing
// it makes the core idle again.
func TestNextDeadlineIdle(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000})
	for _, c := range []*Core{w.cli, w.srv} {
		if d := c.NextDeadline(); d != math.MaxInt64 {
			t.Fatalf("idle core: NextDeadline %d", d)
		}
	}
	tag := w.enqueue(32, 32)
	if d := w.cli.NextDeadline(); d == math.MaxInt64 {
		t.Fatal("request in flight: no loss-scan deadline")
	}
	w.deliver("c2s", all(1))
	w.respond()
	w.deliver("s2c", all(1))
	if w.done[tag] != 1 {
		t.Fatalf("request not completed\n%s", w.log.String())
	}
	for _, c := range []*Core{w.cli, w.srv} {
		if d := c.NextDeadline(); d != math.MaxInt64 {
			t.Fatalf("idle again: NextDeadline %d", d)
		}
	}
	w.closeAll()
}

// A session with one request at a time lives in its inline slot0 on both
// sides and never allocates its other slots; a second request in flight
// allocates them (once), and handles naming slots that were never set up
// are stale.
func TestSlot0Inline(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000})
	cs, ss := w.cli.session(0), w.srv.session(5)
	if cs.numSlots() != 0 || ss.numSlots() != 0 {
		t.Fatal("slots set up before the first request")
	}
	for i := 0; i < 3; i++ {
		tag := w.enqueue(32, 32)
		w.deliver("c2s", all(len(w.c2s)))
		w.respond()
		w.deliver("s2c", all(len(w.s2c)))
		if w.done[tag] != 1 {
			t.Fatalf("request %d not completed\n%s", i, w.log.String())
		}
	}
	if cs.more != nil || ss.more != nil {
		t.Fatalf("one request at a time allocated more slots (client %v, server %v)", cs.more != nil, ss.more != nil)
	}
	if cs.numSlots() != 1 || ss.numSlots() != 1 {
		t.Fatalf("numSlots client %d server %d, want 1", cs.numSlots(), ss.numSlots())
	}
	m := w.newMsg(99, 8)
	if err := w.srv.Respond(ReqHandle{Session: 5, Slot: 3, Gen: ss.gen, ReqNum: 3}, m); err != ErrStaleHandle {
		t.Fatalf("Respond on a slot never set up: %v", err)
	}
	m.Release() // not consumed on error
	if err := w.srv.RespondStatus(ReqHandle{Session: 5, Slot: 3, Gen: ss.gen, ReqNum: 3}, StatusRejected); err != ErrStaleHandle {
		t.Fatalf("RespondStatus on a slot never set up: %v", err)
	}
	t1, t2 := w.enqueue(32, 32), w.enqueue(32, 32)
	w.exchange(100, nil)
	if w.done[t1] != 1 || w.done[t2] != 1 {
		t.Fatalf("two concurrent requests: done %d %d\n%s", w.done[t1], w.done[t2], w.log.String())
	}
	if len(cs.more) != DefaultWindow-1 || len(ss.more) != DefaultWindow-1 {
		t.Fatalf("two in flight: more slots client %d server %d", len(cs.more), len(ss.more))
	}
	w.closeAll()
}
