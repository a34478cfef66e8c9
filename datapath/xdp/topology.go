package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Defaults of a Topology.
const (
	// AutoPrefix starts the namespace names of the process-wide automatic
	// topology (`cornflakes netns down --prefix cfxauto` removes leftovers).
	AutoPrefix = "cfxauto"
	// DefaultTopologyMTU is the MTU of a Topology's links: large enough for
	// 8 KB payloads (multi-buffer packets above one RX frame).
	DefaultTopologyMTU = 9000
	// DefaultTopologySpace is the size of the UMEM a Topology's endpoints
	// share (committed and locked memory).
	DefaultTopologySpace = 256 << 20
)

// TopologyConfig configures NewTopology. The zero value is usable.
type TopologyConfig struct {
	Prefix    string // namespace name prefix (default AutoPrefix)
	MTU       int    // default DefaultTopologyMTU
	SpaceSize int64  // default DefaultTopologySpace
	Options   Options
}

// Topology runs several xdp endpoints in one process: every Open creates a
// network namespace attached to a bridge (netns.Hub) and opens the
// endpoint in it, so each endpoint has its own interface and XDP program,
// and all reach each other. The endpoints share one UMEM space, so values
// allocated from a pool on Space are sent zero-copy by any of them.
// Benchmarks use it to run client and server over AF_XDP in one process.
type Topology struct {
	hub   *netns.Hub
	space *mem.Space
	opts  Options
	mu    sync.Mutex
	eps   int
}

// NewTopology creates the hub namespace and the shared UMEM space. It
// fails with an error wrapping ErrUnavailable when not root / no AF_XDP.
func NewTopology(cfg TopologyConfig) (*Topology, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := netns.Available(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = AutoPrefix
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultTopologyMTU
	}
	if cfg.SpaceSize == 0 {
		cfg.SpaceSize = DefaultTopologySpace
	}
	_ = netns.Cleanup(cfg.Prefix) // leftovers of killed runs
	hub, err := netns.NewHub(netns.Config{Prefix: cfg.Prefix, MTU: cfg.MTU})
	if err != nil {
		return nil, err
	}
	sp, err := mem.NewSpace(mem.SpaceConfig{Size: cfg.SpaceSize, Commit: true, Hugepages: mem.HugepagesAuto, Mlock: true})
	if err != nil {
		_ = hub.Close()
		return nil, fmt.Errorf("xdp: topology UMEM: %w", err)
	}
	return &Topology{hub: hub, space: sp, opts: cfg.Options}, nil
}

// Space is the UMEM shared by the topology's endpoints: allocate
// application values from pools on it to send them zero-copy.
func (t *Topology) Space() *mem.Space { return t.space }

// Open creates a new namespace and opens an endpoint in it. cfg.Local's
// port is kept (its address is replaced by the namespace's); Interface and
// Space are set by the topology; other options default to the topology's.
func (t *Topology) Open(c datapath.Config) (*Endpoint, error) {
	cfg, err := resolve(c)
	if err != nil {
		return nil, err
	}
	leaf, err := t.hub.AddLeaf()
	if err != nil {
		return nil, err
	}
	o := mergeOptions(cfg.Options, t.opts)
	o.Interface, o.Space = leaf.If, t.space
	cfg.Options = o
	cfg.Local = netip.AddrPortFrom(leaf.Addr4, cfg.Local.Port())
	var ep *Endpoint
	err = netns.Do(leaf.NS, func() (err error) {
		ep, err = open(cfg)
		return err
	})
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.eps++
	t.mu.Unlock()
	return ep, nil
}

func mergeOptions(o, def Options) Options {
	if o.RingSize == 0 {
		o.RingSize = def.RingSize
	}
	if o.Attach == AttachAuto {
		o.Attach = def.Attach
	}
	if o.Bind == BindAuto {
		o.Bind = def.Bind
	}
	if o.SendBuffer == 0 {
		o.SendBuffer = def.SendBuffer
	}
	o.UDPChecksum = o.UDPChecksum || def.UDPChecksum
	return o
}

// Close removes the namespaces (detaching any program still attached) and
// closes the space. Close the endpoints and the pools on Space first;
// the namespaces are removed even when that was not done.
func (t *Topology) Close() error {
	var errs []error
	errs = append(errs, t.hub.Close())
	if err := t.space.Close(); err != nil && !errors.Is(err, mem.ErrClosed) {
		errs = append(errs, fmt.Errorf("xdp: topology space (pools or endpoints still open?): %w", err))
	}
	return errors.Join(errs...)
}

var auto struct {
	sync.Mutex
	topo *Topology
}

// AutoTopology returns the process-wide Topology, creating it on first
// use. datapath.Open("xdp", cfg) uses it when cfg names no interface (no
// Options.Interface and a Local address that is invalid, unspecified or
// loopback), so that commands written for "udp on loopback" run on AF_XDP
// unchanged. Call CloseAutoTopology when done (also on error paths).
func AutoTopology() (*Topology, error) {
	auto.Lock()
	defer auto.Unlock()
	if auto.topo != nil {
		return auto.topo, nil
	}
	t, err := NewTopology(TopologyConfig{})
	if err != nil {
		return nil, err
	}
	auto.topo = t
	return t, nil
}

// CloseAutoTopology closes the process-wide Topology, if any.
func CloseAutoTopology() error {
	auto.Lock()
	defer auto.Unlock()
	if auto.topo == nil {
		return nil
	}
	err := auto.topo.Close()
	auto.topo = nil
	return err
}

// SpaceOf returns the UMEM of an xdp endpoint (nil for other datapaths),
// so that generic code can allocate its zero-copy values there.
func SpaceOf(ep datapath.Endpoint) *mem.Space {
	if e, ok := ep.(*Endpoint); ok {
		return e.Space()
	}
	return nil
}

// ModeOf returns the bind mode of an xdp endpoint (BindZeroCopy or
// BindCopy) and true, or false for other datapaths, so that commands can
// log which mode they measured.
func ModeOf(ep datapath.Endpoint) (BindMode, bool) {
	if e, ok := ep.(*Endpoint); ok {
		return e.Mode(), true
	}
	return 0, false
}

// wantsAuto reports whether a registry open names no interface.
func wantsAuto(c datapath.Config, o Options) bool {
	if o.Interface != "" {
		return false
	}
	a := c.Local.Addr()
	return !c.Local.IsValid() || a.IsUnspecified() || a.IsLoopback()
}
