package shm_test

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

func benchPair(b *testing.B, busy bool) (*shm.Endpoint, *shm.Endpoint, *mem.Pool) {
	b.Helper()
	space := testSpace(b)
	app, err := mem.NewPool(mem.PoolConfig{Name: "bench app", Space: space})
	if err != nil {
		b.Fatal(err)
	}
	open := func() *shm.Endpoint {
		ep, err := shm.Open(datapath.Config{BusyPoll: busy, Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}}})
		if err != nil {
			b.Fatal(err)
		}
		return ep
	}
	a, c := open(), open()
	b.Cleanup(func() {
		_ = a.Close()
		_ = c.Close()
		if err := app.Close(); err != nil {
			b.Error(err)
		}
	})
	return a, c, app
}

// BenchmarkPingPong: a 64-byte packet to an echo goroutine and back (one
// round trip per op), with blocking Waits (eventfd wake-ups) and with
// busy polling.
func BenchmarkPingPong(b *testing.B) {
	for _, busy := range []bool{false, true} {
		name := "blocking"
		if busy {
			name = "busypoll"
		}
		b.Run(name, func(b *testing.B) {
			a, srv, _ := benchPair(b, busy)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the echo server owns srv
				defer close(done)
				pk := make([]datapath.Packet, 8)
				for {
					select {
					case <-stop:
						return
					default:
					}
					n, _ := srv.Recv(pk)
					for _, p := range pk[:n] {
						_ = srv.Send(p.From, p.Buf.Bytes())
						_ = p.Buf.Release()
					}
					if n > 0 {
						_ = srv.Flush()
					} else {
						_ = srv.Wait(shortWait)
					}
				}
			}()
			msg := make([]byte, 64)
			pk := make([]datapath.Packet, 1)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for range b.N {
				if err := a.Send(srv.LocalAddr(), msg); err != nil {
					b.Fatal(err)
				}
				_ = a.Flush()
				for {
					n, _ := a.Recv(pk)
					if n == 1 {
						_ = pk[0].Buf.Release()
						break
					}
					_ = a.Wait(shortWait)
				}
			}
			b.StopTimer()
			cpu.report(b)
			close(stop)
			_ = srv.Wake()
			<-done
		})
	}
}

const shortWait = 1e6 // 1 ms

// BenchmarkPingPongProcess: 64-byte packets to the echo helper process
// (SHM_TEST_CHILD=echo, blocking Waits) and back: one round trip per op
// between two processes.
func BenchmarkPingPongProcess(b *testing.B) {
	srv := randAddr()
	_, _ = child(b, "echo", srv.String())
	a, _, _ := benchPair(b, false)
	msg := append([]byte{'R'}, make([]byte, 63)...)
	pk := make([]datapath.Packet, 1)
	// The first exchange connects.
	for done := false; !done; {
		if err := a.Send(srv, msg); err != nil {
			b.Fatal(err)
		}
		_ = a.Flush()
		for range 1000 {
			if n, _ := a.Recv(pk); n == 1 {
				_ = pk[0].Buf.Release()
				done = true
				break
			}
			_ = a.Wait(shortWait)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	for range b.N {
		if err := a.Send(srv, msg); err != nil {
			b.Fatal(err)
		}
		_ = a.Flush()
		for {
			if n, _ := a.Recv(pk); n == 1 {
				_ = pk[0].Buf.Release()
				break
			}
			_ = a.Wait(shortWait)
		}
	}
	b.StopTimer()
	cpu.report(b) // this process only
	_ = a.Send(srv, []byte{'Q'})
	_ = a.Flush()
}

// BenchmarkObject2x2048 sends a message of two 2048-byte values from A to
// B and receives it, both endpoints on one goroutine (so ns/op is the CPU
// cost of both sides per message), in batches of 16:
//
//   - zerocopy: SendObject with both values as descriptors, RecvSegments
//     and DecodeSegments (the values alias the sender's memory);
//   - copied: the same object with CopyAll (values copied into the TX
//     slot), Recv into an RX buffer and Decode;
//   - raw: Send of 4096 bytes and Recv (the datapath's copy floor).
func BenchmarkObject2x2048(b *testing.B) { benchObject(b, 2048) }

// BenchmarkObject2x65536 is BenchmarkObject2x2048 with 64 KiB values.
func BenchmarkObject2x65536(b *testing.B) { benchObject(b, 65536) }

func benchObject(b *testing.B, size int) {
	const batch = 16
	for _, mode := range []string{"zerocopy", "copied", "raw"} {
		b.Run(mode, func(b *testing.B) {
			a, c, app := benchPair(b, false)
			v1, _ := app.AllocCopy(make([]byte, size))
			v2, _ := app.AllocCopy(make([]byte, size))
			defer v1.Release()
			defer v2.Release()
			raw := make([]byte, 2*size+16)
			sa, ra := wire.NewArena(), wire.NewArena()
			sa.Threshold = 512
			if mode == "copied" {
				sa.Threshold = wire.CopyAll
			}
			pk := make([]datapath.Packet, batch)
			sp := make([]datapath.Segmented, batch)
			dst := c.LocalAddr()
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			defer cpu.report(b)
			for i := 0; i < b.N; i += batch {
				for range batch {
					var err error
					if mode == "raw" {
						err = a.Send(dst, raw)
					} else {
						m := cf.NewListBuffers(sa)
						l := m.InitMessages(2)
						l.AppendBuf(v1)
						l.AppendBuf(v2)
						err = a.SendObject(dst, nil, m)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				_ = a.Flush()
				_ = sa.Reset()
				for got := 0; got < batch; {
					var n int
					if mode == "zerocopy" {
						n, _ = c.RecvSegments(sp[:batch-got])
						for _, p := range sp[:n] {
							m := cf.NewListBuffers(ra)
							if err := wire.DecodeSegments(m, p.Segs, 0, p.Hold); err != nil {
								b.Fatal(err)
							}
							_ = p.Hold.Release()
						}
					} else {
						n, _ = c.Recv(pk[:batch-got])
						for _, p := range pk[:n] {
							if mode == "copied" {
								m := cf.NewListBuffers(ra)
								if err := m.Decode(p.Buf); err != nil {
									b.Fatal(err)
								}
							}
							_ = p.Buf.Release()
						}
					}
					got += n
				}
				_ = ra.Reset()
				_ = c.Flush()
			}
		})
	}
}

var _ = netip.AddrPort{}

// cpuTimer reports the process's CPU time per op (user + system, all
// threads) next to ns/op: on a shared machine wall time also counts the
// time other processes hold the cores.
type cpuTimer struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuTimer { return cpuTimer{cpuNow()} }

func (c cpuTimer) report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
}

// holdCount is the datapath.Holder of BenchmarkSegments2x2048/held.
type holdCount struct{ n int }

func (h *holdCount) Release() { h.n-- }

// BenchmarkSegments2x2048 sends packets of two 2048-byte zero-copy
// segments (what the RPC layer sends for a response of two large values)
// in batches of 16 and receives them in place, on one goroutine:
//   - cloned: SendSegments (a reference per segment, released at completion);
//   - held: SendSegmentsHeld (the owner keeps the segments alive; one
//     Holder per packet instead).
//
// For instruction counts, run it under callgrind like BenchmarkObject2x2048.
func BenchmarkSegments2x2048(b *testing.B) {
	const batch = 16
	for _, mode := range []string{"cloned", "held"} {
		b.Run(mode, func(b *testing.B) {
			a, c, app := benchPair(b, false)
			v1, _ := app.AllocCopy(make([]byte, 2048))
			v2, _ := app.AllocCopy(make([]byte, 2048))
			defer v1.Release()
			defer v2.Release()
			segs := []mem.Buf{v1, v2}
			head := make([]byte, 48)
			var h holdCount
			sp := make([]datapath.Segmented, batch)
			dst := c.LocalAddr()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			defer cpu.report(b)
			for i := 0; i < b.N; i += batch {
				for range batch {
					var err error
					if mode == "held" {
						h.n++
						err = a.SendSegmentsHeld(dst, head, segs, &h)
					} else {
						err = a.SendSegments(dst, head, segs)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				_ = a.Flush()
				for got := 0; got < batch; {
					n, _ := c.RecvSegments(sp[:batch-got])
					for _, p := range sp[:n] {
						_ = p.Hold.Release()
					}
					got += n
				}
				_ = c.Flush()
			}
			b.StopTimer()
			for k := 0; h.n != 0 || v1.Refs() != 1; k++ {
				if k == 1000 {
					b.Fatalf("after the run: %d holds, refs %d", h.n, v1.Refs())
				}
				_ = c.Flush()
				_ = a.Flush()
			}
		})
	}
}
