package echo

import (
	"runtime"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
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
//		-test.run XXX -test.bench 'LoopShm/raw$' -test.benchtime 1000x
//
// (collected / (32 * 1000); clientStep for the client).
func BenchmarkLoopShm(b *testing.B) {
	for _, a := range []string{"raw", "cornflakes-hybrid"} {
		b.Run(a, func(b *testing.B) { benchLoop(b, "shm", a, "2x2048") })
	}
}

func benchLoop(b *testing.B, dp, approach, shapeName string) {
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
	for range b.N {
		if !full() {
			b.Fatal("a short batch")
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
