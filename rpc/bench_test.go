package rpc_test

import (
	"fmt"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// benchPair is a server and a client endpoint driven by one goroutine.
type benchPair struct {
	srvNx, cliNx *rpc.Nexus
	srv, cli     *rpc.Endpoint
	pools        []*mem.Pool
	sess         []rpc.Session
}

// newBenchPair connects nSess sessions from a client endpoint (congestion
// control cc) to a server endpoint over datapath kind.
func newBenchPair(b *testing.B, kind string, nSess int, cc rpc.CCConfig) *benchPair {
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
	// Echo from preallocated memory, as rpcbench's: the message record for
	// bodies up to InlineMax, the slot's buffer above.
	_ = p.srvNx.Register(tPre, rpc.Dispatch, func(r *rpc.Request) {
		if d := r.Data(); len(d) <= rpc.InlineMax {
			_ = r.RespondBytes(d)
			return
		}
		_ = r.RespondPre(copy(r.PreResp(), r.Data()))
	})
	dp, pool := open("srv")
	// One flush per receive batch (FlushEvery < 0), as BenchmarkRawEcho:
	// driven by one goroutine the endpoints cannot overlap, and an early
	// flush would only add a send system call per batch to the CPU per RPC
	// (980 → 1190 cpu-ns/op on udp; docs/RPC-NOTES.md, "Pipelining a receive batch").
	if p.srv, err = p.srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: dp, Pool: pool, FlushEvery: -1}); err != nil {
		b.Fatal(err)
	}
	dp, pool = open("cli")
	if p.cli, err = p.cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: dp, Pool: pool, CC: cc, FlushEvery: -1}); err != nil {
		b.Fatal(err)
	}
	// Connect in batches of 256 handshakes (rpcbench does the same).
	deadline := time.Now().Add(60 * time.Second)
	for len(p.sess) < nSess {
		var cur []rpc.Session
		for i := 0; i < 256 && len(p.sess)+len(cur) < nSess; i++ {
			s, err := p.cli.Connect(p.srvNx.Addr(), 1)
			if err != nil {
				b.Fatal(err)
			}
			cur = append(cur, s)
		}
		for _, s := range cur {
			for !p.cli.IsConnected(s) && time.Now().Before(deadline) {
				_ = p.srv.RunOnce()
				_ = p.cli.RunOnce()
			}
			if !p.cli.IsConnected(s) {
				b.Fatal("connect timed out")
			}
		}
		p.sess = append(p.sess, cur...)
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
		b.Run(kind, func(b *testing.B) { benchSmallRPC(b, kind, 4, 32) })
	}
}

// BenchmarkSmallRPCSessions spreads 8 requests in flight (one session's
// slots, so that one session needs no backlog) round robin over many
// sessions, as rpcbench's sessions test: the per-RPC CPU next to the
// one-session case is the cost of cold session state.
func BenchmarkSmallRPCSessions(b *testing.B) {
	for _, n := range []int{1, 1000, 20000} {
		b.Run(fmt.Sprintf("memnet/%d", n), func(b *testing.B) { benchSmallRPC(b, "memnet", n, rpc.DefaultWindow) })
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the CPU time per op since start (the wall-clock ns/op on
// a shared machine includes time spent descheduled).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSmallRPCCC is BenchmarkSmallRPC with congestion control on the
// client (Timely and the rate limiter with eRPC's bypasses). It reports
// the share of packets that went through the rate limiter and of RTT
// samples that updated Timely: next to BenchmarkSmallRPC, the cost of
// congestion control when the network is not congested.
func BenchmarkSmallRPCCC(b *testing.B) {
	for _, kind := range []string{"memnet", "udp"} {
		b.Run(kind, func(b *testing.B) { benchSmallRPCWith(b, kind, 4, 32, rpc.CCConfig{Enable: true}) })
	}
}

func benchSmallRPC(b *testing.B, kind string, nSess, inflight int) {
	benchSmallRPCWith(b, kind, nSess, inflight, rpc.CCConfig{})
}

func benchSmallRPCWith(b *testing.B, kind string, nSess, inflight int, cc rpc.CCConfig) {
	benchSmallRPCMsg(b, kind, nSess, inflight, cc, "buf")
}

// benchSmallRPCMsg is benchSmallRPCWith with the request's body sent as
// how says: "buf" (BufMsg of a Clone of a registered buffer), "bytes"
// (BytesMsg: copied into the message record, InlineMax) or "object" (a
// kvpb request with one 32-byte key: copied fields only).
func benchSmallRPCMsg(b *testing.B, kind string, nSess, inflight int, cc rpc.CCConfig, how string) {
	p := newBenchPair(b, kind, nSess, cc)
	req, err := p.cli.Pool().Alloc(32)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = req.Release() }()
	body := make([]byte, 32)
	arena := wire.NewArena()
	defer arena.Reset()
	msg := func() rpc.Msg {
		switch how {
		case "bytes":
			return rpc.BytesMsg(body)
		case "object":
			arena.Reset()
			o := kvpb.NewReq(arena)
			o.InitKeys(1).Append(body)
			return rpc.ObjectMsg(o)
		}
		return rpc.BufMsg(req.Clone())
	}
	// Warm up: one request on every session (the server allocates
	// a slot's response buffer on first use).
	for _, s := range p.sess {
		if err := p.cli.Enqueue(s, tPre, msg(), func(*rpc.Response) {}); err != nil {
			b.Fatal(err)
		}
		for p.cli.Pending(s) > 0 {
			_ = p.srv.RunOnce()
			_ = p.cli.RunOnce()
		}
	}
	st0 := p.cli.Stats().Proto
	p.closedLoop(b, tPre, msg, inflight)
	if cc.Enable {
		st := p.cli.Stats().Proto
		b.ReportMetric(float64(st.RateLimited-st0.RateLimited)/float64(b.N), "paced/op")
		b.ReportMetric(float64(st.TimelyUpdates-st0.TimelyUpdates)/float64(b.N), "timely/op")
	}
}

// closedLoop runs b.N requests of reqType with inflight in flight, round
// robin over p's sessions, both endpoints driven by this goroutine, and
// reports the CPU time per request.
func (p *benchPair) closedLoop(b *testing.B, reqType uint8, msg func() rpc.Msg, inflight int) {
	done, issued, next := 0, 0, 0
	var cont func(*rpc.Response)
	issue := func() {
		s := p.sess[next]
		if next++; next == len(p.sess) { // round robin without a division per request
			next = 0
		}
		if err := p.cli.Enqueue(s, reqType, msg(), cont); err != nil {
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
	// The setup's garbage (20000 handshakes; the harness's first
	// b.N=1 run) must not be collected on the measured CPU time.
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < inflight && issued < b.N; i++ {
		issue()
	}
	for done < b.N {
		_ = p.srv.RunOnce()
		_ = p.cli.RunOnce()
	}
	reportCPU(b, cpu0)
}

// BenchmarkRawEcho is BenchmarkSmallRPC's baseline: the raw datapath
// request-response loop of rpcbench (rpc/rpcbench/raw.go) with the same
// packet size (header + 32 B), 32 in flight, both ends driven by one
// goroutine in the endpoint's loop shape (Recv batch, Send each, Flush).
// One op is one echoed request; ns/op next to SmallRPC's is the RPC
// layer's cost per request.
func BenchmarkRawEcho(b *testing.B) {
	for _, kind := range []string{"memnet", "udp"} {
		b.Run(kind, func(b *testing.B) {
			n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 3})
			var pools []*mem.Pool
			open := func(name string) datapath.Endpoint {
				pool, err := mem.NewPool(mem.PoolConfig{Name: name})
				if err != nil {
					b.Fatal(err)
				}
				pools = append(pools, pool)
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
				return dp
			}
			srv, cli := open("srv"), open("cli")
			defer func() {
				_ = cli.Close()
				_ = srv.Close()
				for _, pl := range pools {
					if pl.InUse() != 0 {
						b.Errorf("pool %v: %d items in use", pl, pl.InUse())
					}
				}
			}()
			msg := make([]byte, rpc.HeaderSize+32)
			pkts := make([]datapath.Packet, datapath.DefaultBatch)
			dst := srv.LocalAddr()
			done, issued := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for ; issued < 32 && issued < b.N; issued++ {
				_ = cli.Send(dst, msg)
			}
			_ = cli.Flush()
			for done < b.N {
				k, err := srv.Recv(pkts)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < k; i++ {
					_ = srv.Send(pkts[i].From, pkts[i].Buf.Bytes())
					_ = pkts[i].Buf.Release()
					pkts[i] = datapath.Packet{}
				}
				_ = srv.Flush()
				if k, err = cli.Recv(pkts); err != nil {
					b.Fatal(err)
				}
				for i := 0; i < k; i++ {
					_ = pkts[i].Buf.Release()
					pkts[i] = datapath.Packet{}
					done++
					if issued < b.N {
						_ = cli.Send(dst, msg)
						issued++
					}
				}
				_ = cli.Flush()
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkWorkerRPC: 32 B echo requests to a Worker handler, 8 in flight
// on one session over memnet, both endpoints driven by this goroutine and
// the answers coming from the Nexus's worker goroutines. Next to
// BenchmarkSmallRPC/memnet, the cost of the handoff: the request's copy
// into the Nexus's pool, the worker's wake-up and its answer through the
// endpoint's mailbox (or directly, when it finds the endpoint free).
func BenchmarkWorkerRPC(b *testing.B) {
	const tWork = 60
	p := newBenchPair(b, "memnet", 1, rpc.CCConfig{})
	_ = p.srvNx.Register(tWork, rpc.Worker, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) })
	body := make([]byte, 32)
	p.closedLoop(b, tWork, func() rpc.Msg { return rpc.BytesMsg(body) }, rpc.DefaultWindow)
}
