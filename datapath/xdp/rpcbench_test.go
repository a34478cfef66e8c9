package xdp_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// BenchmarkRPC measures one synchronous RPC (echo handler) through the rpc
// transport between two namespaces: xdp endpoints of a Topology (bridge)
// vs udp endpoints on a veth pair.
func BenchmarkRPC(b *testing.B) {
	for _, kind := range []string{"xdp", "udp"} {
		for _, size := range []int{64, 4096} {
			b.Run(fmt.Sprintf("%s/%d", kind, size), func(b *testing.B) { runRPC(b, kind, size) })
		}
	}
}

func runRPC(b *testing.B, kind string, size int) {
	if err := xdp.Available(); err != nil {
		b.Skip(err)
	}
	var srvDP, cliDP datapath.Endpoint
	switch kind {
	case "xdp":
		topo, err := xdp.NewTopology(xdp.TopologyConfig{Prefix: "cfxdpb", SpaceSize: 64 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer topo.Close()
		s, err := topo.Open(datapath.Config{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := topo.Open(datapath.Config{})
		if err != nil {
			b.Fatal(err)
		}
		srvDP, cliDP = s, c
	default:
		_ = netns.Cleanup("cfxdpb")
		p, err := netns.Create(netns.Config{Prefix: "cfxdpb", MTU: 9000})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		open := func(e netns.End) datapath.Endpoint {
			var ep datapath.Endpoint
			if err := netns.Do(e.NS, func() (err error) {
				ep, err = datapath.Open("udp", datapath.Config{Local: netip.AddrPortFrom(e.Addr4, 0)})
				return err
			}); err != nil {
				b.Fatal(err)
			}
			return ep
		}
		srvDP, cliDP = open(p.B), open(p.A)
	}
	srvNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer srvNx.Close()
	_ = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) })
	srv, err := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { stop(); <-done; _ = srv.Close() }()
	cliNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer cliNx.Close()
	cli, err := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	s, err := cli.Connect(srvNx.Addr(), 1)
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !cli.IsConnected(s); {
		if time.Now().After(deadline) {
			b.Fatal("not connected")
		}
		_ = cli.RunOnce()
	}
	req := make([]byte, size)
	call := func() {
		resp, err := cli.Call(context.Background(), s, 1, rpc.BytesMsg(req))
		if err != nil {
			b.Fatal(err)
		}
		_ = resp.Release()
	}
	for range 100 {
		call()
	}
	b.ResetTimer()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "us/call")
}
