package xdp_test

import (
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestNoAllocs checks that the steady-state send and receive paths (copy,
// scatter-gather, object, single- and multi-buffer RX) allocate nothing.
func TestNoAllocs(t *testing.T) {
	tp := newTopo(t, 9000)
	pa, pb, app := tp.pool(t, "A"), tp.pool(t, "B"), tp.pool(t, "app")
	a := tp.open(t, tp.pair.A, pa, xdp.Options{})
	defer a.Close()
	b := tp.open(t, tp.pair.B, pb, xdp.Options{})
	defer b.Close()
	small := pattern(100, 1)
	seg := memtest.Alloc(t, app, pattern(6000, 2)) // multi-buffer packet
	defer memtest.Release(t, seg)
	segs := []mem.Buf{seg}
	obj := &dptest.Object{Header: pattern(8, 3), Copied: pattern(20, 4), Entries: []mem.Buf{seg}}
	pk := make([]datapath.Packet, 4)
	dst := b.LocalAddr()
	round := func() {
		if err := a.Send(dst, small); err != nil {
			t.Fatal(err)
		}
		if err := a.SendSegments(dst, small, segs); err != nil {
			t.Fatal(err)
		}
		if err := a.SendObject(dst, nil, obj); err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		got := 0
		deadline := time.Now().Add(5 * time.Second)
		for got < 3 && time.Now().Before(deadline) {
			n, err := b.Recv(pk)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pk[:n] {
				_ = p.Buf.Release()
			}
			got += n
		}
		if got != 3 {
			t.Fatalf("received %d of 3 packets", got)
		}
	}
	round() // warm up (neighbour cache, pool classes)
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("%.1f allocations per send/receive round, want 0", n)
	}
}
