package kv

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestBorrowedResponseRefs checks the server's borrowed response: built
// from a Result's references, serialized, then the codec's done() and the
// Result's Release leave nothing in use, and the bytes are those of the
// response built with references of its own (SetValBuf, AppendBuf).
func TestBorrowedResponseRefs(t *testing.T) {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "borrowed", MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(pool, 1)
	cd := newCFCodec(256, true)
	for _, r := range []*workload.Request{
		req(workload.OpPutList, []string{"l"}, []string{val(12, 1), val(700, 2), val(5, 3)}, 0),
		req(workload.OpPut, []string{"k"}, []string{val(4096, 4)}, 0),
		req(workload.OpPut, []string{"s"}, []string{val(20, 5)}, 0),
	} {
		var q Query
		var res Result
		q.reset(r.Op)
		q.Keys, q.Vals = r.Keys, r.Values
		if err := s.Exec(&q, &res, 1<<20); err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	for _, g := range []*workload.Request{
		req(workload.OpGetList, []string{"l"}, nil, 0),
		req(workload.OpGetFromList, []string{"l"}, nil, 1),
		req(workload.OpGet, []string{"k"}, nil, 0),
		req(workload.OpGet, []string{"s"}, nil, 0),
		req(workload.OpGet, []string{"missing"}, nil, 0),
	} {
		var q Query
		var res Result
		q.reset(g.Op)
		q.Keys = g.Keys
		if err := s.Exec(&q, &res, 1<<20); err != nil {
			t.Fatal(err)
		}
		msg, err := cd.encodeResponse(g.Op, &res, pool)
		if err != nil {
			t.Fatal(err)
		}
		got, err := msg.appendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		cd.done()
		// The same response with references of the arena's own.
		m := kvpb.NewResp(cd.a)
		m.SetStatus(statusToWire(res.Status))
		if res.Status == workload.StatusOK {
			if singleValue(g.Op) {
				m.SetValBuf(res.Vals[0])
			} else {
				l := m.InitVals(len(res.Vals))
				for _, b := range res.Vals {
					l.AppendBuf(b)
				}
			}
		}
		want, err := wire.Flatten(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		cd.done()
		res.Release()
		if !bytes.Equal(got, want) {
			t.Fatalf("%v %q: borrowed response %x, with references %x", g.Op, g.Keys[0], got, want)
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
