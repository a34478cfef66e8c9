package proto

import (
	"errors"
	"testing"
	"time"
)

func TestHeaderRoundTrip(t *testing.T) {
	cases := []Header{
		{},
		{ReqType: 255, MsgSize: MaxMsgSizeField, DestSession: 0xFFFE, Type: PktResp, PktNum: MaxPktNum, ReqNum: MaxReqNum},
		{ReqType: 7, MsgSize: 1000, DestSession: 3, Type: PktRFR, PktNum: 12, ReqNum: 8},
		{ReqType: 1, MsgSize: 0, DestSession: 1, Type: PktCR, PktNum: 1, ReqNum: 1 << 40},
		{Type: PktResp, Status: StatusNoHandler},
		{ReqType: 2, MsgSize: 30, DestSession: 9, Type: PktReq, ReqNum: 16, Flags: FlagAck},
	}
	for _, h := range cases {
		var b [HeaderSize]byte
		if err := h.Encode(b[:]); err != nil {
			t.Fatalf("%v: %v", h, err)
		}
		var g Header
		if err := g.Decode(b[:]); err != nil {
			t.Fatalf("%v: %v", h, err)
		}
		if g != h {
			t.Fatalf("round trip: got %v want %v", g, h)
		}
	}
}

func TestHeaderLayout(t *testing.T) {
	h := Header{ReqType: 0xAB, MsgSize: 0x123456, DestSession: 0xBEEF, Type: PktCR, PktNum: 5, ReqNum: 9}
	var b [HeaderSize]byte
	if err := h.Encode(b[:]); err != nil {
		t.Fatal(err)
	}
	w := uint64(2) | 5<<2 | 9<<16 | 11<<60
	want := []byte{0xAB, 0x56, 0x34, 0x12, 0xEF, 0xBE, 0, 0, // status 0, flags 0
		byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24), byte(w >> 32), byte(w >> 40), byte(w >> 48), byte(w >> 56)}
	if string(b[:]) != string(want) {
		t.Fatalf("layout\n got %x\nwant %x", b, want)
	}
}

func TestHeaderErrors(t *testing.T) {
	var good [HeaderSize]byte
	_ = (&Header{Type: PktReq}).Encode(good[:])
	badMagic := good
	badMagic[15] = 0
	reserved := good
	reserved[7] = 0x80 // a flag bit with no meaning
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShortPacket},
		{"short", good[:15], ErrShortPacket},
		{"magic", badMagic[:], ErrBadMagic},
		{"reserved", reserved[:], ErrReserved},
	}
	for _, tc := range tests {
		var h Header
		if err := h.Decode(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, err, tc.want)
		}
	}
	for _, h := range []Header{{MsgSize: 1 << 24}, {PktNum: 1 << 14}, {ReqNum: 1 << 44}, {Type: 4}, {Flags: 0x80}} {
		var b [HeaderSize]byte
		if err := h.Encode(b[:]); !errors.Is(err, ErrFieldRange) {
			t.Errorf("%v: got %v", h, err)
		}
	}
}

func FuzzHeader(f *testing.F) {
	var b [HeaderSize]byte
	_ = (&Header{ReqType: 3, MsgSize: 100, DestSession: 2, Type: PktResp, PktNum: 4, ReqNum: 17}).Encode(b[:])
	f.Add(b[:])
	_ = (&Header{ReqType: 3, MsgSize: 100, DestSession: 2, Type: PktReq, ReqNum: 17, Flags: FlagAck}).Encode(b[:])
	f.Add(b[:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		var h Header
		if err := h.Decode(p); err != nil {
			return
		}
		var b [HeaderSize]byte
		if err := h.Encode(b[:]); err != nil {
			t.Fatalf("decoded header does not re-encode: %v", err)
		}
		if string(b[:]) != string(p[:HeaderSize]) {
			t.Fatalf("re-encode differs: %x vs %x", b, p[:HeaderSize])
		}
	})
}

// FuzzStep feeds arbitrary packets to a server and a client core that have
// live requests; nothing may panic and accounting must stay balanced.
func FuzzStep(f *testing.F) {
	var b [HeaderSize + 8]byte
	_ = (&Header{ReqType: 1, MsgSize: 8, DestSession: 5, Type: PktReq, PktNum: 0, ReqNum: 8}).Encode(b[:])
	f.Add(b[:], false)
	_ = (&Header{ReqType: 1, MsgSize: 0, DestSession: 0, Type: PktCR, PktNum: 0, ReqNum: 8}).Encode(b[:])
	f.Add(b[:HeaderSize], true)
	_ = (&Header{ReqType: 1, MsgSize: 300, DestSession: 0, Type: PktResp, PktNum: 2, ReqNum: 8}).Encode(b[:])
	f.Add(b[:], true)
	f.Fuzz(func(t *testing.T, p []byte, toClient bool) {
		w := newWorld(t, Config{DataPerPkt: 100, Credits: 4})
		w.enqueue(250, 120)
		w.enqueue(10, 400)
		w.stepForged(p, toClient)
		w.exchange(50, nil)
		w.badData = 0 // forged packets carry arbitrary data
		w.closeAll()
	})
}

// stepForged hands a forged packet to the client (toClient) or the server
// of w and checks the client's credit accounting.
func (w *world) stepForged(p []byte, toClient bool) {
	if toClient {
		w.cli.Step(p, 0)
	} else {
		w.srv.Step(p, 0)
	}
	w.flush()
	w.checkInvariants()
}

// FuzzStepCC is FuzzStep with congestion control on and every client
// packet paced through the wheel (a slow line rate), so that forged
// packets meet the rate limiter, the per-packet wheel marks and request
// acknowledgements (a CR for a request's last packet). Time advances
// between exchanges so that the wheel drains.
func FuzzStepCC(f *testing.F) {
	var b [HeaderSize + 8]byte
	_ = (&Header{ReqType: 1, MsgSize: 0, DestSession: 0, Type: PktCR, PktNum: 0, ReqNum: 9}).Encode(b[:])
	f.Add(b[:HeaderSize], true) // an ack of the second request (one packet)
	_ = (&Header{ReqType: 1, MsgSize: 0, DestSession: 0, Type: PktCR, PktNum: 2, ReqNum: 8}).Encode(b[:])
	f.Add(b[:HeaderSize], true) // an ack of the first request (three packets)
	_ = (&Header{ReqType: 1, MsgSize: 8, DestSession: 5, Type: PktReq, PktNum: 0, ReqNum: 8}).Encode(b[:])
	f.Add(b[:], false)
	f.Fuzz(func(t *testing.T, p []byte, toClient bool) {
		w := newWorld(t, Config{DataPerPkt: 100, Credits: 4, CC: CCConfig{Enable: true, NoWheelBypass: true, LinkRate: 1e6}})
		w.enqueue(250, 120)
		w.enqueue(10, 400)
		w.tick(int64(time.Millisecond)) // the requests leave the wheel, unanswered
		w.stepForged(p, toClient)
		for i := 0; i < 50 && (len(w.done) < 2 || len(w.c2s)+len(w.s2c) > 0); i++ {
			w.tick(int64(200 * time.Microsecond))
			w.exchange(10, nil)
		}
		w.badData = 0 // forged packets carry arbitrary data
		w.closeAll()
	})
}
