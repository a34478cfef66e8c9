package xdp_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestAutoTopology opens three endpoints through the registry the way the
// benchmark commands do (no interface, loopback or no address, a pool on
// the default space), exchanges packets between all of them, and checks
// that CloseAutoTopology removes every namespace.
func TestAutoTopology(t *testing.T) {
	useAutoTopology(t)
	foreign := memtest.NewPool(t) // default space: not usable as UMEM
	var eps []datapath.Endpoint
	for i := range 3 {
		cfg := datapath.Config{}
		if i == 0 {
			cfg.Pool = foreign
		}
		ep, err := datapath.Open("xdp", cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		eps = append(eps, ep)
	}
	topo, err := xdp.AutoTopology()
	if err != nil {
		t.Fatal(err)
	}
	if xdp.SpaceOf(eps[0]) != topo.Space() {
		t.Fatal("endpoints do not share the topology's space")
	}
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app", Space: topo.Space()})
	for i, from := range eps {
		for j, to := range eps {
			if i == j {
				continue
			}
			v := memtest.Alloc(t, app, pattern(3000, byte(i*3+j)))
			want := append([]byte{byte(i), byte(j)}, v.Bytes()...)
			if err := from.SendSegments(to.LocalAddr(), []byte{byte(i), byte(j)}, []mem.Buf{v}); err != nil {
				t.Fatal(err)
			}
			memtest.Release(t, v)
			if err := from.Flush(); err != nil {
				t.Fatal(err)
			}
			p := recvOne(t, to, from)
			if p.From != from.LocalAddr() {
				t.Errorf("from %v, want %v", p.From, from.LocalAddr())
			}
			expect(t, p, want, "auto topology")
		}
	}
	for _, ep := range eps {
		if err := ep.Close(); err != nil {
			t.Error(err)
		}
	}
	memtest.Close(t, app)
}
