package rpc_test

import (
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// Timely's thresholds follow the datapath: udp's batching delay is not
// congestion (datapath.TimelyThresholder), memnet keeps eRPC's values, and
// values the user sets are kept.
func TestTimelyThresholdsFollowDatapath(t *testing.T) {
	cases := []struct {
		name      string
		o         opts
		cc        rpc.CCConfig
		low, high time.Duration
	}{
		{"udp", opts{kind: "udp"}, rpc.CCConfig{Enable: true}, udp.TimelyTLowUDP, 20 * udp.TimelyTLowUDP},
		{"udp/user", opts{kind: "udp"}, rpc.CCConfig{Enable: true, TLow: 70 * time.Microsecond}, 70 * time.Microsecond, time.Millisecond},
		{"memnet", opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}, rpc.CCConfig{Enable: true}, 50 * time.Microsecond, time.Millisecond},
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
			if cc.TLow != tc.low || cc.THigh != tc.high {
				t.Fatalf("TLow %v THigh %v, want %v %v", cc.TLow, cc.THigh, tc.low, tc.high)
			}
		})
	}
}
