package xdp_test

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
)

// openKind opens an endpoint of kind ("xdp" or "udp") in end's namespace.
func openKind(tb testing.TB, kind string, end netns.End, pool *mem.Pool, o xdp.Options) datapath.Endpoint {
	var ep datapath.Endpoint
	err := netns.Do(end.NS, func() (err error) {
		cfg := datapath.Config{Local: netip.AddrPortFrom(end.Addr4, 0), Pool: pool}
		if kind == "xdp" {
			o.Interface = end.If
			cfg.Options = o
		}
		ep, err = datapath.Open(kind, cfg)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ep
}

// benchPair opens two endpoints of kind ("xdp", "xdp-generic" or "udp") in
// the two namespaces of a new veth pair with static neighbours, each with its
// own concurrent pool of poolBytes on one committed space; it skips when
// AF_XDP is unavailable. Everything is closed in b.Cleanup (endpoints first).
func benchPair(b *testing.B, kind string, o xdp.Options, poolBytes int64, nameA, nameB string) (a, z datapath.Endpoint) {
	b.Helper()
	if err := xdp.Available(); err != nil {
		b.Skip(err)
	}
	_ = netns.Cleanup("cfxdpb")
	p, err := netns.Create(netns.Config{Prefix: "cfxdpb"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	if err := p.AddNeighbours(); err != nil {
		b.Fatal(err)
	}
	sp, err := mem.NewSpace(mem.SpaceConfig{Size: 64 << 20, Commit: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sp.Close() })
	if kind == "xdp-generic" {
		o.Attach, kind = xdp.AttachGeneric, "xdp"
	}
	newPool := func(name string) *mem.Pool {
		pl, err := mem.NewPool(mem.PoolConfig{Name: name, Space: sp, MaxClass: 65536, MaxBytes: poolBytes, Concurrent: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = pl.Close() })
		return pl
	}
	pa, pz := newPool(nameA), newPool(nameB)
	a = openKind(b, kind, p.A, pa, o)
	b.Cleanup(func() { _ = a.Close() })
	z = openKind(b, kind, p.B, pz, o)
	b.Cleanup(func() { _ = z.Close() })
	return a, z
}

// echoServer bounces every packet back zero-copy until stop is set.
func echoServer(ep datapath.Endpoint, stop *atomic.Bool, wg *sync.WaitGroup) {
	defer wg.Done()
	runtime.LockOSThread()
	pk := make([]datapath.Packet, 32)
	seg := make([]mem.Buf, 1)
	for !stop.Load() {
		n, err := ep.Recv(pk)
		if err != nil {
			return
		}
		for _, p := range pk[:n] {
			seg[0] = p.Buf
			_ = ep.SendSegments(p.From, nil, seg)
			_ = p.Buf.Release()
		}
		if n > 0 {
			_ = ep.Flush()
		} else {
			_ = ep.Wait(time.Millisecond) // sleep in poll(2): the machine has 2 shared cores
		}
	}
}

// BenchmarkPingPong measures the round trip of one packet between two
// namespaces over a veth pair, xdp vs udp; both sides sleep in Wait (poll)
// when idle, and the server echoes the received buffer zero-copy.
func BenchmarkPingPong(b *testing.B) {
	for _, kind := range []string{"xdp", "xdp-generic", "udp"} {
		for _, size := range []int{64, 1024} {
			b.Run(fmt.Sprintf("%s/%d", kind, size), func(b *testing.B) { runPingPong(b, kind, size) })
		}
	}
}

func runPingPong(b *testing.B, kind string, size int) {
	cli, srv := benchPair(b, kind, xdp.Options{}, 24<<20, "client", "server")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go echoServer(srv, &stop, &wg)
	defer func() { stop.Store(true); wg.Wait() }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	msg := make([]byte, size)
	pk := make([]datapath.Packet, 4)
	dst := srv.LocalAddr()
	roundTrip := func() bool {
		if err := cli.Send(dst, msg); err != nil {
			b.Fatal(err)
		}
		if err := cli.Flush(); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(200 * time.Millisecond)
		for {
			n, err := cli.Recv(pk)
			if err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				for _, q := range pk[:n] {
					_ = q.Buf.Release()
				}
				return true
			}
			if time.Now().After(deadline) {
				return false // lost: counted
			}
			_ = cli.Wait(time.Millisecond)
		}
	}
	for range 100 {
		roundTrip()
	}
	lost := 0
	b.ResetTimer()
	for b.Loop() {
		if !roundTrip() {
			lost++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "us/rtt")
}

// benchRing is the ring size of the throughput benchmark (4096: the
// receiver is not always scheduled on this shared machine, and a deeper fill
// ring absorbs the gaps).
const benchRing = 4096

// BenchmarkThroughput measures one-way packets per second (sender batches
// of 32, receiver busy-polling) over the veth pair, xdp vs udp.
func BenchmarkThroughput(b *testing.B) {
	for _, kind := range []string{"xdp", "xdp-generic", "udp"} {
		for _, size := range []int{64, 1400} {
			b.Run(fmt.Sprintf("%s/%d", kind, size), func(b *testing.B) { runThroughput(b, kind, size) })
		}
	}
}

func runThroughput(b *testing.B, kind string, size int) {
	tx, rx := benchPair(b, kind, xdp.Options{RingSize: benchRing}, 48<<20, "tx", "rx")
	var got atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		pk := make([]datapath.Packet, 64)
		for !stop.Load() {
			n, err := rx.Recv(pk)
			if err != nil {
				return
			}
			for _, q := range pk[:n] {
				_ = q.Buf.Release()
			}
			got.Add(int64(n))
		}
	}()
	msg := make([]byte, size)
	dst := rx.LocalAddr()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if err := tx.Send(dst, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Flush(); err != nil {
		b.Fatal(err)
	}
	sent := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/sent.Seconds()/1e6, "Mpps-sent")
	b.ReportMetric(float64(got.Load())/sent.Seconds()/1e6, "Mpps-recv")
	b.ReportMetric(100*(1-float64(got.Load())/float64(b.N)), "%lost")
	if x, ok := rx.(*xdp.Endpoint); ok {
		if ks, err := x.KernelStats(); err == nil {
			// Why the receiver lost packets: RX ring full (the receiving
			// goroutine was not scheduled in time) or no free fill frames.
			b.ReportMetric(float64(ks.Rx_ring_full), "rx-ring-full")
			b.ReportMetric(float64(ks.Rx_fill_ring_empty_descs), "fill-empty")
			b.ReportMetric(float64(ks.Rx_dropped), "rx-dropped")
		}
	}
}
