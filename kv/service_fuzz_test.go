package kv

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// FuzzServiceRequest feeds arbitrary Req bodies to the typed service's
// handler path (decode with the generated code, execute on a small store,
// build the response in the call's arena and serialize it): no panic,
// errors as the error status, and the store's and arena's references all
// returned. Seeds: a valid request of every op (f.Add) plus
// testdata/fuzz/FuzzServiceRequest.
func FuzzServiceRequest(f *testing.F) {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "fuzz-seed", MaxBytes: 64 << 20})
	if err != nil {
		f.Fatal(err)
	}
	cd := newCFCodec(wire.DefaultThreshold, true)
	for _, r := range script() {
		msg, err := cd.encodeRequest(r, pool)
		if err != nil {
			f.Fatal(err)
		}
		body, err := msg.appendTo(nil)
		if err != nil {
			f.Fatal(err)
		}
		cd.done()
		if len(body) < 2048 {
			f.Add(uint8(r.Op), body)
		}
	}
	if err := pool.Close(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, op uint8, body []byte) {
		o := workload.Op(op%9) + 1
		pool, err := mem.NewPool(mem.PoolConfig{Name: "fuzz", MaxBytes: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		k := &kvService{s: &Server{store: NewStore(pool, 1), eps: []*serverEP{{maxResp: 1 << 20}}}}
		k.scratch.New = func() any { return new(svcScratch) }
		a := wire.NewArena()
		req := kvpb.NewReq(a)
		if err := req.DecodeBytes(body); err == nil {
			resp := kvpb.NewResp(a)
			if err := k.exec(o, req, resp); err != nil {
				t.Fatalf("%v: exec: %v", o, err)
			}
			if _, err := wire.Flatten(resp, nil); err != nil {
				t.Fatalf("%v: the response does not serialize: %v", o, err)
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		k.s.store.Clear()
		if n := pool.InUse(); n != 0 {
			t.Fatalf("%d buffers in use", n)
		}
		if err := pool.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
