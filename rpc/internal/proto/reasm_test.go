package proto

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// forgeReq is the first packet of a request claiming msgSize bytes, as a
// hostile peer sends it: one packet's worth of data and nothing after.
func forgeReq(t *testing.T, dest uint16, reqNum uint64, msgSize, dpp int) []byte {
	t.Helper()
	h := Header{ReqType: 1, MsgSize: uint32(msgSize), DestSession: dest, Type: PktReq, ReqNum: reqNum}
	b := make([]byte, HeaderSize+dpp)
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReasmClaimsDoNotPin: peers claiming MaxMsgSize on every slot of many
// sessions hold what they sent, never more than the budgets; requests over
// budget are refused with StatusNoMemory; stalled requests are reclaimed
// after ReasmTimeout; an honest large request is served before, during
// (within the budget left) and after.
func TestReasmClaimsDoNotPin(t *testing.T) {
	const dpp = 100
	cfg := Config{DataPerPkt: dpp, ReasmBudget: 40 << 10, ReasmSessionBudget: 4 << 10, ReasmTimeout: 50 * time.Millisecond}
	w := newWorld(t, cfg)
	maxMsg := w.srv.Config().MaxMsgSize

	honest := func(what string) {
		t.Helper()
		tag := w.enqueue(20*dpp, 10)
		w.exchange(50, nil)
		if w.done[tag] != 1 || w.handled[tag] != 1 {
			t.Fatalf("%s: the honest large request was not served:\n%s", what, w.log.String())
		}
	}
	honest("before")

	const attackers = 40
	var refused int
	for i := 0; i < attackers; i++ {
		num := uint16(100 + i)
		if err := w.srv.AddSession(SessionConfig{Num: num, Remote: num, Peer: netip.AddrPortFrom(cliAddr.Addr(), uint16(1000+i))}); err != nil {
			t.Fatal(err)
		}
		for slot := 0; slot < w.srv.Config().Window; slot++ {
			w.srv.Step(forgeReq(t, num, uint64(8+slot), maxMsg, dpp), 0)
			if got, lim := w.srv.Stats().ReasmBytes, cfg.ReasmBudget; got > lim {
				t.Fatalf("reassembly holds %d bytes, budget %d", got, lim)
			}
			if w.sa.liveBytes > int(cfg.ReasmBudget) {
				t.Fatalf("allocator holds %d bytes, budget %d", w.sa.liveBytes, cfg.ReasmBudget)
			}
		}
		rd := w.srv.Ready()
		for _, p := range rd.Packets {
			if p.Hdr.Type == PktResp && p.Hdr.Status == StatusNoMemory {
				refused++
			}
		}
		w.srv.Advance(rd)
	}
	st := w.srv.Stats()
	if refused == 0 || st.ReasmRefused != uint64(refused) {
		t.Fatalf("refusals: %d packets with StatusNoMemory, ReasmRefused %d", refused, st.ReasmRefused)
	}
	if st.ReasmPeak > cfg.ReasmBudget {
		t.Fatalf("peak %d over the budget %d", st.ReasmPeak, cfg.ReasmBudget)
	}
	// Every attacker session holds at most its budget.
	for i := 0; i < attackers; i++ {
		if s := w.srv.session(uint16(100 + i)); s.reasm > cfg.ReasmSessionBudget {
			t.Fatalf("session %d holds %d", s.num, s.reasm)
		}
	}

	// The budget is spent: an honest request is refused with a clear status.
	tag := w.enqueue(20*dpp, 10)
	w.exchange(50, nil)
	if w.done[tag] != 1 || !strings.Contains(w.log.String(), fmt.Sprintf("c done tag=%d status=%d", tag, StatusNoMemory)) {
		t.Fatalf("over budget, a request must be refused with StatusNoMemory:\n%s", w.log.String())
	}

	// The attackers stop; their partial requests are reclaimed.
	w.tick(int64(cfg.ReasmTimeout) * 2)
	w.tick(int64(cfg.ReasmTimeout))
	w.flush()
	if st := w.srv.Stats(); st.ReasmBytes != 0 || st.ReasmTimeouts == 0 || w.sa.live != 0 {
		t.Fatalf("after the timeout: %d bytes held, %d timeouts, %d buffers live", st.ReasmBytes, st.ReasmTimeouts, w.sa.live)
	}
	honest("after")
	for i := 0; i < attackers; i++ {
		if err := w.srv.RemoveSession(uint16(100+i), nil); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	w.closeAll()
}

// TestReasmGrowsWithPackets: a large request's buffer starts at
// ReasmInitial and grows as packets arrive, in both retransmission modes.
func TestReasmGrowsWithPackets(t *testing.T) {
	for _, sel := range []bool{false, true} {
		t.Run(fmt.Sprint("selective=", sel), func(t *testing.T) {
			w := newWorld(t, Config{DataPerPkt: 100, Selective: sel, ReasmInitial: 150})
			tag := w.enqueue(10_000, 10)
			w.exchange(200, func() bool { return false })
			if w.done[tag] != 1 || w.handled[tag] != 1 {
				t.Fatalf("not served:\n%s", w.log.String())
			}
			st := w.srv.Stats()
			if st.ReasmGrows < 5 || st.ReasmBytes != 0 || st.ReasmPeak < 10_000 || st.ReasmPeak > 2*10_000 {
				t.Fatalf("grows %d, bytes %d, peak %d", st.ReasmGrows, st.ReasmBytes, st.ReasmPeak)
			}
			w.closeAll()
		})
	}
}

func TestAllocFailure(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 100})
	w.ca.fail = true
	tag := w.enqueue(10, 500)
	w.exchange(10, nil)
	if w.done[tag] != 1 || w.cli.Stats().Failed != 1 {
		t.Fatal("a response that cannot be reassembled must fail the request")
	}
	w.sa.fail = true
	w.ca.fail = false
	tag2 := w.enqueue(500, 10)
	w.exchange(10, nil)
	if w.handled[tag2] != 0 || w.srv.Stats().AllocFailures == 0 || w.srv.Stats().ReasmRefused != 1 {
		t.Fatal("server without memory must refuse the request")
	}
	if w.done[tag2] != 1 || !strings.Contains(w.log.String(), fmt.Sprintf("c done tag=%d status=%d", tag2, StatusNoMemory)) {
		t.Fatalf("the client must learn of the refusal (StatusNoMemory):\n%s", w.log.String())
	}
	w.sa.fail = false
	tag3 := w.enqueue(500, 10)
	w.exchange(20, nil)
	if w.done[tag3] != 1 || w.handled[tag3] != 1 {
		t.Fatal("a request after memory came back must be served")
	}
	w.closeAll()
}
