package wire

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func BenchmarkRecoverRelease(b *testing.B) {
	pool := memtest.NewPool(b)
	v := memtest.Alloc(b, pool, make([]byte, 2048))
	p := v.Bytes()
	b.ResetTimer()
	for range b.N {
		c, _ := mem.Recover(p)
		c.Release()
	}
	b.StopTimer()
	v.Release()
}

func BenchmarkCloneRelease(b *testing.B) {
	pool := memtest.NewPool(b)
	v := memtest.Alloc(b, pool, make([]byte, 2048))
	b.ResetTimer()
	for range b.N {
		c := v.Clone()
		c.Release()
	}
	b.StopTimer()
	v.Release()
}

type tstruct struct {
	c Core
	l BytesList
}

var tType = NewType[tstruct]()

func BenchmarkSlabNewReset(b *testing.B) {
	a := NewArena()
	for range b.N {
		tType.New(a)
		tType.New(a)
		a.Reset()
	}
}

func BenchmarkSlabNewOnly(b *testing.B) {
	a := NewArena()
	for i := range b.N {
		tType.New(a)
		if i%1000 == 999 {
			a.Reset()
		}
	}
}
