package kvbench

import (
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
)

// The AF_XDP plumbing kv leaves out of its import graph: the adapter from
// an xdp.Topology to kv.XDPTopology, and the process-wide automatic
// topology kv's servers use for Datapath "xdp" without ServerConfig.XDP.
func init() {
	kv.RegisterXDP(func() (kv.XDPTopology, error) {
		if err := xdp.Available(); err != nil {
			return nil, err
		}
		t, err := xdp.AutoTopology()
		if err != nil {
			return nil, err
		}
		return XDP(t), nil
	})
}

// XDP adapts t for kv.ServerConfig.XDP and kv.ClientConfig.XDP. t stays
// the caller's to close, after the servers and clients using it.
func XDP(t *xdp.Topology) kv.XDPTopology { return xdpTopology{t} }

type xdpTopology struct{ t *xdp.Topology }

func (x xdpTopology) Space() *mem.Space { return x.t.Space() }

func (x xdpTopology) OpenEndpoint(c datapath.Config) (datapath.Endpoint, error) {
	ep, err := x.t.Open(c)
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// xdpOf is XDP for a topology that may be nil (nil: no topology).
func xdpOf(t *xdp.Topology) kv.XDPTopology {
	if t == nil {
		return nil
	}
	return XDP(t)
}
