package kv

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

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
