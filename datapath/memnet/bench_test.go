package memnet_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// BenchmarkRoundTrip measures one packet from A to B on one goroutine:
// send, Flush, Recv (the simulated DMA gathers the segments into B's RX
// buffer) and release; A reaps the completion on its next Flush.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name    string
		entries int
		size    int
	}{
		{"Send64", 0, 64},
		{"SendObject2x2048", 2, 2048},
		{"SendObject8x512", 8, 512},
		{"SendObject20x256Copied", 20, 256}, // more than MaxSegments-1: smallest copied
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := memnet.NewNetwork(memnet.NetworkConfig{})
			app := memtest.NewPool(b, mem.PoolConfig{Name: "app"})
			a := open(b, n, addrA, datapath.Config{Pool: app}, memnet.Options{})
			r := open(b, n, addrB, datapath.Config{}, memnet.Options{})
			obj := &dptest.Object{Header: make([]byte, 8+4*bc.entries), Copied: make([]byte, 16)}
			for i := range bc.entries {
				obj.Entries = append(obj.Entries, memtest.Alloc(b, app, bytes.Repeat([]byte{byte(i)}, bc.size-i)))
			}
			defer func() {
				for _, e := range obj.Entries {
					memtest.Release(b, e)
				}
			}()
			payload := make([]byte, bc.size)
			pk := make([]datapath.Packet, 1)
			if bc.entries == 0 {
				b.SetBytes(int64(bc.size))
			} else {
				b.SetBytes(int64(obj.Sizes().Total()))
			}
			rt := func() {
				var err error
				if bc.entries == 0 {
					err = a.Send(addrB, payload)
				} else {
					err = a.SendObject(addrB, nil, obj)
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Flush(); err != nil {
					b.Fatal(err)
				}
				if k, err := r.Recv(pk); k != 1 || err != nil {
					b.Fatal(k, err)
				}
				pk[0].Buf.Release()
			}
			rt() // warm up: the first TX buffer of a size class grows the pool
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rt()
			}
		})
	}
}
