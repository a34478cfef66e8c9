package kv

import (
	"context"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// BenchmarkGetPath: one sequential Get of a 1 KiB value over kernel UDP,
// through the raw request types (kv.Conn, codec cornflakes/hybrid: the
// path cornflakes bench measures) and through the typed service
// (ServiceClient: generated stubs, service.Client).
//
//	go test -run XXX -bench GetPath -benchtime 20000x ./kv
func BenchmarkGetPath(b *testing.B) {
	e := newEnv(b, DatapathUDP, memnet.Faults{}, 1)
	val := make([]byte, 1024)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.Run("raw", func(b *testing.B) {
		cn := e.dial(b, CodecCFHybrid)
		call(b, cn, &workload.Request{Op: workload.OpPut, Keys: [][]byte{[]byte("k")}, Values: [][]byte{val}})
		req := &workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte("k")}}
		got := false
		deliver := func(id uint64, r *workload.Response) {
			if r.Status != workload.StatusOK || len(r.Values) != 1 || len(r.Values[0]) != len(val) {
				b.Fatalf("raw get: status %v", r.Status)
			}
			got = true
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := cn.Send(1, req); err != nil {
				b.Fatal(err)
			}
			for got = false; !got; {
				if _, err := cn.Poll(deliver); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("service", func(b *testing.B) {
		sc, err := e.cl.DialService(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer sc.Close()
		a := wire.NewArena()
		if err := sc.Put(ctx, a, []byte("k"), val); err != nil {
			b.Fatal(err)
		}
		// No deadline, as the raw path has none: a deadline travels with
		// each call and costs the handler a context.WithDeadline (6
		// allocations in service.Server.call).
		ctx := context.Background()
		key := []byte("k")
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v, err := sc.Get(ctx, a, key)
			if err != nil || len(v) != len(val) {
				b.Fatalf("service get: %d bytes, %v", len(v), err)
			}
			if err := a.Reset(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
