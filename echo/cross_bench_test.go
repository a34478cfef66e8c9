package echo

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLoopShmCross is BenchmarkLoopShm with the server on a thread
// of its own (normally another core, as in a live run) and 64 requests in
// flight (two batches, DefaultClients), so that each side reads what the
// other just wrote from the other core's cache, as in `cornflakes echo`.
// The metrics are medians over the batches that were full (32 requests),
// in wall time per request: the server's receive (srv-recv-ns/req: the
// Recv call) and serve (srv-serve-ns/req: handle, release, Flush, arena
// reset), and the client's step (cli-ns/req: receive in place, check,
// send, Flush; every step that received something, as the server's
// mid-batch flushes split its batches). The median keeps preemption on a loaded machine (a few
// batches) out; when both threads share one core the cross-core misses
// do not happen, so compare binaries only from interleaved runs.
func BenchmarkLoopShmCross(b *testing.B) {
	for _, a := range []string{"raw", "cornflakes-hybrid"} {
		b.Run(a, func(b *testing.B) { benchLoopCross(b, a) })
	}
}

func benchLoopCross(b *testing.B, approach string) {
	shape, err := shapeByName("2x2048")
	if err != nil {
		b.Fatal(err)
	}
	ss, err := openSide("shm", "bench server", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.close()
	cs, err := openSide("shm", "bench client", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.close()
	srv, err := newServer(ss, approach, shape)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	cli, err := newClient(cs, ss.ep.LocalAddr(), approach, shape, Config{Clients: DefaultClients})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.close()
	const batch = 32
	var stop atomic.Bool
	type srvTimes struct{ recv, serve []float64 }
	done := make(chan srvTimes, 1)
	errc := make(chan error, 1)
	go func() { // the server owns ss
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var st srvTimes
		base := time.Now()
		for !stop.Load() {
			t0 := time.Since(base)
			n, err := srv.ep.Recv(srv.pkts)
			t1 := time.Since(base)
			if err == nil && n > 0 {
				err = srv.serve(n)
			}
			if err != nil {
				errc <- err
				return
			}
			if n == batch {
				st.recv = append(st.recv, float64(t1-t0)/batch)
				st.serve = append(st.serve, float64(time.Since(base)-t1)/batch)
			}
		}
		done <- st
	}()
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
	var cliT []float64
	got := 0
	cbase := time.Now()
	step := func() {
		t0 := time.Since(cbase)
		n, err := clientStep(cli)
		if err != nil {
			b.Fatal(err)
		}
		if n > 0 {
			cliT = append(cliT, float64(time.Since(cbase)-t0)/float64(n))
		}
		got += n
		if n == 0 {
			select {
			case err := <-errc:
				b.Fatal(err)
			default:
			}
		}
	}
	for got < 20000 { // the rendezvous, then a warm-up
		step()
	}
	cliT, got = cliT[:0], 0
	b.ResetTimer()
	for got < b.N {
		step()
	}
	b.StopTimer()
	stop.Store(true)
	st := <-done
	// Drain what is still in flight.
	for range 1000 {
		if n, _ := cli.receive(cli.now); n == 0 {
			_ = cli.ep.Flush()
		}
		_, _ = serverStep(srv)
	}
	if cli.bad != 0 || srv.errs != 0 {
		b.Fatalf("%d bad responses, %d server errors", cli.bad, srv.errs)
	}
	med := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(med(st.recv), "srv-recv-ns/req")
	b.ReportMetric(med(st.serve), "srv-serve-ns/req")
	b.ReportMetric(med(cliT), "cli-ns/req")
}
