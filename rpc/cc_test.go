package rpc_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/internal/netns"
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

// Congestion control's automatic mode (CCConfig with neither Enable nor
// Disable) leaves sessions to loopback peers and memnet sessions without
// it; Enable and Disable force it; both at once is an error.
func TestCCAutomaticMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    opts
		cc   rpc.CCConfig
		want bool
	}{
		{"udp/loopback/auto", opts{kind: "udp"}, rpc.CCConfig{}, false},
		{"udp/loopback/enable", opts{kind: "udp"}, rpc.CCConfig{Enable: true}, true},
		{"udp/loopback/disable", opts{kind: "udp"}, rpc.CCConfig{Disable: true}, false},
		{"memnet/auto", opts{}, rpc.CCConfig{}, false},
		{"memnet/enable", opts{}, rpc.CCConfig{Enable: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.ep.CC = tc.cc
			cli, srv, _ := newPair(t, tc.o)
			s := cli.connect(t, srv.nx, 1)
			if got := cli.ep.CongestionControlled(s); got != tc.want {
				t.Fatalf("session under congestion control: %v, want %v", got, tc.want)
			}
			callMany(t, cli, []rpc.Session{s}, tEcho, []int{8, 20000}, 10*time.Second)
		})
	}
	// A peer at one of this host's own non-loopback addresses is on this
	// host too.
	if a, ok := localNonLoopback(); ok {
		t.Run("udp/local-address/auto", func(t *testing.T) {
			o := opts{kind: "udp", local: netip.AddrPortFrom(a, 0).String(), nexus: rpc.NexusConfig{ControlAddr: netip.AddrPortFrom(a, 0)}}
			cli, srv, _ := newPair(t, o)
			s := cli.connect(t, srv.nx, 1)
			if cli.ep.CongestionControlled(s) {
				t.Fatalf("session to this host's address %v under congestion control", a)
			}
		})
	}
	pool := memtest.NewPool(t, mem.PoolConfig{Name: t.Name()})
	nx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer nx.Close()
	dp := openDP(t, opts{kind: "udp"}, pool)
	if _, err := nx.NewEndpoint(rpc.EndpointConfig{ID: 1, Pool: pool, Datapath: dp, CC: rpc.CCConfig{Enable: true, Disable: true}}); err == nil {
		t.Fatal("Enable and Disable both set accepted")
	}
	_ = dp.Close()
}

// Across a real link (two network namespaces joined by a veth pair),
// the automatic mode puts the client's session under congestion control,
// and small and large requests complete with it.
func TestCCAutomaticAcrossNetwork(t *testing.T) {
	p := netns.ForTest(t, netns.Config{})
	open := func(ns string, addr netip.Addr, register func(*rpc.Nexus, *counter), c *counter, id uint8) *node {
		t.Helper()
		var nx *rpc.Nexus
		var dp datapath.Endpoint
		pool := memtest.NewPool(t, mem.PoolConfig{Name: t.Name() + ns})
		err := netns.Do(ns, func() error {
			var err error
			if nx, err = rpc.NewNexus(rpc.NexusConfig{ControlAddr: netip.AddrPortFrom(addr, 0), FailureTimeout: 10 * time.Second}); err != nil {
				return err
			}
			dp, err = datapath.Open("udp", datapath.Config{Pool: pool, Local: netip.AddrPortFrom(addr, 0)})
			return err
		})
		if err != nil {
			if nx != nil {
				_ = nx.Close()
			}
			t.Fatal(err)
		}
		if register != nil {
			register(nx, c)
		}
		ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: id, Pool: pool, Datapath: dp})
		if err != nil {
			_ = dp.Close()
			_ = nx.Close()
			t.Fatal(err)
		}
		n := &node{nx: nx, ep: ep, pool: pool}
		t.Cleanup(func() { n.stop(t) })
		return n
	}
	c := &counter{}
	srv := open(p.A.NS, p.A.Addr4, echoHandlers, c, 1)
	srv.serve()
	cli := open(p.B.NS, p.B.Addr4, nil, nil, 2)
	t.Cleanup(func() { c.check(t) })
	s := cli.connect(t, srv.nx, 1)
	if !cli.ep.CongestionControlled(s) {
		t.Fatal("session across a veth link not under congestion control")
	}
	callMany(t, cli, []rpc.Session{s}, tEcho, []int{8, 1000, 5000, 1 << 20}, 30*time.Second)
	callMany(t, cli, []rpc.Session{s}, tWorker, []int{8, 1 << 20}, 30*time.Second)
}

// localNonLoopback returns an IPv4 address of one of this host's
// interfaces other than loopback, if it has one.
func localNonLoopback() (netip.Addr, bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap().Is4() && !a.Unmap().IsLoopback() {
				return a.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}
