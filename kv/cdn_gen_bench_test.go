package kv

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// BenchmarkShmCDNGen is the cdn load generator's per-response work on shm,
// with a busy-polling server on its own thread (as live) and issue 22's
// cdn store (10,000 objects of 8,000-byte segments): the client keeps 32
// requests in flight, and every response is checked with
// workload.Model.CheckSpot, as `cornflakes bench` checks it. The metric is
// the median wall time per response of the loop iterations that delivered
// at least 8 responses (gen-ns/resp: the replacement sends, the poll, the
// decode and the check; the iterations that found nothing are left out,
// so a slower server does not count). Compare binaries only interleaved:
// with both threads on one core the cross-core misses do not happen.
// Variants: touch (the client's shm endpoint reads each batch's segments
// together before it returns them: shm.Options.TouchSegments, the
// default) and plain (without).
func BenchmarkShmCDNGen(b *testing.B) {
	for _, v := range []struct {
		name  string
		touch bool
	}{{"touch", true}, {"plain", false}} {
		b.Run(v.name, func(b *testing.B) {
			defer func(t bool) { touchSegmentsOn = t }(touchSegmentsOn)
			touchSegmentsOn = v.touch
			benchShmCDNGen(b)
		})
	}
}

func benchShmCDNGen(b *testing.B) {
	w, err := workload.Parse("cdn:objects=10000")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Datapath: DatapathShm, PoolBytes: 256 << 20, BusyPoll: true, Codecs: []Codec{CodecCFHybrid}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cl, err := NewClient(ClientConfig{Server: srv.Addr(), Endpoints: 1, Datapath: DatapathShm})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := preload(context.Background(), cl, w); err != nil {
		b.Fatal(err)
	}
	cn, err := cl.Dial(CodecCFHybrid)
	if err != nil {
		b.Fatal(err)
	}
	defer cn.Close()
	model := w.Model()
	const window = 32
	reqs := make([]workload.Request, window)
	s := w.NewStream(0, 1, 1)
	done, sent, bad := 0, 0, 0
	deliver := func(id uint64, resp *workload.Response) {
		if resp.Status == workload.StatusError || model.CheckSpot(&reqs[id], resp) != nil {
			bad++
		}
		done++
	}
	var per []float64
	base := time.Now()
	run := func(n int) {
		done, sent = 0, 0
		for done < n {
			t0 := time.Since(base)
			d0 := done
			for sent < n && sent-done < window {
				r := &reqs[sent%window]
				s.Next(r)
				if err := cn.Send(uint64(sent%window), r); err != nil {
					if errors.Is(err, bench.ErrBusy) {
						break
					}
					b.Fatal(err)
				}
				sent++
			}
			if _, err := cn.Poll(deliver); err != nil {
				b.Fatal(err)
			}
			if k := done - d0; k >= 8 {
				per = append(per, float64(time.Since(base)-t0)/float64(k))
			}
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run(20000) // warm-up
	per = per[:0]
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	if bad != 0 {
		b.Fatalf("%d responses failed the check", bad)
	}
	if len(per) > 0 {
		slices.Sort(per)
		b.ReportMetric(per[len(per)/2], "gen-ns/resp")
	}
}
