package xdp_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
)

// tooLargeAt1500 lists the dptest cases whose fixed packet sizes exceed the
// UDP payload of a 1500-byte MTU (1472 bytes), with the largest datagram
// each sends. This datapath does not fragment IP datagrams (one datagram is
// one Ethernet frame; the RPC layer splits messages into MaxPayload
// packets), so at MTU 1500 such a send fails with datapath.ErrTooLarge by
// design. The cases run at MTU 9000 below, and TestExchange covers
// scatter-gather sends, completions and pool accounting at MTU 1500 with
// sizes that fit.
var tooLargeAt1500 = map[string]string{
	"SendSegments":      "a 42-byte head and segments of 300, 600 and 900 bytes: 1842 bytes",
	"SendObject":        "an object of 24+50 bytes and entries of 512, 612 and 712 bytes: about 1.9 KB",
	"CompletionRelease": "a 2048-byte segment with a head: 2049 bytes",
	"NoEarlyRelease":    "a head and 4 segments of 1500 bytes: 6001 bytes",
}

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
		skip map[string]string
	}{
		{"mtu1500-native", 1500, xdp.Options{Attach: xdp.AttachNative}, tooLargeAt1500},
		{"mtu1500-generic-csum", 1500, xdp.Options{Attach: xdp.AttachGeneric, UDPChecksum: true, VerifyUDPChecksum: true}, tooLargeAt1500},
		{"mtu9000-native", 9000, xdp.Options{Attach: xdp.AttachNative}, nil},
		{"mtu9000-generic-csum", 9000, xdp.Options{Attach: xdp.AttachGeneric, UDPChecksum: true, VerifyUDPChecksum: true}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopo(t, c.mtu)
			dptest.Run(t, func(t *testing.T) dptest.Pair {
				if why, ok := c.skip[subtestName(t)]; ok {
					t.Skipf("sends %s, more than the %d-byte UDP payload of MTU %d (no IP fragmentation by design; runs at MTU 9000)", why, c.mtu-28, c.mtu)
				}
				pa, pb, app := tp.pool(t, "A"), tp.pool(t, "B"), tp.pool(t, "app")
				a := tp.open(t, tp.pair.A, pa, c.o)
				b := tp.open(t, tp.pair.B, pb, c.o)
				return dptest.Pair{A: a, B: b, AppPool: app, Pools: []*mem.Pool{pa, pb}}
			})
		})
	}
}

// subtestName is the last element of t's name (the dptest case).
func subtestName(t *testing.T) string {
	n := t.Name()
	for i := len(n) - 1; i >= 0; i-- {
		if n[i] == '/' {
			return n[i+1:]
		}
	}
	return n
}
