package xdp_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
)

// TestConformance runs the datapath conformance suite between two AF_XDP
// endpoints in two namespaces (copy mode on veth), with the application's
// zero-copy buffers in the shared UMEM: at MTU 1500 (every packet in one RX
// frame, scatter-gather TX) and at MTU 9000 (packets up to about 6 KB:
// multi-buffer TX and RX), each with native attach and with generic attach
// (the default on veth) plus UDP checksums.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		mtu  int
		o    xdp.Options
	}{
		{"mtu1500-native", 1500, xdp.Options{Attach: xdp.AttachNative}},
		{"mtu1500-generic-csum", 1500, xdp.Options{Attach: xdp.AttachGeneric, UDPChecksum: true, VerifyUDPChecksum: true}},
		{"mtu9000-native", 9000, xdp.Options{Attach: xdp.AttachNative}},
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
