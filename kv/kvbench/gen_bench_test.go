package kvbench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/workload"
)

// processCPU is the CPU time (user + system) of the whole process, its
// minor page faults and its voluntary context switches (a thread going to
// sleep: a wake-up later) so far.
func processCPU(b *testing.B) (time.Duration, int64, int64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt, ru.Nvcsw
}

// BenchmarkGenerator runs the load generator (bench.Run, closed loop, 32
// requests in flight, every response checked as `cornflakes bench` does)
// against an in-process kv server on shm and reports the CPU time per
// request of the server's endpoint thread (server-ns/req) and of the rest
// of the process (gen-ns/req: the generator, its transport and the Go
// runtime). Neither side busy-polls, so idle time is not CPU time. The
// "sessions4" variants give the connection 4 sessions (all 32
// requests on the wire instead of 8 and 24 in the session's backlog). b.N
// is the number of one-second runs.
//
//	go test -run XXX -bench Generator -benchtime 2x ./kv/kvbench
func BenchmarkGenerator(b *testing.B) {
	for _, spec := range []string{"cdn:objects=2000", "ycsb:records=20000,shape=2x2048", "google:keys=20000", "twitter:keys=20000"} {
		for _, c := range []kv.Codec{kv.CodecCFHybrid, kv.CodecVTProtobuf} {
			name := strings.Split(spec, ":")[0] + "/" + strings.ReplaceAll(c.String(), "/", "-")
			for _, sessions := range []int{1, 4} {
				sub := name
				if sessions > 1 {
					sub += fmt.Sprintf("/sessions%d", sessions)
				}
				b.Run(sub, func(b *testing.B) {
					w, err := workload.Parse(spec)
					if err != nil {
						b.Fatal(err)
					}
					benchGenerator(b, w, c, sessions)
				})
			}
		}
	}
}

func benchGenerator(b *testing.B, w workload.Workload, c kv.Codec, sessions int) {
	srv, err := kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathShm, PoolBytes: 256 << 20, LockThread: true, PoolIdle: -1, Codecs: []kv.Codec{kv.CodecCFHybrid, c}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Endpoints: 1, Sessions: sessions, Datapath: kv.DatapathShm})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := preload(context.Background(), cl, w); err != nil {
		b.Fatal(err)
	}
	target := meteredTarget{cl.Target(c), srv, cl}
	cfg := bench.Config{Workload: w, Target: target, Outstanding: 32, Duration: time.Second, Check: true, Seed: 1}
	if _, err := bench.Run(context.Background(), bench.Config{Workload: w, Target: target, Outstanding: 32, Duration: 200 * time.Millisecond, Check: true}); err != nil {
		b.Fatal(err) // warm-up
	}
	var gen, server time.Duration
	var reqs uint64
	var faults, sleeps int64
	b.ResetTimer()
	for range b.N {
		busy0, n0, err := srv.Usage()
		if err != nil {
			b.Fatal(err)
		}
		cpu0, flt0, sw0 := processCPU(b)
		r, err := bench.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		cpu1, flt1, sw1 := processCPU(b)
		faults += flt1 - flt0
		sleeps += sw1 - sw0
		busy1, n1, _ := srv.Usage()
		if r.Mismatches != 0 || r.Errors != 0 || n1 <= n0 {
			b.Fatalf("result %v, %d requests served", r, n1-n0)
		}
		server += busy1 - busy0
		gen += cpu1 - cpu0 - (busy1 - busy0)
		reqs += n1 - n0
	}
	b.StopTimer()
	b.ReportMetric(float64(gen)/float64(reqs), "gen-ns/req")
	b.ReportMetric(float64(server)/float64(reqs), "server-ns/req")
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
	// Minor page faults per request in the timed runs (the whole process):
	// first touches of pool memory, which cost CPU time the steady state
	// should not have.
	b.ReportMetric(float64(faults)/float64(reqs), "minflt/req")
	// Voluntary context switches per request (the whole process): each is
	// a sleep and a later wake-up, two system calls or more.
	b.ReportMetric(float64(sleeps)/float64(reqs), "nvcsw/req")
}

// BenchmarkSaturation runs the saturation point of `cornflakes bench` with
// busy polling (a busy-polling server endpoint, one spinning generator
// goroutine, closed loop with bench.SaturationOutstanding requests in
// flight, every response checked) against an in-process kv server on shm,
// with the generator's requests on one connection of DefaultSessions
// sessions ("1x4", what RunBench does by default) or on
// BenchSaturationClients single-session connections ("4x1",
// BenchConfig.Sessions = 1; docs/perf/load12.md). It reports the rate, the server's CPU time per
// request (server-ns/req) and its busy fraction (server-busy: server CPU
// time per second of the run): a server busy well below 1 means the load
// generator is the bound, and then the generator's cost per request is
// about 1/rate. With -cpuprofile, -focus 'bench.\(\*client\)' shows the
// generator's side alone. b.N is the number of one-second runs.
//
//	go test -run XXX -bench Saturation -benchtime 2x ./kv/kvbench
func BenchmarkSaturation(b *testing.B) {
	for _, spec := range []string{"cdn:objects=2000", "ycsb:records=20000,shape=2x2048", "google:keys=20000", "twitter:keys=20000"} {
		for _, c := range []kv.Codec{kv.CodecCFHybrid, kv.CodecVTProtobuf} {
			for _, shape := range [][2]int{{BenchSaturationClients / DefaultSessions, DefaultSessions}, {BenchSaturationClients, 1}} {
				name := fmt.Sprintf("%s/%s/%dx%d", strings.Split(spec, ":")[0], strings.ReplaceAll(c.String(), "/", "-"), shape[0], shape[1])
				b.Run(name, func(b *testing.B) {
					w, err := workload.Parse(spec)
					if err != nil {
						b.Fatal(err)
					}
					benchSaturation(b, w, c, shape[0], shape[1])
				})
			}
		}
	}
}

func benchSaturation(b *testing.B, w workload.Workload, c kv.Codec, conns, sessions int) {
	srv, err := kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathShm, PoolBytes: 256 << 20, LockThread: true, BusyPoll: true, PoolIdle: -1, Codecs: []kv.Codec{kv.CodecCFHybrid, c}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Endpoints: 1, Sessions: sessions, Datapath: kv.DatapathShm})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := preload(context.Background(), cl, w); err != nil {
		b.Fatal(err)
	}
	target := meteredTarget{cl.Target(c), srv, cl}
	cfg := bench.Config{Workload: w, Target: target, Outstanding: bench.SaturationOutstanding, Spin: true,
		ConnsPerClient: conns, Duration: time.Second, Check: true, Seed: 1}
	warm := cfg
	warm.Duration = 200 * time.Millisecond
	if _, err := bench.Run(context.Background(), warm); err != nil {
		b.Fatal(err)
	}
	var server, window time.Duration
	var reqs uint64
	var achieved float64
	b.ResetTimer()
	for range b.N {
		busy0, n0, err := srv.Usage()
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		r, err := bench.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		window += time.Since(t0)
		busy1, n1, _ := srv.Usage()
		if r.Mismatches != 0 || r.Errors != 0 || n1 <= n0 {
			b.Fatalf("result %v, %d requests served", r, n1-n0)
		}
		server += busy1 - busy0
		reqs += n1 - n0
		achieved += r.AchievedRPS
	}
	b.StopTimer()
	b.ReportMetric(float64(server)/float64(reqs), "server-ns/req")
	b.ReportMetric(achieved/float64(b.N), "req/s")
	b.ReportMetric(server.Seconds()/window.Seconds(), "server-busy")
}

// clientBatchWorkload is BenchmarkClientBatch's data set.
const clientBatchWorkload = "twitter:keys=2000"

// BenchmarkClientBatch measures the load generator's transport work per
// request at the saturation point's window, in lockstep so that it runs
// under callgrind (which serializes threads: a spinning generator would
// count its empty polls): each op sends bench.SaturationOutstanding
// requests (twitter, no model check) spread over the connections, waits
// until the server has answered them all, then polls each connection
// once. The shapes are RunBench's default saturation client ("1x4": one
// connection of DefaultSessions sessions) and BenchConfig.Sessions = 1's
// ("4x1": four connections of one session). For the client's instructions per
// request, run the server in another process and take the difference of
// two run lengths (ops x 32; toggling collection on the Conn methods is
// unreliable: Go's stack switches unbalance callgrind's call tracking):
//
//	cornflakes kv serve --datapath shm --addr 127.0.0.1:7411 --workload twitter:keys=2000 &
//	go test -c -o kvb.test ./kv/kvbench
//	KVBENCH_SERVER=127.0.0.1:7411 GOGC=off GODEBUG=cpu.rdtscp=off valgrind --tool=callgrind \
//		./kvb.test -test.run XXX -test.bench 'ClientBatch/1x4' -test.benchtime 100x   # and 300x
func BenchmarkClientBatch(b *testing.B) {
	for _, shape := range [][2]int{{BenchSaturationClients / DefaultSessions, DefaultSessions}, {BenchSaturationClients, 1}} {
		b.Run(fmt.Sprintf("%dx%d", shape[0], shape[1]), func(b *testing.B) { benchClientBatch(b, shape[0], shape[1]) })
	}
}

func benchClientBatch(b *testing.B, conns, sessions int) {
	w, err := workload.Parse(clientBatchWorkload)
	if err != nil {
		b.Fatal(err)
	}
	// KVBENCH_SERVER names a server in another process (`cornflakes kv
	// serve --datapath shm --workload` clientBatchWorkload): under
	// callgrind the whole process is then the client, and the difference
	// of two runs of different lengths is the client's cost per round.
	var srv *kv.Server
	addr, _ := netip.ParseAddrPort(os.Getenv("KVBENCH_SERVER"))
	if !addr.IsValid() {
		if srv, err = kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathShm, PoolBytes: 64 << 20, LockThread: true, PoolIdle: -1}); err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		addr = srv.Addr()
	}
	cl, err := kv.NewClient(kv.ClientConfig{Server: addr, Endpoints: 1, Sessions: sessions, Datapath: kv.DatapathShm})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if srv != nil {
		if err := preload(context.Background(), cl, w); err != nil {
			b.Fatal(err)
		}
	}
	cns := make([]*kv.Conn, conns)
	for i := range cns {
		if cns[i], err = cl.Dial(kv.CodecCFHybrid); err != nil {
			b.Fatal(err)
		}
		defer cns[i].Close()
	}
	const window = bench.SaturationOutstanding
	st := w.NewStream(0, 1, 1)
	reqs := make([]workload.Request, window)
	got := 0
	deliver := func(id uint64, resp *workload.Response) {
		if resp.Status != workload.StatusOK {
			b.Fatalf("request %d: status %v", id, resp.Status)
		}
		got++
	}
	var served uint64
	if srv != nil {
		if _, served, err = srv.Usage(); err != nil {
			b.Fatal(err)
		}
	}
	round := func() {
		for _, cn := range cns {
			if err := cn.BeginSends(); err != nil {
				b.Fatal(err)
			}
		}
		for i := range reqs {
			st.Next(&reqs[i])
			if err := cns[i%conns].Send(uint64(i), &reqs[i]); err != nil {
				b.Fatal(err)
			}
		}
		for _, cn := range cns {
			if err := cn.EndSends(); err != nil {
				b.Fatal(err)
			}
		}
		served += window
		deadline := time.Now().Add(10 * time.Second)
		for srv != nil {
			_, n, err := srv.Usage()
			if err != nil {
				b.Fatal(err)
			}
			if n >= served {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("server answered %d of %d", n, served)
			}
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Millisecond) // the last answers' flush
		got = 0
		for _, cn := range cns {
			if _, err := cn.Poll(deliver); err != nil {
				b.Fatal(err)
			}
		}
		for got < window { // late answers (not expected): poll until all are in
			for _, cn := range cns {
				if _, err := cn.Poll(deliver); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for range 20 {
		round()
	}
	b.ResetTimer()
	for range b.N {
		round()
	}
}
