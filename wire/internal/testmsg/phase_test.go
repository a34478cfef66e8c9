package testmsg

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

func BenchmarkPhaseNewReset(b *testing.B) {
	a := wire.NewArena()
	for b.Loop() {
		NewBufs(a)
		NewBufs(a)
		_ = a.Reset()
	}
}

func BenchmarkPhaseDecode(b *testing.B) {
	pool := memtest.NewPool(b)
	a := wire.NewArena()
	in := echoSetup(b, a, pool, 2, 2048)
	for b.Loop() {
		req := NewBufs(a)
		if err := req.Decode(in); err != nil {
			b.Fatal(err)
		}
		if _, err := req.GetMessages(); err != nil {
			b.Fatal(err)
		}
		_ = a.Reset()
	}
	b.StopTimer()
	memtest.Release(b, in)
}

func BenchmarkPhaseDecodeBuild(b *testing.B) {
	pool := memtest.NewPool(b)
	a := wire.NewArena()
	in := echoSetup(b, a, pool, 2, 2048)
	for b.Loop() {
		req := NewBufs(a)
		if err := req.Decode(in); err != nil {
			b.Fatal(err)
		}
		vals, _ := req.GetMessages()
		resp := NewBufs(a)
		out := resp.InitMessages(vals.Len())
		for i := range vals.Len() {
			out.Append(vals.At(i))
		}
		_ = a.Reset()
	}
	b.StopTimer()
	memtest.Release(b, in)
}

func BenchmarkPhaseDecodeBuildSizes(b *testing.B) {
	pool := memtest.NewPool(b)
	a := wire.NewArena()
	in := echoSetup(b, a, pool, 2, 2048)
	for b.Loop() {
		req := NewBufs(a)
		if err := req.Decode(in); err != nil {
			b.Fatal(err)
		}
		vals, _ := req.GetMessages()
		resp := NewBufs(a)
		out := resp.InitMessages(vals.Len())
		for i := range vals.Len() {
			out.Append(vals.At(i))
		}
		resp.Sizes()
		_ = a.Reset()
	}
	b.StopTimer()
	memtest.Release(b, in)
}
