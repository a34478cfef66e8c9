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
	"golang.org/x/sys/unix"
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
func benchPair(b *testing.B, kind string, mtu int, o xdp.Options, poolBytes int64, nameA, nameB string) (a, z datapath.Endpoint) {
	b.Helper()
	if err := xdp.Available(); err != nil {
		b.Skip(err)
	}
	_ = netns.Cleanup("cfxdpb")
	p, err := netns.Create(netns.Config{Prefix: "cfxdpb", MTU: mtu})
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
	switch kind {
	case "xdp": // native attach (AttachAuto picks generic on veth)
		o.Attach = xdp.AttachNative
	case "xdp-generic":
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
	cli, srv := benchPair(b, kind, 0, xdp.Options{}, 24<<20, "client", "server")
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

// benchRing is the ring size of the throughput benchmarks (4096: the
// receiver is not always scheduled on this shared machine, and a deeper fill
// ring absorbs the gaps).
const benchRing = 4096

// threadCPU returns the user and system CPU time of the calling OS thread;
// callers lock their goroutine to the thread. Throughput on this shared
// machine depends on how much CPU the sender gets; the CPU time per packet
// does not.
func threadCPU(b *testing.B) (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkThroughput measures one-way packets per second (sender batches
// of 32, receiver busy-polling) over the veth pair, xdp vs udp.
// tx-usr-ns/pkt and tx-sys-ns/pkt are the sending thread's CPU time per
// packet in user space and in the kernel: with veth, the kernel runs the
// receiving side (XDP program, copy into the receiver's UMEM) in the
// sender's softirq, so tx-sys is the whole kernel cost of a packet.
func BenchmarkThroughput(b *testing.B) {
	for _, kind := range []string{"xdp", "xdp-generic", "udp"} {
		for _, size := range []int{64, 1400} {
			b.Run(fmt.Sprintf("%s/%d", kind, size), func(b *testing.B) {
				msg := make([]byte, size)
				runThroughput(b, kind, 0, nil, func(tx, rx datapath.Endpoint) error { return tx.Send(rx.LocalAddr(), msg) })
			})
		}
	}
}

// BenchmarkLargeShape compares the two shapes an 8000-byte response takes
// on a 9000-byte MTU (the cdn workload's segments): "copy" is one
// contiguous buffer (what a copying serializer hands the datapath: one TX
// buffer, 2 descriptors), "sg" a 64-byte head plus the value zero-copy from
// the UMEM (Cornflakes: a header descriptor and 2 for the value). In copy
// mode the kernel copies every descriptor into an skb page either way.
func BenchmarkLargeShape(b *testing.B) {
	const head, value = 64, 8000
	for _, kind := range []string{"xdp", "xdp-generic"} {
		b.Run(kind+"/copy", func(b *testing.B) {
			msg := make([]byte, head+value)
			runThroughputRx(b, kind, 9000, true, nil, func(tx, rx datapath.Endpoint) error { return tx.Send(rx.LocalAddr(), msg) })
		})
		b.Run(kind+"/sg", func(b *testing.B) {
			h := make([]byte, head)
			var segs []mem.Buf
			runThroughputRx(b, kind, 9000, true, func(tx datapath.Endpoint) func() {
				v, err := tx.(*xdp.Endpoint).Pool().AllocCopy(make([]byte, value))
				if err != nil {
					b.Fatal(err)
				}
				segs = []mem.Buf{v}
				return func() { _ = v.Release() }
			}, func(tx, rx datapath.Endpoint) error { return tx.SendSegments(rx.LocalAddr(), h, segs) })
		})
	}
}

// runThroughput sends with send in a loop for b.N packets (flushing at the
// end) while a busy-polling goroutine receives, and reports rates, loss,
// the sender's CPU time per packet (user and kernel) and, for xdp, ring counters. setup, if
// set, runs before the loop and returns a cleanup run after it.
func runThroughput(b *testing.B, kind string, mtu int, setup func(tx datapath.Endpoint) func(), send func(tx, rx datapath.Endpoint) error) {
	runThroughputRx(b, kind, mtu, false, setup, send)
}

// runThroughputRx is runThroughput; with waitIdle the receiver sleeps in
// Wait when its ring is empty instead of spinning, and its CPU time per
// received packet is reported too (rx-usr-ns/pkt, rx-sys-ns/pkt).
func runThroughputRx(b *testing.B, kind string, mtu int, waitIdle bool, setup func(tx datapath.Endpoint) func(), send func(tx, rx datapath.Endpoint) error) {
	tx, rx := benchPair(b, kind, mtu, xdp.Options{RingSize: benchRing}, 48<<20, "tx", "rx")
	if setup != nil {
		defer setup(tx)()
	}
	var got atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	var rxUsr, rxSys time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		u0, s0 := threadCPU(b)
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
			if n == 0 && waitIdle {
				_ = rx.Wait(time.Millisecond)
			}
		}
		u1, s1 := threadCPU(b)
		rxUsr, rxSys = u1-u0, s1-s0
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	start := time.Now()
	usr0, sys0 := threadCPU(b)
	for b.Loop() {
		if err := send(tx, rx); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Flush(); err != nil {
		b.Fatal(err)
	}
	sent := time.Since(start)
	usr, sys := threadCPU(b)
	usr, sys = usr-usr0, sys-sys0
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/sent.Seconds()/1e6, "Mpps-sent")
	b.ReportMetric(float64(got.Load())/sent.Seconds()/1e6, "Mpps-recv")
	b.ReportMetric(100*(1-float64(got.Load())/float64(b.N)), "%lost")
	b.ReportMetric(float64(usr.Nanoseconds())/float64(b.N), "tx-usr-ns/pkt")
	b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N), "tx-sys-ns/pkt")
	if n := got.Load(); waitIdle && n > 0 {
		b.ReportMetric(float64(rxUsr.Nanoseconds())/float64(n), "rx-usr-ns/pkt")
		b.ReportMetric(float64(rxSys.Nanoseconds())/float64(n), "rx-sys-ns/pkt")
	}
	if x, ok := tx.(*xdp.Endpoint); ok {
		c := x.Counters()
		b.ReportMetric(float64(c.TxDescs)/float64(b.N), "descs/pkt")
		b.ReportMetric(float64(c.Kicks)/float64(b.N), "kicks/pkt")
		b.ReportMetric(float64(c.KickRetries)/float64(b.N), "kick-again/pkt")
		b.ReportMetric(float64(c.CompletionSkips)/float64(max(c.Completions, 1)), "skips/completion")
	}
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
