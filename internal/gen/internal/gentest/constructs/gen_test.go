package constructs_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wkt"
)

// gen makes random Items; values of at least 256 bytes come from
// registered memory when a pool is given, so that they may be zero-copy.
type gen struct {
	r    *rand.Rand
	a    *wire.Arena
	pool *mem.Pool
	t    testing.TB
	held []mem.Buf
	// small keeps values short (fuzz seeds: the fuzzer is slow on large
	// inputs).
	small bool
}

func (g *gen) chance() bool { return g.r.IntN(2) == 0 }

func (g *gen) bytes() []byte {
	var n int
	switch g.r.IntN(4) {
	case 0:
		n = 0
	case 1, 2:
		n = g.r.IntN(40)
	default:
		n = 256 + g.r.IntN(1500)
	}
	if g.small {
		n %= 16
	}
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(g.r.Uint32())
	}
	if n >= 256 && g.pool != nil {
		b := memtest.Alloc(g.t, g.pool, p)
		g.held = append(g.held, b)
		return b.Bytes()
	}
	return p
}

func (g *gen) str() string {
	runes := []rune{'a', 'z', 'é', '世', '🙂'}
	s := make([]rune, g.r.IntN(6))
	for i := range s {
		s[i] = runes[g.r.IntN(len(runes))]
	}
	return string(s)
}

func (g *gen) n() int {
	if g.small {
		return g.r.IntN(2)
	}
	return g.r.IntN(4)
}

func (g *gen) release() {
	for _, b := range g.held {
		memtest.Release(g.t, b)
	}
	g.held = nil
}

// item makes a random Item nested at most depth levels.
func (g *gen) item(depth int) *constructs.Item {
	x := constructs.NewItem(g.a)
	r := g.r
	switch r.IntN(7) {
	case 0:
		x.SetI32(int32(r.Uint32()))
	case 1:
		x.SetName(g.str())
	case 2:
		x.SetBlob(g.bytes())
	case 3:
		if depth > 0 {
			x.SetChild(g.item(depth - 1))
		}
	case 4:
		x.SetKind(constructs.Kind(r.IntN(3)))
	case 5:
		x.SetDbl(r.NormFloat64())
	}
	if g.chance() {
		x.SetU(r.Uint64())
	} else if g.chance() {
		x.SetS(g.str())
	}
	m := func() bool { return g.chance() }
	if m() {
		mm, _ := x.GetByBool()
		for range g.n() {
			mm.Set(g.chance(), int32(r.Uint32()))
		}
	}
	if m() {
		mm, _ := x.GetByI32()
		for range g.n() {
			mm.Set(int32(r.Uint32()), g.str())
		}
	}
	if m() {
		mm, _ := x.GetByI64()
		for range g.n() {
			mm.Set(int64(r.Uint64()), g.bytes())
		}
	}
	if m() && depth > 0 {
		mm, _ := x.GetByU32()
		for range g.n() {
			mm.Set(r.Uint32()%8, g.item(depth-1))
		}
	}
	if m() {
		mm, _ := x.GetByU64()
		for range g.n() {
			mm.Set(r.Uint64(), constructs.Kind(r.IntN(3)))
		}
	}
	if m() {
		mm, _ := x.GetByS32()
		for range g.n() {
			mm.Set(int32(r.IntN(20)-10), r.NormFloat64())
		}
	}
	if m() {
		mm, _ := x.GetByS64()
		for range g.n() {
			mm.Set(int64(r.Uint64()), float32(r.NormFloat64()))
		}
	}
	if m() {
		mm, _ := x.GetByF32()
		for range g.n() {
			mm.Set(r.Uint32(), r.Uint64())
		}
	}
	if m() {
		mm, _ := x.GetByF64()
		for range g.n() {
			mm.Set(r.Uint64(), g.chance())
		}
	}
	if m() {
		mm, _ := x.GetBySf32()
		for range g.n() {
			mm.Set(int32(r.Uint32()), int64(r.Uint64()))
		}
	}
	if m() {
		mm, _ := x.GetBySf64()
		for range g.n() {
			mm.Set(int64(r.Uint64()), r.Uint32())
		}
	}
	if m() {
		mm, _ := x.GetByStr()
		for range g.n() {
			mm.Set(g.str(), g.bytes())
		}
	}
	if m() && depth > 0 {
		mm, _ := x.GetItems()
		for range g.n() {
			mm.Set(g.str(), g.item(depth-1))
		}
	}
	if m() {
		x.InitAt().SetTime(time.Unix(int64(r.Uint32()), int64(r.IntN(1e9))))
	}
	if m() {
		x.InitTook().SetDuration(time.Duration(r.Int64()))
	}
	if m() {
		x.InitNothing()
	}
	if m() {
		x.InitMaybe().SetValue(int64(r.Uint64()))
	}
	if m() {
		x.InitLabel().SetValue(g.str())
	}
	if m() {
		x.InitRaw().SetValue(g.bytes())
	}
	if m() {
		st := x.InitMeta()
		f, _ := st.GetFields()
		for range g.n() {
			v := f.Init(g.str())
			switch r.IntN(5) {
			case 0:
				v.SetNumberValue(r.NormFloat64())
			case 1:
				v.SetStringValue(g.str())
			case 2:
				v.SetBoolValue(g.chance())
			case 3:
				l := v.InitListValue()
				nv := wkt.NewValue(g.a)
				nv.SetNumberValue(1)
				l.InitValues(2).Append(nv)
			default:
				v.InitStructValue()
			}
		}
	}
	if m() {
		an := x.InitExtra()
		an.SetTypeUrl("type.googleapis.com/gentest.constructs.Flat")
		an.SetValue(g.bytes())
	}
	if depth > 0 && m() {
		kids := x.InitKids(2)
		for range g.n() {
			kids.Append(g.item(depth - 1))
		}
	}
	if m() {
		x.SetFar(int64(r.Uint64()))
	}
	if m() {
		x.SetSparse(g.sparse(depth))
	}
	if m() {
		l := x.InitSparses(2)
		for range g.n() {
			l.Append(g.sparse(depth))
		}
	}
	return x
}

// sparse makes a random Sparse (huge field numbers: the sparse header
// form when one of them is present).
func (g *gen) sparse(depth int) *constructs.Sparse {
	x := constructs.NewSparse(g.a)
	r := g.r
	if g.chance() {
		x.SetA(int32(r.Uint32()))
	}
	if g.chance() {
		x.SetB(g.str())
	}
	if depth > 0 && g.chance() {
		x.SetNext(g.sparse(depth - 1))
	}
	if g.chance() {
		l := x.InitList(0)
		for range g.n() {
			l.Append(int64(r.Uint64()))
		}
	}
	if g.chance() {
		x.SetMid(g.bytes())
	}
	if g.chance() {
		m, _ := x.GetM()
		for range g.n() {
			m.Set(int32(r.IntN(100)), g.str())
		}
	}
	switch r.IntN(3) {
	case 0:
		x.SetX(r.Uint32())
	case 1:
		x.SetY(g.str())
	}
	return x
}
