package rpc_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// benchPair is a server and a client endpoint driven by one goroutine.
type benchPair struct {
	srvNx, cliNx *rpc.Nexus
	srv, cli     *rpc.Endpoint
	pools        []*mem.Pool
	sess         []rpc.Session
}

func newBenchPair(b *testing.B, kind string, nSess int) *benchPair {
	b.Helper()
	p := &benchPair{}
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 3})
	open := func(name string) (datapath.Endpoint, *mem.Pool) {
		pool, err := mem.NewPool(mem.PoolConfig{Name: name})
		if err != nil {
			b.Fatal(err)
		}
		p.pools = append(p.pools, pool)
		cfg := datapath.Config{Pool: pool}
		var dp datapath.Endpoint
		if kind == "udp" {
			cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
			dp, err = datapath.Open("udp", cfg)
		} else {
			dp, err = n.Open(cfg, memnet.Options{RxRing: 1024})
		}
		if err != nil {
			b.Fatal(err)
		}
		return dp, pool
	}
	var err error
	nc := rpc.NexusConfig{FailureTimeout: 30 * time.Second}
	if p.srvNx, err = rpc.NewNexus(nc); err != nil {
		b.Fatal(err)
	}
	if p.cliNx, err = rpc.NewNexus(nc); err != nil {
		b.Fatal(err)
	}
	_ = p.srvNx.Register(tPre, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondPre(copy(r.PreResp(), r.Data())) })
	dp, pool := open("srv")
	if p.srv, err = p.srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: dp, Pool: pool}); err != nil {
		b.Fatal(err)
	}
	dp, pool = open("cli")
	if p.cli, err = p.cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: dp, Pool: pool}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < nSess; i++ {
		s, err := p.cli.Connect(p.srvNx.Addr(), 1)
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !p.cli.IsConnected(s) && time.Now().Before(deadline) {
			_ = p.srv.RunOnce()
			_ = p.cli.RunOnce()
		}
		if !p.cli.IsConnected(s) {
			b.Fatal("connect timed out")
		}
		p.sess = append(p.sess, s)
	}
	b.Cleanup(func() {
		_ = p.cli.Close()
		_ = p.srv.Close()
		_ = p.cliNx.Close()
		_ = p.srvNx.Close()
		for _, pl := range p.pools {
			if pl.InUse() != 0 {
				b.Errorf("pool %v: %d items in use", pl, pl.InUse())
			}
		}
	})
	return p
}

// BenchmarkSmallRPC: 32 B echo requests, 32 in flight over 4 sessions, both
// endpoints driven by one goroutine (the endpoint + core cost per RPC, plus
// the datapath's). One op is one completed RPC.
func BenchmarkSmallRPC(b *testing.B) {
	for _, kind := range []string{"memnet", "udp"} {
		b.Run(kind, func(b *testing.B) {
			p := newBenchPair(b, kind, 4)
			req, err := p.cli.Pool().Alloc(32)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = req.Release() }()
			done, issued, next := 0, 0, 0
			var cont func(*rpc.Response)
			issue := func() {
				s := p.sess[next%len(p.sess)]
				next++
				if err := p.cli.Enqueue(s, tPre, rpc.BufMsg(req.Clone()), cont); err != nil {
					b.Fatal(err)
				}
				issued++
			}
			cont = func(r *rpc.Response) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				done++
				if issued < b.N {
					issue()
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < 32 && issued < b.N; i++ {
				issue()
			}
			for done < b.N {
				_ = p.srv.RunOnce()
				_ = p.cli.RunOnce()
			}
		})
	}
}
