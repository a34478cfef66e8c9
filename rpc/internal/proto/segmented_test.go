package proto

import (
	"net/netip"
	"testing"
)

// stepSplit hands the client packet p received in place: its first k
// payload bytes in the head, the rest (tail, plus extra) elsewhere.
func (w *world) stepSplit(p wirePkt, k, extra int) {
	w.cli.StepSegmented(srvAddr, p.b[:HeaderSize+k], len(p.b)-HeaderSize-k+extra, 0)
}

// A single-packet response received in place completes with the head's
// payload as Data; a tail that does not add up, a response larger than a
// packet, a request and a negative tail are dropped as malformed, and the
// contiguous packets that follow still complete their requests.
func TestStepSegmented(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000})

	tag := w.enqueue(32, 600)
	w.deliverRequest()
	w.respond()
	if len(w.s2c) != 1 {
		t.Fatalf("%d response packets, want 1", len(w.s2c))
	}
	p := w.s2c[0]
	w.s2c = nil
	for _, bad := range []struct{ k, extra int }{{100, 1}, {100, -1}, {600, 1}} {
		before := w.cli.Stats().DropBad
		w.stepSplit(p, bad.k, bad.extra)
		if w.cli.HasReady() || w.cli.Stats().DropBad != before+1 {
			t.Fatalf("head %d, extra %d: not dropped", bad.k, bad.extra)
		}
	}
	w.cli.StepSegmented(srvAddr, p.b, -1, 0)
	w.cli.StepSegmented(netip.MustParseAddrPort("10.9.9.9:9"), p.b[:HeaderSize+100], 500, 0)
	if w.cli.HasReady() {
		t.Fatal("negative tail or foreign peer accepted")
	}
	w.stepSplit(p, 100, 0)
	rd := w.cli.Ready()
	if len(rd.Events) != 1 || rd.Events[0].Kind != EvResponse || rd.Events[0].Tag != tag || rd.Events[0].Buf != nil ||
		string(rd.Events[0].Data) != string(pattern(tag+1000, 600)[:100]) {
		t.Fatalf("events %+v", rd.Events)
	}
	w.cli.Advance(rd)
	w.done[tag]++

	// Contiguous packets still complete after the refused ones.
	tag = w.enqueue(32, 2500)
	w.exchange(10, nil)
	if w.done[tag] != 1 {
		t.Fatalf("multi-packet response did not complete")
	}

	// A request with a tail reaches no handler.
	w.enqueue(32, 10)
	q := w.c2s[0]
	w.c2s = nil
	before := w.srv.Stats().DropBad
	w.srv.StepSegmented(cliAddr, q.b[:HeaderSize+10], 22, 0)
	if w.srv.HasReady() || w.srv.Stats().DropBad != before+1 {
		t.Fatal("request in place not dropped")
	}
	w.srv.Step(q.b, 0)
	w.flush()
	w.exchange(10, nil)
	if w.badData != 0 {
		t.Fatalf("%d bad payloads", w.badData)
	}
	w.closeAll()
}

// The first packet of a multi-packet response received in place is
// dropped without touching the slot (no reassembly buffer, no credit),
// and the contiguous copy then completes the request.
func TestStepSegmentedMultiPacket(t *testing.T) {
	w := newWorld(t, Config{DataPerPkt: 1000})
	tag := w.enqueue(32, 1500)
	w.deliverRequest()
	w.respond()
	if len(w.s2c) == 0 {
		t.Fatal("no response packet")
	}
	p := w.s2c[0]
	before := w.cli.Stats().DropBad
	w.stepSplit(p, 10, 0)
	w.flush()
	if w.cli.Stats().DropBad != before+1 || w.ca.live != 0 {
		t.Fatalf("in place: %d drops, %d rx buffers", w.cli.Stats().DropBad-before, w.ca.live)
	}
	w.checkInvariants()
	w.exchange(20, nil)
	if w.done[tag] != 1 || w.badData != 0 {
		t.Fatalf("done %d, bad %d\n%s", w.done[tag], w.badData, w.log.String())
	}
	w.closeAll()
}

// FuzzStepSegmented is FuzzStep for packets received in place: a forged
// head and tail length.
func FuzzStepSegmented(f *testing.F) {
	var b [HeaderSize + 8]byte
	_ = (&Header{ReqType: 1, MsgSize: 120, DestSession: 0, Type: PktResp, PktNum: 0, ReqNum: 9}).Encode(b[:])
	f.Add(b[:], 112, true)
	_ = (&Header{ReqType: 1, MsgSize: 400, DestSession: 0, Type: PktResp, PktNum: 3, ReqNum: 8}).Encode(b[:])
	f.Add(b[:], 92, true)
	_ = (&Header{ReqType: 1, MsgSize: 8, DestSession: 5, Type: PktReq, PktNum: 0, ReqNum: 8}).Encode(b[:])
	f.Add(b[:HeaderSize], 8, false)
	f.Fuzz(func(t *testing.T, p []byte, tail int, toClient bool) {
		w := newWorld(t, Config{DataPerPkt: 100, Credits: 4})
		w.enqueue(250, 120)
		w.enqueue(10, 90)
		if toClient {
			w.cli.StepSegmented(netip.AddrPort{}, p, tail, 0)
		} else {
			w.srv.StepSegmented(netip.AddrPort{}, p, tail, 0)
		}
		// Drain without judging: a forged completion carries no data to
		// check (its tail is elsewhere).
		for w.cli.HasReady() {
			rd := w.cli.Ready()
			for _, e := range rd.Events {
				if e.Buf != nil {
					e.Buf.Release()
				}
			}
			w.cli.Advance(rd)
		}
		w.flush()
		w.checkInvariants()
		w.exchange(50, nil)
		w.badData = 0
		w.closeAll()
	})
}
