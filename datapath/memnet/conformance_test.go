package memnet_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name    string
		virtual bool
		cfg     datapath.Config
	}{
		{"RealTime", false, datapath.Config{}},
		{"Virtual", true, datapath.Config{}},
		{"SmallBatchFewSegments", true, datapath.Config{Batch: 2, MaxSegments: 3, MaxPayload: 4000}},
		{"OwnPools", false, datapath.Config{}},
		{"BusyPoll", false, datapath.Config{BusyPoll: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dptest.Run(t, func(t *testing.T) dptest.Pair {
				n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1, Virtual: mode.virtual})
				var pools []*mem.Pool
				open := func() datapath.Endpoint {
					cfg := mode.cfg
					cfg.Options = memnet.Options{Network: n}
					if mode.name != "OwnPools" {
						cfg.Pool = memtest.NewPool(t)
						pools = append(pools, cfg.Pool)
					}
					ep, err := datapath.Open("memnet", cfg)
					if err != nil {
						t.Fatal(err)
					}
					return ep
				}
				p := dptest.Pair{A: open(), B: open(), Pools: pools}
				if mode.virtual {
					p.Pump = func() { _ = n.Advance(0) }
				}
				return p
			})
		})
	}
}
