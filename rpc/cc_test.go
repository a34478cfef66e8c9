package rpc_test

import (
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// Timely's thresholds follow the datapath's delay scales
// (datapath.TimelyTuner) instead of eRPC's, and values the user sets are
// kept.
func TestTimelyThresholdsFollowDatapath(t *testing.T) {
	cases := []struct {
		name           string
		o              opts
		cc             rpc.CCConfig
		min, low, high time.Duration
	}{
		{"udp", opts{kind: "udp"}, rpc.CCConfig{Enable: true}, datapath.BatchedTimely.MinRTT, datapath.BatchedTimely.TLow, 20 * datapath.BatchedTimely.TLow},
		{"udp/user", opts{kind: "udp"}, rpc.CCConfig{Enable: true, MinRTT: 3 * time.Microsecond, TLow: 70 * time.Microsecond}, 3 * time.Microsecond, 70 * time.Microsecond, time.Millisecond},
		{"memnet", opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}, rpc.CCConfig{Enable: true}, datapath.BatchedTimely.MinRTT, datapath.BatchedTimely.TLow, 20 * datapath.BatchedTimely.TLow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := memtest.NewPool(t, mem.PoolConfig{Name: t.Name()})
			nx, err := rpc.NewNexus(rpc.NexusConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer nx.Close()
			ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: 1, Pool: pool, Datapath: openDP(t, tc.o, pool), CC: tc.cc})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			cc := rpc.CCConfigOf(ep)
			if cc.LinkRate != datapath.UnlimitedLinkRate { // loopback and in-process
				t.Fatalf("LinkRate %v, want %v", cc.LinkRate, datapath.UnlimitedLinkRate)
			}
			if cc.MinRTT != tc.min || cc.TLow != tc.low || cc.THigh != tc.high {
				t.Fatalf("MinRTT %v TLow %v THigh %v, want %v %v %v", cc.MinRTT, cc.TLow, cc.THigh, tc.min, tc.low, tc.high)
			}
		})
	}
}
