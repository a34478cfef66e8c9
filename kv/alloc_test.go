package kv

import (
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestServerPathAllocs: decoding a request, executing it (a get, a list
// get, a put overwriting a value) and encoding the answer allocates nothing
// once warm for the zero-copy-decoding codecs
// (protobuf-go's Unmarshal copies every bytes field, so it is left out).
func TestServerPathAllocs(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	if raceEnabled {
		t.Skip("allocation counts differ under -race (sync.Pool is randomized)")
	}
	pool, err := mem.NewPool(mem.PoolConfig{Name: "alloc"})
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(pool, 1)
	for _, c := range []Codec{CodecCFHybrid, CodecCFCopy, CodecCFZeroCopy, CodecCFHybridFlat, CodecVTProtobuf, CodecFlatBuffers, CodecCapnp} {
		cli, _ := newCodec(c)
		srv, _ := newCodec(c)
		var q Query
		var res Result
		serve := func(r *workload.Request) {
			b, err := cli.encodeRequest(r, pool)
			if err != nil {
				t.Fatal(err)
			}
			p, err := b.appendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			cli.done()
			q.reset(r.Op)
			if err := srv.decodeRequest(r.Op, p, &q); err != nil {
				t.Fatal(err)
			}
			if err := s.Exec(&q, &res, 1<<20); err != nil {
				t.Fatal(err)
			}
			out, err := srv.encodeResponse(r.Op, &res, pool)
			if err != nil {
				t.Fatal(err)
			}
			var resp workload.Response
			flat, err := out.appendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			srv.done()
			res.Release()
			if err := cli.decodeResponse(r.Op, flat, &resp); err != nil || resp.Status != workload.StatusOK {
				t.Fatalf("%v %v: %v %v", c, r.Op, err, resp.Status)
			}
			cli.done()
		}
		serve(req(workload.OpPut, []string{"k"}, []string{val(4096, 1)}, 0))
		serve(req(workload.OpPutList, []string{"l"}, []string{val(100, 1), val(2048, 2)}, 0))
		// Overwriting a stored value (Store.putOne) is on the list too:
		// the new buffer is swapped into the existing entry.
		for _, r := range []*workload.Request{req(workload.OpGet, []string{"k"}, nil, 0), req(workload.OpGetList, []string{"l"}, nil, 0),
			req(workload.OpPut, []string{"k"}, []string{val(4096, 3)}, 0)} {
			// Server side only: decode, execute, encode, hand over.
			b, _ := cli.encodeRequest(r, pool)
			p, _ := b.appendTo(nil)
			cli.done()
			run := func() {
				q.reset(r.Op)
				if err := srv.decodeRequest(r.Op, p, &q); err != nil {
					t.Fatal(err)
				}
				if err := s.Exec(&q, &res, 1<<20); err != nil {
					t.Fatal(err)
				}
				out, err := srv.encodeResponse(r.Op, &res, pool)
				if err != nil {
					t.Fatal(err)
				}
				if !out.buf.IsZero() {
					_ = out.buf.Release()
				}
				srv.done()
				res.Release()
			}
			run()
			if n := testing.AllocsPerRun(100, run); n != 0 {
				t.Errorf("%v %v: %.1f allocations per request", c, r.Op, n)
			}
		}
	}
	s.Clear()
	if n := pool.InUse(); n != 0 {
		t.Fatalf("%d buffers in use", n)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRoundTripAllocs: a whole request over memnet (client Send, server
// handler, client Poll and decode) allocates nothing once warm.
func TestRoundTripAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	if mem.Checked {
		t.Skip("the checked build (-tags cfcheck) allocates for its invariant checks")
	}
	e := newEnv(t, DatapathMemnet, memnet.Faults{}, 1)
	for _, c := range []Codec{CodecCFHybrid, CodecVTProtobuf, CodecFlatBuffers} {
		cn := e.dial(t, c)
		call(t, cn, req(workload.OpPut, []string{"k"}, []string{val(4096, 1)}, 0))
		r := req(workload.OpGet, []string{"k"}, nil, 0)
		got := 0
		deliver := func(id uint64, resp *workload.Response) {
			if resp.Status == workload.StatusOK && len(resp.Values) == 1 && len(resp.Values[0]) == 4096 {
				got++
			}
		}
		one := func() {
			if err := cn.Send(1, r); err != nil {
				t.Fatal(err)
			}
			want := got + 1
			for deadline := time.Now().Add(5 * time.Second); got < want && time.Now().Before(deadline); {
				if _, err := cn.Poll(deliver); err != nil {
					t.Fatal(err)
				}
			}
			if got < want {
				t.Fatal("no response")
			}
		}
		for i := 0; i < 10; i++ {
			one()
		}
		// A round trip's own allocation shows in every attempt. On a
		// heavily loaded machine one attempt in a few counted 1-3
		// mallocs per run from elsewhere (not reproduced alone, nor with
		// memnet loss or delay: docs/perf/sess27.md), so the test fails
		// only when all three attempts allocate.
		var n float64
		for range 3 {
			if n = testing.AllocsPerRun(50, one); n == 0 {
				break
			}
		}
		if n > 0 {
			t.Errorf("%v: %.2f allocations per round trip (3 attempts)", c, n)
		}
	}
}
