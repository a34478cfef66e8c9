package kv

import (
	"errors"
	"slices"
	"sync"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
)

// XDPTopology is the AF_XDP topology the endpoints of Datapath "xdp" open
// on: an xdp.Topology, adapted by kvbench.XDP. kv names it through this
// interface so that a program importing kv links no AF_XDP (eBPF) code
// unless it asks for it.
type XDPTopology interface {
	// Space is the topology's UMEM: the server allocates its store there
	// so that responses carry values zero-copy.
	Space() *mem.Space
	// OpenEndpoint opens one endpoint on the topology.
	OpenEndpoint(datapath.Config) (datapath.Endpoint, error)
}

// ErrNoXDP is returned by NewServer for Datapath "xdp" without
// ServerConfig.XDP when no automatic topology is registered (RegisterXDP;
// kv/kvbench registers datapath/xdp's).
var ErrNoXDP = errors.New("kv: datapath xdp: no ServerConfig.XDP and no automatic AF_XDP topology registered (import kv/kvbench, or pass kvbench.XDP(topology))")

var xdpReg struct {
	sync.Mutex
	auto func() (XDPTopology, error)
}

// RegisterXDP sets the function that returns the process-wide AF_XDP
// topology NewServer uses for Datapath "xdp" when ServerConfig.XDP is nil
// (it reports the datapath's unavailability as its error). kv/kvbench
// registers xdp.AutoTopology in its init; registering twice panics.
func RegisterXDP(auto func() (XDPTopology, error)) {
	xdpReg.Lock()
	defer xdpReg.Unlock()
	if auto == nil || xdpReg.auto != nil {
		panic("kv: RegisterXDP: nil function or registered twice")
	}
	xdpReg.auto = auto
}

// autoXDP returns the registered automatic topology.
func autoXDP() (XDPTopology, error) {
	xdpReg.Lock()
	auto := xdpReg.auto
	xdpReg.Unlock()
	if auto == nil {
		return nil, ErrNoXDP
	}
	return auto()
}

// Config returns the server's configuration with its defaults resolved
// (Datapath, Memnet and XDP are what a client in the same process needs).
func (s *Server) Config() ServerConfig {
	c := s.cfg
	c.Codecs = slices.Clone(c.Codecs)
	return c
}
