package kv

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Preload loads w into the server through cn (bench.Preload); the
// package's tests use it, kvbench.Preload is the same for programs.
func Preload(ctx context.Context, w workload.Workload, cn bench.Conn, window int) (int, error) {
	return bench.Preload(ctx, w, cn, window, 0)
}

// preload loads w through one Cornflakes connection of cl.
func preload(ctx context.Context, cl *Client, w workload.Workload) error {
	cn, err := cl.Dial(CodecCFHybrid)
	if err != nil {
		return err
	}
	_, err = Preload(ctx, w, cn, 32)
	if cerr := cn.Close(); err == nil {
		err = cerr
	}
	return err
}

// countSink stands in for the datapath's scatter-gather list.
type countSink struct{ n, bytes int }

func (s *countSink) ZeroCopyEntry(b mem.Buf) error { s.n++; s.bytes += b.Len(); return nil }

// BenchmarkServerPath measures the server's CPU work per request, without
// the network: decode the request, execute it against the store, build the
// response and produce what goes to the datapath (Cornflakes: serialize the
// header and copied fields into a packet-sized buffer, zero-copy entries to
// a sink; the baselines: their serialized bytes, copied into a packet
// buffer when the library produced them in its own memory).
//
//	go test -run XXX -bench ServerPath ./kv
func BenchmarkServerPath(b *testing.B) {
	shapes := []struct {
		name  string
		setup *workload.Request
		get   *workload.Request
	}{
		{"get-4096", req(workload.OpPut, []string{"k"}, []string{val(4096, 1)}, 0), req(workload.OpGet, []string{"k"}, nil, 0)},
		{"get-256", req(workload.OpPut, []string{"k"}, []string{val(256, 1)}, 0), req(workload.OpGet, []string{"k"}, nil, 0)},
		{"getlist-2x2048", req(workload.OpPutList, []string{"k"}, []string{val(2048, 1), val(2048, 2)}, 0), req(workload.OpGetList, []string{"k"}, nil, 0)},
		{"getlist-google", req(workload.OpPutList, []string{"k"}, []string{val(12, 1), val(40, 2), val(700, 3), val(5, 4)}, 0), req(workload.OpGetList, []string{"k"}, nil, 0)},
		{"getfromlist-8000", req(workload.OpPutList, []string{"k"}, []string{val(8000, 1), val(8000, 2)}, 0), req(workload.OpGetFromList, []string{"k"}, nil, 1)},
	}
	for _, sh := range shapes {
		for _, c := range AllCodecs() {
			b.Run(fmt.Sprintf("%s/%v", sh.name, c), func(b *testing.B) {
				pool, err := mem.NewPool(mem.PoolConfig{Name: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				s := NewStore(pool, 1)
				cli, _ := newCodec(c)
				srv, _ := newCodec(c)
				enc := func(r *workload.Request) []byte {
					bd, err := cli.encodeRequest(r, pool)
					if err != nil {
						b.Fatal(err)
					}
					p, err := bd.appendTo(nil)
					if err != nil {
						b.Fatal(err)
					}
					cli.done()
					return p
				}
				var q Query
				var res Result
				q.reset(sh.setup.Op)
				if err := srv.decodeRequest(sh.setup.Op, enc(sh.setup), &q); err != nil {
					b.Fatal(err)
				}
				if err := s.Exec(&q, &res, 1<<20); err != nil {
					b.Fatal(err)
				}
				srv.done()
				p := enc(sh.get)
				pkt := make([]byte, 9000)
				var sink countSink
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q.reset(sh.get.Op)
					if err := srv.decodeRequest(sh.get.Op, p, &q); err != nil {
						b.Fatal(err)
					}
					if err := s.Exec(&q, &res, 1<<20); err != nil {
						b.Fatal(err)
					}
					out, err := srv.encodeResponse(sh.get.Op, &res, pool)
					if err != nil {
						b.Fatal(err)
					}
					switch {
					case out.obj != nil:
						sz := out.obj.Sizes()
						if err := out.obj.Serialize(pkt[:sz.Head()], &sink); err != nil {
							b.Fatal(err)
						}
					case !out.buf.IsZero():
						_ = out.buf.Release()
					default:
						copy(pkt, out.bytes)
					}
					srv.done()
					res.Release()
				}
				b.StopTimer()
				s.Clear()
				if err := pool.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkEndToEnd measures whole requests through the RPC transport over
// loopback UDP: a busy-polling server endpoint on its own goroutine, one
// client connection on the benchmark goroutine keeping 32 requests in
// flight. server-ns/op is the server's busy time per request
// (Server.Usage). The workloads are issue 5's four goal workloads with
// smaller stores; scripts/serialization-bound.sh profiles these runs to
// bound what any serializer can gain over kernel UDP. memnet is left out:
// its deliveries run in endpoint calls that a polling server and client
// starve on a two-core machine.
//
//	go test -run XXX -bench EndToEnd ./kv
func BenchmarkEndToEnd(b *testing.B) {
	for _, spec := range []string{"google:keys=2000", "cdn:objects=200", "twitter:keys=20000", "ycsb:records=20000,shape=2x2048"} {
		w, err := workload.Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		for _, dp := range []string{DatapathUDP, DatapathShm} {
			name := dp + "/" + strings.Split(spec, ":")[0]
			for _, c := range []Codec{CodecCFHybrid, CodecVTProtobuf, CodecFlatBuffers} {
				b.Run(fmt.Sprintf("%s/%v", name, c), func(b *testing.B) { benchEndToEnd(b, dp, w, c, 0, false) })
				if dp == DatapathShm {
					// The client receiving with Recv (every response
					// copied out of the server's memory) instead of in
					// place: the receive path before issue 22's redesign.
					b.Run(fmt.Sprintf("%s/%v/contiguous", name, c), func(b *testing.B) { benchEndToEnd(b, dp, w, c, 0, true) })
				}
			}
			if dp == DatapathUDP {
				// Hybrid with a threshold below the 8000-byte CDN segments:
				// values go out as their own iovec instead of being copied
				// into the packet buffer.
				b.Run(fmt.Sprintf("%s/%v@4096", name, CodecCFHybrid), func(b *testing.B) { benchEndToEnd(b, dp, w, CodecCFHybrid, 4096, false) })
			}
		}
	}
}

// threadCPU is the CPU time of the calling thread.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEndToEnd reports, besides the time per request, the server's busy
// time per request (server-ns/op) and the client goroutine's CPU time per
// request (client-ns/op: its thread's, the goroutine locked to it).
// contiguous makes the client receive with Recv (rpc.EndpointConfig.
// ContiguousRecv).
func benchEndToEnd(b *testing.B, dp string, w workload.Workload, c Codec, threshold int, contiguous bool) {
	benchEndToEndWith(b, dp, w, c, threshold, contiguous, true)
}

// BenchmarkShmReceive is BenchmarkEndToEnd's ycsb 2x2048 on shm with a
// server that sleeps when idle (no busy polling: it runs under callgrind,
// which serializes threads), the client receiving in place and, for
// comparison, with Recv (contiguous). For instruction counts per request:
//
//	go test -c -o kv.test ./kv
//	GODEBUG=cpu.rdtscp=off valgrind --tool=callgrind ./kv.test -test.run XXX \
//		-test.bench 'ShmReceive/cornflakes-hybrid$' -test.benchtime 5000x
func BenchmarkShmReceive(b *testing.B) {
	w, err := workload.Parse("ycsb:records=2000,shape=2x2048")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []Codec{CodecCFHybrid, CodecVTProtobuf} {
		for _, contiguous := range []bool{false, true} {
			name := strings.ReplaceAll(c.String(), "/", "-")
			if contiguous {
				name += "-contiguous"
			}
			b.Run(name, func(b *testing.B) { benchEndToEndWith(b, DatapathShm, w, c, 0, contiguous, false) })
		}
	}
}

func benchEndToEndWith(b *testing.B, dp string, w workload.Workload, c Codec, threshold int, contiguous, busyPoll bool) {
	srv, err := NewServer(ServerConfig{Datapath: dp, PoolBytes: 256 << 20, BusyPoll: busyPoll, Codecs: []Codec{CodecCFHybrid, c}, Threshold: threshold})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cc := ClientConfig{Server: srv.Addr(), Endpoints: 1, Datapath: dp}
	cc.RPC.ContiguousRecv = contiguous
	cl, err := NewClient(cc)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := preload(context.Background(), cl, w); err != nil {
		b.Fatal(err)
	}
	cn, err := cl.Dial(c)
	if err != nil {
		b.Fatal(err)
	}
	defer cn.Close()
	const window = 32
	reqs := make([]workload.Request, window)
	s := w.NewStream(0, 1, 1)
	done, sent := 0, 0
	deliver := func(id uint64, resp *workload.Response) {
		if resp.Status == workload.StatusError {
			b.Fatalf("request %d failed", id)
		}
		done++
	}
	run := func(n int) {
		done, sent = 0, 0
		for done < n {
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
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run(10000) // warm-up
	busy0, n0, _ := srv.Usage()
	cpu0 := threadCPU(b)
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	cpu1 := threadCPU(b)
	busy1, n1, _ := srv.Usage()
	if n1 > n0 {
		b.ReportMetric(float64(busy1-busy0)/float64(n1-n0), "server-ns/op")
	}
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "client-ns/op")
}

// BenchmarkShmCDN is BenchmarkShmReceive's setup on issue 22's cdn workload
// (GetFromList of one 8000-byte segment per request), the server sleeping
// when idle so that it runs under callgrind. For instruction counts of the
// server's and the client's side per request (docs/perf/echo15.md):
//
//	go test -c -o kv.test ./kv
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind ./kv.test \
//		-test.run XXX -test.bench 'ShmCDN/cornflakes-hybrid$' -test.benchtime 20000x
func BenchmarkShmCDN(b *testing.B) {
	w, err := workload.Parse("cdn:objects=200")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []Codec{CodecCFHybrid, CodecVTProtobuf} {
		b.Run(strings.ReplaceAll(c.String(), "/", "-"), func(b *testing.B) { benchEndToEndWith(b, DatapathShm, w, c, 0, false, false) })
	}
}
