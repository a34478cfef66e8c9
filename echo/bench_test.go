package echo

import (
	"runtime"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
)

// BenchmarkServerHandle measures the server's per-request work for each
// approach on 2x2048 over udp loopback: handle (decode, build, send) and
// Flush, with the client endpoint draining the responses. It reports
// allocations: the raw, one/two-copy and cornflakes paths allocate
// nothing per request.
func BenchmarkServerHandle(b *testing.B) {
	for _, a := range Approaches() {
		b.Run(a, func(b *testing.B) {
			benchHandle(b, "udp", a, "2x2048")
		})
	}
}

// BenchmarkServerHandleShm is BenchmarkServerHandle on shm for raw and
// the Cornflakes approaches (the hybrid-vs-raw ratio). For
// instruction counts per request:
//
//	go test -c -o echo.test ./echo
//	GODEBUG=cpu.rdtscp=off valgrind --tool=callgrind ./echo.test -test.run XXX \
//		-test.bench 'ServerHandleShm/raw$' -test.benchtime 20000x
func BenchmarkServerHandleShm(b *testing.B) {
	for _, a := range []string{"raw", "cornflakes-hybrid", "cornflakes-copy", "cornflakes-zerocopy"} {
		b.Run(a, func(b *testing.B) {
			benchHandle(b, "shm", a, "2x2048")
		})
	}
}

func benchHandle(b *testing.B, dp, approach, shapeName string) {
	shape, err := shapeByName(shapeName)
	if err != nil {
		b.Fatal(err)
	}
	ss, err := openSide(dp, "bench server", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := openSide(dp, "bench client", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := newServer(ss, approach, shape)
	if err != nil {
		b.Fatal(err)
	}
	reqs, err := requestPayloads(approach, shape, ss.app)
	if err != nil {
		b.Fatal(err)
	}
	// The request as the server would receive it: header + payload in
	// an RX-like buffer of the server's pool.
	pkt, err := ss.pool.AllocCopy(append(hdrFor(0), reqs[0].Bytes()...))
	if err != nil {
		b.Fatal(err)
	}
	dst := cs.ep.LocalAddr()
	pkts := make([]datapath.Packet, 32)
	drain := func() {
		for {
			n, err := cs.ep.Recv(pkts)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				return
			}
			for _, p := range pkts[:n] {
				p.Buf.Release()
			}
		}
	}
	// Connect before timing: the first send dials the client, which
	// accepts in its own receive calls (shm checks its socket at most
	// every millisecond); sends before that queue in the server's TX
	// slots, and a fast loop could fill them all (ErrBusy).
	if err := srv.handle(&datapath.Packet{Buf: pkt, From: dst}); err != nil {
		b.Fatal(err)
	}
	for deadline, got := time.Now().Add(10*time.Second), 0; got == 0; {
		if err := ss.ep.Flush(); err != nil {
			b.Fatal(err)
		}
		n, err := cs.ep.Recv(pkts)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pkts[:n] {
			p.Buf.Release()
		}
		got += n
		if got == 0 {
			if time.Now().After(deadline) {
				b.Fatal("no response within 10 s")
			}
			if err := cs.ep.Wait(time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
	}
	if srv.cf != nil {
		srv.cf.reset()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuclock.Thread()
	for i := 0; i < b.N; i++ {
		if err := srv.handle(&datapath.Packet{Buf: pkt, From: dst}); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			if err := ss.ep.Flush(); err != nil {
				b.Fatal(err)
			}
			if srv.cf != nil {
				srv.cf.reset()
			}
			drain()
		}
	}
	b.StopTimer()
	// Thread CPU time is robust to other load on the machine.
	b.ReportMetric(float64(cpuclock.Thread()-cpu0)/float64(b.N), "cpu-ns/op")
	ss.ep.Flush()
	if srv.cf != nil {
		srv.cf.reset()
	}
	drain()
	pkt.Release()
	for _, r := range reqs {
		r.Release()
	}
	srv.close()
	if err := cs.close(); err != nil {
		b.Fatal(err)
	}
	if err := ss.close(); err != nil {
		b.Fatal(err)
	}
}
