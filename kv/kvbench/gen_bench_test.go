package kvbench

import (
	"context"
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
// runtime). Neither side busy-polls, so idle time is not CPU time. b.N is
// the number of one-second runs.
//
//	go test -run XXX -bench Generator -benchtime 2x ./kv/kvbench
func BenchmarkGenerator(b *testing.B) {
	for _, spec := range []string{"cdn:objects=2000", "ycsb:records=20000,shape=2x2048", "google:keys=20000", "twitter:keys=20000"} {
		for _, c := range []kv.Codec{kv.CodecCFHybrid, kv.CodecVTProtobuf} {
			name := strings.Split(spec, ":")[0] + "/" + strings.ReplaceAll(c.String(), "/", "-")
			b.Run(name, func(b *testing.B) {
				w, err := workload.Parse(spec)
				if err != nil {
					b.Fatal(err)
				}
				benchGenerator(b, w, c)
			})
		}
	}
}

func benchGenerator(b *testing.B, w workload.Workload, c kv.Codec) {
	srv, err := kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathShm, PoolBytes: 256 << 20, LockThread: true, PoolIdle: -1, Codecs: []kv.Codec{kv.CodecCFHybrid, c}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Endpoints: 1, Datapath: kv.DatapathShm})
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
