package shm_test

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// BenchmarkRecvCross measures the receive of a batch that another thread
// (normally another core) just wrote: a sender goroutine, on its own
// thread, keeps posting packets of a 48-byte head and one 2048-byte
// zero-copy segment (what a kv server sends for a value) as fast as the
// receiver frees slots; the receiver receives them in place
// (RecvSegments: "segs", the load generator's receive) or gathered (Recv:
// "copy", the echo server's). The metric is the median wall time per packet
// of the receive calls that returned a full batch of 32 (rx-ns/pkt), so
// that preemption on a loaded machine (a few calls) does not move it;
// "prefetch"/"plain" switch touchBatch on and off. When both threads share
// one core the misses it overlaps do not happen: compare the two only
// from interleaved runs (-count).
func BenchmarkRecvCross(b *testing.B) {
	for _, mode := range []string{"segs", "copy"} {
		for _, pf := range []bool{false, true} {
			name := mode + "/plain"
			if pf {
				name = mode + "/prefetch"
			}
			b.Run(name, func(b *testing.B) {
				old := shm.SetPrefetchRx(pf)
				defer shm.SetPrefetchRx(old)
				benchRecvCross(b, mode == "segs")
			})
		}
	}
}

func benchRecvCross(b *testing.B, segs bool) {
	const batch = 32
	a, c, app := benchPair(b, true)
	v, err := app.AllocCopy(make([]byte, 2048))
	if err != nil {
		b.Fatal(err)
	}
	defer v.Release()
	dst := c.LocalAddr()
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() { // the sender owns a
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		head := make([]byte, 48)
		vs := []mem.Buf{v}
		for !stop.Load() {
			for range batch {
				if err := a.SendSegments(dst, head, vs); err != nil {
					if errors.Is(err, shm.ErrBusy) {
						break
					}
					done <- err
					return
				}
			}
			if err := a.Flush(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sp := make([]datapath.Segmented, batch)
	pk := make([]datapath.Packet, batch)
	per := make([]float64, 0, b.N/batch+1)
	base := time.Now()
	got := 0
	recv := func() int {
		t0 := time.Since(base)
		var n int
		if segs {
			n, err = c.RecvSegments(sp)
		} else {
			n, err = c.Recv(pk)
		}
		t1 := time.Since(base)
		if err != nil {
			b.Fatal(err)
		}
		if n == batch {
			per = append(per, float64(t1-t0)/batch)
		}
		for k := range n {
			if segs {
				_ = sp[k].Hold.Release()
				sp[k] = datapath.Segmented{}
			} else {
				_ = pk[k].Buf.Release()
				pk[k] = datapath.Packet{}
			}
		}
		if n == 0 {
			_ = c.Flush()
		}
		return n
	}
	for got < 20000 { // the rendezvous, then a warm-up
		got += recv()
	}
	per = per[:0]
	got = 0
	b.ResetTimer()
	for got < b.N {
		got += recv()
	}
	b.StopTimer()
	stop.Store(true)
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			for range 100 {
				recv()
			}
			if len(per) > 0 {
				slices.Sort(per)
				b.ReportMetric(per[len(per)/2], "rx-ns/pkt")
				b.ReportMetric(float64(len(per)*batch)/float64(b.N), "full-share")
			}
			return
		default:
			recv()
		}
	}
}

// BenchmarkSendCross is BenchmarkRecvCross's other side: the benchmark
// goroutine sends batches of 32 packets (a 48-byte head and one 2048-byte
// zero-copy segment) to a receiver on another thread that receives them in
// place, reads each head and releases it. The metric is the median wall
// time per packet of a batch's whole round (tx-ns/pkt): waiting for half
// the slots to be free (rare: the receiver is faster), the 32
// SendSegments calls and the Flush, which reaps the completions (where
// touchSlot writes); "prefetch"/"plain" switch touchSlot.
func BenchmarkSendCross(b *testing.B) {
	for _, pf := range []bool{false, true} {
		name := "plain"
		if pf {
			name = "prefetch"
		}
		b.Run(name, func(b *testing.B) {
			old := shm.SetPrefetchTx(pf)
			defer shm.SetPrefetchTx(old)
			benchSendCross(b)
		})
	}
}

func benchSendCross(b *testing.B) {
	const batch = 32
	a, c, app := benchPair(b, true)
	v, err := app.AllocCopy(make([]byte, 2048))
	if err != nil {
		b.Fatal(err)
	}
	defer v.Release()
	dst := c.LocalAddr()
	var stop atomic.Bool
	var recvd atomic.Int64 // packets the receiver got
	done := make(chan error, 1)
	go func() { // the receiver owns c
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		sp := make([]datapath.Segmented, batch)
		var sum byte
		for !stop.Load() {
			n, err := c.RecvSegments(sp)
			if err != nil {
				done <- err
				return
			}
			for k := range n {
				for _, x := range sp[k].Segs[0] {
					sum += x
				}
				_ = sp[k].Hold.Release()
				sp[k] = datapath.Segmented{}
			}
			recvd.Add(int64(n))
			if n == 0 {
				_ = c.Flush()
			}
		}
		_ = sum
		done <- nil
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	head := make([]byte, 48)
	vs := []mem.Buf{v}
	per := make([]float64, 0, b.N/batch+1)
	base := time.Now()
	sent := int64(0)
	round := func() {
		t0 := time.Since(base)
		// Keep at most half the slots in flight, so that a batch finds
		// free slots (completed ones are reaped by Flush).
		for sent-recvd.Load() > shm.DefaultSlots/2 {
			_ = a.Flush()
		}
		k := 0
		for ; k < batch; k++ {
			if err := a.SendSegments(dst, head, vs); err != nil {
				if errors.Is(err, shm.ErrBusy) {
					break
				}
				b.Fatal(err)
			}
		}
		sent += int64(k)
		if err := a.Flush(); err != nil {
			b.Fatal(err)
		}
		if k == batch {
			per = append(per, float64(time.Since(base)-t0)/batch)
		}
	}
	for range 1000 { // the rendezvous, then a warm-up
		round()
	}
	per = per[:0]
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		round()
	}
	b.StopTimer()
	stop.Store(true)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if len(per) > 0 {
		slices.Sort(per)
		b.ReportMetric(per[len(per)/2], "tx-ns/pkt")
		b.ReportMetric(float64(len(per)*batch)/float64(b.N), "full-share")
	}
}
