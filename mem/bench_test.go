package mem_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func benchPools(b *testing.B, f func(b *testing.B, p *mem.Pool)) {
	for _, conc := range []bool{false, true} {
		name := "single"
		if conc {
			name = "concurrent"
		}
		b.Run(name, func(b *testing.B) {
			p := memtest.NewPool(b, mem.PoolConfig{Concurrent: conc})
			b.ReportAllocs()
			f(b, p)
		})
	}
}

func BenchmarkAllocRelease(b *testing.B) {
	benchPools(b, func(b *testing.B, p *mem.Pool) {
		for b.Loop() {
			buf, err := p.Alloc(1024)
			if err != nil {
				b.Fatal(err)
			}
			if err := buf.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCloneRelease(b *testing.B) {
	benchPools(b, func(b *testing.B, p *mem.Pool) {
		buf, _ := p.Alloc(1024)
		defer buf.Release()
		for b.Loop() {
			c := buf.Clone()
			if err := c.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRecoverRelease(b *testing.B) {
	benchPools(b, func(b *testing.B, p *mem.Pool) {
		buf, _ := p.Alloc(1024)
		defer buf.Release()
		s := buf.Bytes()[100:600]
		for b.Loop() {
			r, ok := mem.Recover(s)
			if !ok {
				b.Fatal("Recover failed")
			}
			if err := r.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRecoverMiss(b *testing.B) {
	heap := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := mem.Recover(heap); ok {
			b.Fatal("heap recovered")
		}
	}
}

func BenchmarkBytes(b *testing.B) {
	p := memtest.NewPool(b)
	buf, _ := p.Alloc(1024)
	defer buf.Release()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += len(buf.Bytes())
	}
	_ = n
}
