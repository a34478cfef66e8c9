package echo

import (
	"runtime"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
)

// BenchmarkLoopShm runs the echo's closed loop on one thread over shm,
// 2x2048, a batch at a time: the client sends DefaultBatch requests and
// flushes, the server receives them (Recv: the gathering copy) and
// answers them (serve: handle, release, Flush, arena reset), the client
// receives the responses in place and checks them. Every poll finds a full
// batch, so each side's work per request is measured without the empty
// polls of a live run. For instruction counts per side:
//
//	go test -c -o echo.test ./echo
//	valgrind --tool=callgrind --toggle-collect='*echo.serverStep' ./echo.test \
//		-test.run XXX -test.bench '^BenchmarkLoopShm$/^raw$' -test.benchtime 1000x
//
// (collected / (32 * 1000); clientStep for the client). Anchor the
// pattern: BenchmarkLoopShmCPU calls clientStep too.
func BenchmarkLoopShm(b *testing.B) {
	for _, a := range []string{"raw", "cornflakes-hybrid"} {
		b.Run(a, func(b *testing.B) { benchLoop(b, "shm", a, "2x2048", false) })
	}
}

// BenchmarkLoopShmCPU is BenchmarkLoopShm with each part's thread CPU
// time per request reported: the server's receive (Recv: the gathering
// copy), its serve (handle, release, Flush, arena reset) and the client's
// step. It tells which side a live run is bound by in time, which the
// instruction counts cannot (the receive copy's cost is in cache misses,
// not instructions). A clock read per part per batch (a system call, ~3
// ns per request) is included; a loaded machine inflates every part.
func BenchmarkLoopShmCPU(b *testing.B) {
	for _, a := range []string{"raw", "cornflakes-hybrid"} {
		b.Run(a, func(b *testing.B) { benchLoop(b, "shm", a, "2x2048", true) })
	}
}

func benchLoop(b *testing.B, dp, approach, shapeName string, timed bool) {
	shape, err := shapeByName(shapeName)
	if err != nil {
		b.Fatal(err)
	}
	ss, err := openSide(dp, "bench server", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.close()
	cs, err := openSide(dp, "bench client", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.close()
	srv, err := newServer(ss, approach, shape)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	cli, err := newClient(cs, ss.ep.LocalAddr(), approach, shape, Config{Clients: datapath.DefaultBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := range cli.slots {
		if err := cli.send(i, cli.now()); err != nil {
			b.Fatal(err)
		}
	}
	if err := cli.ep.Flush(); err != nil {
		b.Fatal(err)
	}
	// Until the rendezvous is done (shm accepts in the peer's receive
	// calls), polls can come back short: run until one full round trip.
	full := func() bool {
		n, err := serverStep(srv)
		if err != nil {
			b.Fatal(err)
		}
		m, err := clientStep(cli)
		if err != nil {
			b.Fatal(err)
		}
		return n == len(cli.slots) && m == len(cli.slots)
	}
	for tries := 0; !full(); tries++ {
		if tries > 100000 {
			b.Fatal("no full round trip")
		}
		if err := cs.ep.Wait(0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	if timed {
		loopTimed(b, srv, cli)
	} else {
		for range b.N {
			if !full() {
				b.Fatal("a short batch")
			}
		}
	}
	b.StopTimer()
	if cli.bad != 0 || srv.errs != 0 {
		b.Fatalf("%d bad responses, %d server errors", cli.bad, srv.errs)
	}
	// Drain the last batch.
	for range 100 {
		if _, err := serverStep(srv); err != nil {
			b.Fatal(err)
		}
		if err := cs.ep.Flush(); err != nil {
			b.Fatal(err)
		}
		if n, _ := cli.receive(cli.now); n == 0 {
			break
		}
	}
}

// loopTimed runs b.N full round trips as full does, reading the thread's
// CPU clock between the parts of each.
func loopTimed(b *testing.B, srv *server, cli *client) {
	var recvNs, serveNs, cliNs int64
	for range b.N {
		t0 := cpuclock.Thread()
		n, err := srv.ep.Recv(srv.pkts)
		t1 := cpuclock.Thread()
		if err == nil && n > 0 {
			err = srv.serve(n)
		}
		t2 := cpuclock.Thread()
		if err != nil {
			b.Fatal(err)
		}
		m, err := clientStep(cli)
		t3 := cpuclock.Thread()
		if err != nil {
			b.Fatal(err)
		}
		if n != len(cli.slots) || m != len(cli.slots) {
			b.Fatal("a short batch")
		}
		recvNs += t1 - t0
		serveNs += t2 - t1
		cliNs += t3 - t2
	}
	reqs := float64(b.N) * float64(len(cli.slots))
	b.ReportMetric(float64(recvNs)/reqs, "recv-ns/req")
	b.ReportMetric(float64(serveNs)/reqs, "serve-ns/req")
	b.ReportMetric(float64(cliNs)/reqs, "client-ns/req")
}

// serverStep is one poll of the server loop: Recv, then serve the batch.
//
//go:noinline
func serverStep(s *server) (int, error) {
	n, err := s.ep.Recv(s.pkts)
	if err != nil || n == 0 {
		return n, err
	}
	return n, s.serve(n)
}

// clientStep is one poll of the closed-loop client: receive (in place on
// shm) and check the responses, send the next request of every completed
// slot, flush.
//
//go:noinline
func clientStep(c *client) (int, error) {
	n, err := c.receive(c.now)
	if err != nil || n == 0 {
		return n, err
	}
	now := c.now()
	for _, i := range c.completed {
		if err := c.send(i, now); err != nil {
			return n, err
		}
	}
	return n, c.ep.Flush()
}
