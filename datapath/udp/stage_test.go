package udp

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// Copied packet bytes go to the TX stage, not to pool buffers, until it is
// full; copies that do not fit take pool buffers; a failed send gives its
// stage bytes back; every packet arrives intact and nothing is leaked
// (memtest checks the pool at cleanup).
func TestTXStage(t *testing.T) {
	a, b := loopback(t), loopback(t)
	dst := b.LocalAddr()
	if len(a.stage) != maxStage {
		t.Fatalf("stage of %d bytes, want %d (default batch and payload)", len(a.stage), maxStage)
	}
	inUse := a.Pool().InUse()
	var want [][]byte
	send := func(p []byte) {
		t.Helper()
		if err := a.Send(dst, p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}

	// A failed SendObject (it serializes more entries than it declared)
	// between two sends: its copy leaves the stage as it was.
	send(pattern(100, 1))
	before := a.stageOff
	ent := memtest.Alloc(t, a.Pool(), pattern(40, 2))
	lying := &lyingObj{testObj{hdr: []byte("object header"), ents: []mem.Buf{ent, ent}}}
	if err := a.SendObject(dst, []byte("head"), lying); !errors.Is(err, ErrBadObject) {
		t.Fatalf("SendObject of a lying object: %v, want ErrBadObject", err)
	}
	memtest.Release(t, ent)
	if a.stageOff != before {
		t.Fatalf("stage offset %d after a failed send, want %d", a.stageOff, before)
	}
	send(pattern(200, 3))

	// Full-size packets until the stage cannot take another: that one
	// takes a pool buffer.
	big := a.MaxPayload()
	for i := 0; a.stageOff+big <= len(a.stage); i++ {
		send(pattern(big, 10+i))
	}
	if n := a.Pool().InUse(); n != inUse {
		t.Fatalf("%d pool buffers in use with a stage that is not full, want %d", n, inUse)
	}
	send(pattern(big, 99))
	if n := a.Pool().InUse(); n != inUse+1 {
		t.Fatalf("%d pool buffers in use after a copy the stage could not take, want %d", n, inUse+1)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.stageOff != 0 || a.Pool().InUse() != inUse {
		t.Fatalf("after Flush: stage offset %d, %d pool buffers in use (want 0 and %d)", a.stageOff, a.Pool().InUse(), inUse)
	}
	// The stage is reused by the next batch.
	send(pattern(300, 4))
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}

	recvWant(t, b, want)
}

// With MSG_ZEROCOPY on, copies keep pool buffers: a zero-copy packet's
// head must outlive the send until its completion notice.
func TestTXStageOffWithZeroCopy(t *testing.T) {
	a := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), Options: Options{ZeroCopyMin: 4096}})
	if a.stage != nil {
		t.Fatalf("stage of %d bytes with MSG_ZEROCOPY on", len(a.stage))
	}
}
