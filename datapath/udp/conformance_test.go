package udp_test

import (
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name string
		addr string
		cfg  datapath.Config
	}{
		{"v4", "127.0.0.1:0", datapath.Config{}},
		{"v6", "[::1]:0", datapath.Config{}},
		{"v4-noGSO", "127.0.0.1:0", datapath.Config{Options: udp.Options{DisableGSO: true, DisableGRO: true}}},
		{"v4-ZeroCopy", "127.0.0.1:0", datapath.Config{Options: udp.Options{ZeroCopyMin: 1}}},
		{"v4-SmallBatchFewSegments", "127.0.0.1:0", datapath.Config{Batch: 2, MaxSegments: 3, MaxPayload: 4000}},
		{"v4-OwnPools", "127.0.0.1:0", datapath.Config{}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dptest.Run(t, func(t *testing.T) dptest.Pair {
				var pools []*mem.Pool
				open := func() datapath.Endpoint {
					cfg := mode.cfg
					cfg.Local = netip.MustParseAddrPort(mode.addr)
					if mode.name != "v4-OwnPools" {
						cfg.Pool = memtest.NewPool(t)
						pools = append(pools, cfg.Pool)
					}
					ep, err := datapath.Open("udp", cfg)
					if err != nil {
						t.Fatal(err)
					}
					return ep
				}
				return dptest.Pair{A: open(), B: open(), Pools: pools}
			})
		})
	}
}

// TestConformanceVeth runs the suite across a veth pair between two network
// namespaces the test creates and removes.
func TestConformanceVeth(t *testing.T) {
	p := netns.ForTest(t, netns.Config{})
	dptest.Run(t, func(t *testing.T) dptest.Pair {
		var pools []*mem.Pool
		open := func(ns string, a netip.Addr) datapath.Endpoint {
			pool := memtest.NewPool(t)
			pools = append(pools, pool)
			var ep datapath.Endpoint
			err := netns.Do(ns, func() (err error) {
				ep, err = datapath.Open("udp", datapath.Config{Local: netip.AddrPortFrom(a, 0), Pool: pool})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return ep
		}
		return dptest.Pair{A: open(p.A.NS, p.A.Addr4), B: open(p.B.NS, p.B.Addr4), Pools: pools}
	})
}
