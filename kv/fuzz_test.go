package kv

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// FuzzDecodeRequest feeds arbitrary bodies to every codec's request decoder
// and executes whatever decodes against a small store: no panic, no
// allocation beyond the limits, errors as StatusError, and the store's
// memory accounting intact. Seeds: valid requests of every op in every
// codec (f.Add) plus testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "fuzz-seed", MaxBytes: 64 << 20})
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range AllCodecs() {
		cd, _ := newCodec(c)
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
				f.Add(uint8(c), uint8(r.Op), body)
			}
		}
	}
	if err := pool.Close(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, c, op uint8, body []byte) {
		codecID := Codec(c%uint8(numCodecs-1)) + 1
		o := workload.Op(op%9) + 1
		cd, err := newCodec(codecID)
		if err != nil {
			t.Fatal(err)
		}
		pool, err := mem.NewPool(mem.PoolConfig{Name: "fuzz", MaxBytes: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		s := NewStore(pool, 1)
		var q Query
		var res Result
		q.reset(o)
		if err := cd.decodeRequest(o, body, &q); err == nil {
			_ = s.Exec(&q, &res, 1<<20)
			if res.Status == workload.StatusOK {
				// The answer must encode.
				msg, err := cd.encodeResponse(o, &res, pool)
				if err != nil {
					t.Fatalf("%v %v: encode: %v", codecID, o, err)
				}
				if _, err := msg.appendTo(nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		cd.done() // before res.Release: a Cornflakes response borrows res's references
		res.Release()
		s.Clear()
		if n := pool.InUse(); n != 0 {
			t.Fatalf("%d buffers in use", n)
		}
		if err := pool.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
