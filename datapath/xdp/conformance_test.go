package xdp_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
)

// TestConformance runs the datapath conformance suite between two AF_XDP
// endpoints in two namespaces (copy mode on veth), with the application's
// zero-copy buffers in the shared UMEM. The suite sends packets of up to
// about 6 KB, so it runs at a 9000-byte MTU (multi-buffer TX and RX, packets
// up to one RX frame delivered zero-copy); TestExchange covers 1500.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		mtu  int
		o    xdp.Options
	}{
		{"mtu9000", 9000, xdp.Options{}},
		{"mtu9000-generic-csum", 9000, xdp.Options{Attach: xdp.AttachGeneric, UDPChecksum: true, VerifyUDPChecksum: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopo(t, c.mtu)
			dptest.Run(t, func(t *testing.T) dptest.Pair {
				pa, pb, app := tp.pool(t, "A"), tp.pool(t, "B"), tp.pool(t, "app")
				a := tp.open(t, tp.pair.A, pa, c.o)
				b := tp.open(t, tp.pair.B, pb, c.o)
				return dptest.Pair{A: a, B: b, AppPool: app, Pools: []*mem.Pool{pa, pb}}
			})
		})
	}
}
