package xdp_test

import (
	"net/netip"
	"os"
	"strconv"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// topo is two namespaces joined by a veth pair with static neighbours and
// one committed space shared as UMEM by the endpoints opened on it.
type topo struct {
	pair  *netns.Pair
	space *mem.Space
}

// newTopo creates the topology (skipping when AF_XDP or namespaces are
// unavailable); everything is removed in t.Cleanup, also on failure.
func newTopo(t *testing.T, mtu int) *topo {
	t.Helper()
	if err := xdp.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	_ = netns.Cleanup("cfxdpt") // leftovers of killed test runs
	p := netns.ForTest(t, netns.Config{Prefix: "cfxdpt", MTU: mtu})
	if err := p.AddNeighbours(); err != nil {
		t.Fatal(err)
	}
	sp, err := mem.NewSpace(mem.SpaceConfig{Size: 64 << 20, Commit: true, Mlock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sp.Close(); err != nil {
			t.Errorf("closing the UMEM space: %v", err)
		}
	})
	return &topo{pair: p, space: sp}
}

// pool makes a checked pool on the shared space.
func (tp *topo) pool(t *testing.T, name string) *mem.Pool {
	return memtest.NewPool(t, mem.PoolConfig{Name: name, Space: tp.space, MaxClass: xdp.MaxFrame, MaxBytes: 16 << 20})
}

// open opens an endpoint in end's namespace with the given pool.
func (tp *topo) open(t *testing.T, end netns.End, pool *mem.Pool, o xdp.Options) *xdp.Endpoint {
	t.Helper()
	o.Interface = end.If
	var ep *xdp.Endpoint
	err := netns.Do(end.NS, func() (err error) {
		ep, err = xdp.Open(datapath.Config{Local: netip.AddrPortFrom(end.Addr4, 0), Pool: pool, Options: o})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// needNamespaces skips the test unless AF_XDP and network namespaces are
// available (root, a kernel with XDP sockets).
func needNamespaces(t *testing.T) {
	t.Helper()
	if err := xdp.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if err := netns.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// useAutoTopology is needNamespaces for a test that opens endpoints through
// the process-wide AutoTopology: in t.Cleanup it closes the topology and
// checks that none of its namespaces are left.
func useAutoTopology(t *testing.T) {
	t.Helper()
	needNamespaces(t)
	t.Cleanup(func() {
		if err := xdp.CloseAutoTopology(); err != nil {
			t.Error(err)
		}
		if left, _ := netns.List(xdp.AutoPrefix + "-" + strconv.Itoa(os.Getpid())); len(left) != 0 {
			t.Errorf("namespaces left after CloseAutoTopology: %v", left)
		}
	})
}
