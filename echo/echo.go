// Package echo is the echo-server experiment of Cornflakes (SOSP'23) Fig. 2
// and "Breakfast of Champions" (HotOS'21) Fig. 2: a server receives a
// message, decodes it, builds a response from the decoded fields and sends
// it back; clients measure throughput and latency. It compares no
// serialization (raw), manual one- and two-copy, the serialization
// libraries (protobuf, flatbuffers, capnp) and Cornflakes in hybrid,
// copy-only and zero-copy-only modes, over a real datapath (udp, memnet, or
// xdp: AF_XDP sockets in network namespaces joined by a bridge, see RunOne).
//
// The server and the client each run on their own goroutine locked to an
// OS thread and busy-poll their endpoint (yielding, then blocking, when
// idle: SpinPolls, SpinTime). On an endpoint that receives in place
// (shm), the client reads each response where the server wrote it. Every request carries a 16-byte
// application header (slot, sequence number, variant, magic) that the
// server copies into the response; the client keeps N requests outstanding
// (closed loop) or sends on a Poisson schedule at a given rate (open loop,
// latency measured from the intended send time), and checks every
// response: its size always, byte for byte when Config.Verify is set.
package echo

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/memnet" // registers "memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp"    // registers "udp"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"github.com/cornflakes-go/cornflakes/internal/stats"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/microbench"
)

// Errors returned (wrapped) by this package.
var (
	// ErrUnknownApproach: an approach name not in Approaches.
	ErrUnknownApproach = errors.New("echo: unknown approach")
	// ErrUnavailable: an approach this build cannot run.
	ErrUnavailable = errors.New("echo: approach not available in this build")
	// ErrBadMessage: a request or response that does not decode as the
	// shape's message (the server counts these and answers nothing).
	ErrBadMessage = errors.New("echo: malformed message")
	// ErrMismatch: with Config.Verify, a response whose values differ from
	// the request's.
	ErrMismatch = errors.New("echo: response differs from the request")
	// ErrConfig: an invalid Config (datapath, clients, durations, ...).
	ErrConfig = errs.New("echo: invalid config", cornflakes.ErrConfig)
)

// Approaches lists every approach in the order they are run.
func Approaches() []string {
	return []string{"raw", "onecopy", "twocopy", "cornflakes-hybrid", "cornflakes-copy", "cornflakes-zerocopy", "protobuf", "flatbuffers", "capnp"}
}

// DefaultShapes are the shapes run by default (same meaning as in
// `cornflakes microbench`).
func DefaultShapes() []string {
	return []string{"1x1024", "2x2048", "4x1024", "1x4096", "8x512", "tree5"}
}

// Defaults of Config.
const (
	// DefaultClients is the number of outstanding requests: enough that
	// the server always has a batch queued while the client handles the
	// previous one, so that a run measures the server's saturated rate,
	// as the papers' many client machines do (docs/ECHO.md).
	DefaultClients = 64
	// DefaultDuration and DefaultWarmup are the measured and the
	// discarded time of one run.
	DefaultDuration = 5 * time.Second
	DefaultWarmup   = time.Second
	// QuickDuration and QuickWarmup are the same for --quick.
	QuickDuration = 700 * time.Millisecond
	QuickWarmup   = 150 * time.Millisecond
	// MaxOutstanding bounds Clients and the open-loop in-flight window.
	MaxOutstanding = 4096
	// LossTimeout is how long a request may go unanswered before it is
	// counted lost and its slot reused.
	LossTimeout = 250 * time.Millisecond
	// MaxExtension bounds how long Config.MinResponses may extend a run.
	MaxExtension = 10 * time.Second
)

// Config configures Run. Zero values take the defaults.
type Config struct {
	Datapath   string   // "udp" (default), "shm", "memnet" or "xdp" (root; see RunOne)
	Approaches []string // default: Approaches()
	Shapes     []string // default: DefaultShapes()
	Clients    int      // outstanding requests (closed loop); default DefaultClients
	Rate       float64  // > 0: open loop at this many requests per second
	Duration   time.Duration
	Warmup     time.Duration
	// Verify compares every response with the request byte for byte (the
	// echo of these shapes is deterministic); otherwise sizes are checked.
	Verify bool
	// Progress, if set, receives one line per run and notes about skipped
	// approaches.
	Progress io.Writer
	// Repeat measures every (approach, shape) this many times, the
	// approaches of a shape interleaved, and reports the run with the
	// median throughput (default 1): comparisons then survive load that
	// comes and goes on a shared machine.
	Repeat int
	// MinResponses extends a run past Duration (by at most MaxExtension)
	// until this many responses were measured, for tests on loaded
	// machines.
	MinResponses int
	// SkipUnavailable skips approaches whose code is missing from this
	// build (reported on Progress) instead of failing.
	SkipUnavailable bool
}

// Result is one (approach, shape) run. The JSON names are those of the
// `cornflakes echo --json` output.
type Result struct {
	Approach      string  `json:"approach"`
	Datapath      string  `json:"datapath"`
	Shape         string  `json:"shape"`
	Clients       int     `json:"clients"`
	ThroughputRPS float64 `json:"throughput_rps"`
	P50us         float64 `json:"p50_us"`
	P99us         float64 `json:"p99_us"`

	// ServerNsPerReq is the server thread's CPU time per request in the
	// measured window, counting request handling, Flush and arena reset
	// (not the receive), timed on one batch in CPUSample: robust to other
	// load on the machine, unlike wall-clock throughput. Zero when the
	// window timed no batch.
	ServerNsPerReq float64 `json:"server_cpu_ns_per_req"`
	// XDPMode is the AF_XDP bind mode the server's socket got ("copy" or
	// "zerocopy"; empty on other datapaths): zero-copy fields are only
	// read by the NIC in "zerocopy".
	XDPMode string `json:"xdp_mode,omitempty"`
	// The comparison with the raw echo of the same datapath and shape in
	// the same run (Compare; the median of its repetitions): throughput
	// over raw's, and raw's server CPU per request over this one's (1:
	// as cheap as raw). Zero when the run measured no raw echo for it.
	VsRawThroughput float64 `json:"vs_raw_throughput,omitempty"`
	VsRawServerCPU  float64 `json:"vs_raw_server_cpu,omitempty"`

	// Diagnostics (not part of the JSON output).
	//
	// Server and Client count each side's receive polls in the measured
	// window, and ClientNsPerReq is the client thread's CPU time per
	// response over the window (polling included): they tell which side
	// bounds the throughput (PollStats).
	Server, Client PollStats      `json:"-"`
	ClientNsPerReq float64        `json:"-"`
	Requests       uint64         `json:"-"` // responses counted in the window
	Lost           uint64         `json:"-"` // requests that timed out
	Bad            uint64         `json:"-"` // responses that failed verification
	ServerErrs     uint64         `json:"-"` // requests the server could not handle
	ServerTx       datapath.Stats `json:"-"`
	Rate           float64        `json:"-"`
	Elapsed        time.Duration  `json:"-"`
}

func (c *Config) fill() error {
	if c.Datapath == "" {
		c.Datapath = "udp"
	}
	if len(c.Approaches) == 0 {
		c.Approaches = Approaches()
	}
	if len(c.Shapes) == 0 {
		c.Shapes = DefaultShapes()
	}
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Repeat == 0 {
		c.Repeat = 1
	}
	switch {
	case c.Clients < 1 || c.Clients > MaxOutstanding:
		return fmt.Errorf("%w: clients %d not in [1,%d]", ErrConfig, c.Clients, MaxOutstanding)
	case c.Rate < 0 || c.Rate > 1e8:
		return fmt.Errorf("%w: rate %v", ErrConfig, c.Rate)
	case c.Repeat < 1 || c.Repeat > 100:
		return fmt.Errorf("%w: repeat %d not in [1,100]", ErrConfig, c.Repeat)
	case c.Duration < 0 || c.Warmup < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case !slices.Contains([]string{"udp", "shm", "memnet", "xdp"}, c.Datapath):
		return fmt.Errorf("%w: datapath %q (want udp, shm, memnet or xdp)", ErrConfig, c.Datapath)
	}
	for _, a := range c.Approaches {
		if !slices.Contains(Approaches(), a) {
			return fmt.Errorf("%w %q (known: %s)", ErrUnknownApproach, a, strings.Join(Approaches(), ", "))
		}
	}
	for _, s := range c.Shapes {
		if _, err := shapeByName(s); err != nil {
			return err
		}
	}
	return nil
}

func shapeByName(name string) (microbench.Shape, error) {
	s, err := microbench.ShapeByName(name)
	if err != nil {
		return s, err
	}
	for _, v := range s.Variants {
		t := 0
		for _, n := range v {
			t += n
		}
		if t > 60000 {
			return s, fmt.Errorf("%w: shape %s has %d bytes, more than one datagram", ErrConfig, name, t)
		}
	}
	return s, nil
}

// Run runs every approach on every shape and returns one Result per
// (approach, shape), approaches in the outer order.
func Run(cfg Config) ([]Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := checkDatapath(cfg.Datapath); err != nil {
		return nil, err
	}
	var aps []string
	for _, a := range cfg.Approaches {
		if err := available(a); err != nil {
			if cfg.SkipUnavailable {
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "echo: skipping %s: %v\n", a, err)
				}
				continue
			}
			return nil, err
		}
		aps = append(aps, a)
	}
	runs := make(map[[2]string][]Result)
	for _, s := range cfg.Shapes {
		for rep := 0; rep < cfg.Repeat; rep++ {
			for _, a := range aps {
				r, err := RunOne(cfg, a, s)
				if err != nil {
					return nil, fmt.Errorf("echo %s %s: %w", a, s, err)
				}
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "echo %-20s %-7s %s: %9.0f req/s  p50 %7.1f us  p99 %7.1f us  server %6.0f ns/req  (lost %d, bad %d, server errors %d)\n",
						a, s, cfg.Datapath, r.ThroughputRPS, r.P50us, r.P99us, r.ServerNsPerReq, r.Lost, r.Bad, r.ServerErrs)
					fmt.Fprintf(cfg.Progress, "     polls: server %v; client %v, client CPU %.0f ns/req\n", r.Server, r.Client, r.ClientNsPerReq)
				}
				runs[[2]string{a, s}] = append(runs[[2]string{a, s}], r)
			}
		}
	}
	var out []Result
	for _, a := range aps {
		for _, s := range cfg.Shapes {
			rs := runs[[2]string{a, s}]
			slices.SortFunc(rs, func(x, y Result) int { return cmp.Compare(x.ThroughputRPS, y.ThroughputRPS) })
			out = append(out, rs[len(rs)/2])
		}
	}
	return out, nil
}

// checkDatapath fails early, with the datapath's own explanation, when
// the datapath cannot run here (xdp without root or AF_XDP support).
func checkDatapath(kind string) error {
	if kind != "xdp" {
		return nil
	}
	if err := xdp.Available(); err != nil {
		return fmt.Errorf("echo: datapath xdp: %w", err)
	}
	return nil
}

// XDPTopologySpace is the UMEM of the topology one xdp run creates: the
// two endpoints' RX/TX buffers and both sides' application pools (a few
// MiB each at most) with room to spare.
const XDPTopologySpace = 128 << 20

// side is a server or a client endpoint with its pools.
type side struct {
	ep    datapath.Endpoint
	pool  *mem.Pool  // endpoint buffers (nil on xdp: the endpoint's own pool on its UMEM)
	app   *mem.Pool  // application buffers (requests, cornflakes arenas)
	space *mem.Space // shm: the shared space both pools live in (closed after them)
}

func (s *side) close() error {
	var errs []error
	if s.ep != nil {
		errs = append(errs, s.ep.Close())
	}
	for _, p := range []*mem.Pool{s.pool, s.app} {
		if p != nil {
			errs = append(errs, p.Close()) // a *mem.InUseError names a leak
		}
	}
	if s.space != nil && errors.Join(errs...) == nil { // not under memory still in use
		errs = append(errs, s.space.Close())
	}
	return errors.Join(errs...)
}

// openSide opens one endpoint of the given kind: udp on loopback, memnet
// on net, xdp in a new namespace of topo. On xdp the endpoint uses its own
// pool on the topology's UMEM, and the application pool is carved from the
// same UMEM so that request and response values go out zero-copy.
func openSide(kind, name string, net *memnet.Network, topo *xdp.Topology) (*side, error) {
	s := &side{}
	var err error
	if kind == "shm" {
		return openShmSide(name)
	}
	if kind == "xdp" {
		if topo == nil {
			return nil, fmt.Errorf("%w: xdp side without a topology", ErrConfig)
		}
		ep, err := topo.Open(datapath.Config{})
		if err != nil {
			return nil, err
		}
		s.ep = ep
		if s.app, err = mem.NewPool(mem.PoolConfig{Name: "echo app " + name, Space: xdp.SpaceOf(ep)}); err != nil {
			s.close()
			return nil, err
		}
		return s, nil
	}
	if s.pool, err = mem.NewPool(mem.PoolConfig{Name: "echo " + name}); err != nil {
		return nil, err
	}
	if s.app, err = mem.NewPool(mem.PoolConfig{Name: "echo app " + name}); err != nil {
		s.close()
		return nil, err
	}
	cfg := datapath.Config{Pool: s.pool}
	switch kind {
	case "udp":
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
	case "memnet":
		cfg.Options = memnet.Options{Network: net}
	}
	if s.ep, err = datapath.Open(kind, cfg); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// RunOne runs one approach on one shape (cfg's defaults are filled in).
//
// On xdp, RunOne creates its own xdp.Topology (prefix xdp.AutoPrefix: a
// hub namespace with a bridge, one namespace per endpoint, one shared
// UMEM of XDPTopologySpace bytes) and removes it before returning, also on
// errors. A topology per run, rather than the process-wide
// xdp.AutoTopology for the whole sweep, keeps the namespaces of a sweep
// from accumulating: a topology's namespaces live until it closes, and
// each new one sets up neighbour entries with all the others.
func RunOne(cfg Config, approach, shapeName string) (_ Result, err error) {
	if err := cfg.fill(); err != nil {
		return Result{}, err
	}
	shape, err := shapeByName(shapeName)
	if err != nil {
		return Result{}, err
	}
	if !slices.Contains(Approaches(), approach) { // before any endpoint is opened
		return Result{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownApproach, approach, strings.Join(Approaches(), ", "))
	}
	var net *memnet.Network
	var topo *xdp.Topology
	switch cfg.Datapath {
	case "memnet":
		net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	case "xdp":
		if err := checkDatapath(cfg.Datapath); err != nil {
			return Result{}, err
		}
		if topo, err = xdp.NewTopology(xdp.TopologyConfig{SpaceSize: XDPTopologySpace}); err != nil {
			return Result{}, fmt.Errorf("echo: datapath xdp: %w", err)
		}
		// Runs after the sides are closed (every path below closes them
		// before returning).
		defer func() {
			if cerr := topo.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("echo: closing the xdp topology: %w", cerr))
			}
		}()
	}
	ss, err := openSide(cfg.Datapath, "server", net, topo)
	if err != nil {
		return Result{}, err
	}
	cs, err := openSide(cfg.Datapath, "client", net, topo)
	if err != nil {
		ss.close()
		return Result{}, err
	}
	srv, err := newServer(ss, approach, shape)
	if err != nil {
		ss.close()
		cs.close()
		return Result{}, err
	}
	cli, err := newClient(cs, ss.ep.LocalAddr(), approach, shape, cfg)
	if err != nil {
		srv.close()
		ss.close()
		cs.close()
		return Result{}, err
	}
	cli.measuring = &srv.measuring
	var stop atomic.Bool
	var wg sync.WaitGroup
	var srvErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		srvErr = srv.loop(&stop)
	}()
	res, cliErr := func() (Result, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		return cli.run(cfg)
	}()
	stop.Store(true)
	// A server blocked in Wait sees the flag at once (and not only after
	// its timeout, which shm's Wait can overrun on a loaded machine).
	if w, ok := ss.ep.(interface{ Wake() error }); ok {
		_ = w.Wake()
	}
	wg.Wait()
	res.Approach, res.Datapath, res.Shape, res.Clients = approach, cfg.Datapath, shapeName, cfg.Clients
	res.Rate = cfg.Rate
	res.ServerErrs = srv.errs
	if srv.handled > 0 {
		res.ServerNsPerReq = float64(srv.cpuNs) / float64(srv.handled)
	}
	res.Server = srv.polls
	res.ServerTx = ss.ep.Stats()
	if m, ok := xdp.ModeOf(ss.ep); ok {
		res.XDPMode = m.String()
	}
	errs := []error{cliErr, srvErr, cli.close(), srv.close(), cs.close(), ss.close()}
	if res.Bad > 0 {
		errs = append(errs, fmt.Errorf("%w: %d bad responses", ErrMismatch, res.Bad))
	}
	return res, errors.Join(errs...)
}

// Compare sets every result's VsRaw fields from the raw echo results of
// its datapath and shape in res (the median over their repetitions).
func Compare(res []Result) {
	type key struct{ dp, shape string }
	tput, cpu := map[key][]float64{}, map[key][]float64{}
	for _, r := range res {
		if r.Approach == "raw" {
			k := key{r.Datapath, r.Shape}
			tput[k] = append(tput[k], r.ThroughputRPS)
			cpu[k] = append(cpu[k], r.ServerNsPerReq)
		}
	}
	for i := range res {
		r := &res[i]
		k := key{r.Datapath, r.Shape}
		r.VsRawThroughput, r.VsRawServerCPU = 0, 0
		if t := stats.Median(tput[k]); t > 0 {
			r.VsRawThroughput = r.ThroughputRPS / t
		}
		if c := stats.Median(cpu[k]); c > 0 && r.ServerNsPerReq > 0 {
			r.VsRawServerCPU = c / r.ServerNsPerReq
		}
	}
}

// PollStats counts one side's receive polls in a run's measured window.
// They show whether a side waited for its peer: a side that bounds the
// throughput finds work queued at almost every poll (few empty polls,
// full batches), a side that waits polls mostly empty rings. When both
// sides poll mostly empty rings, neither is saturated and the closed
// loop's hand-offs (scheduling, wake-ups) set the throughput.
type PollStats struct {
	Polls   uint64 // receive calls
	Empty   uint64 // receive calls that returned nothing
	Packets uint64 // packets received
}

// add counts one receive call that returned n packets.
func (p *PollStats) add(n int) {
	p.Polls++
	if n == 0 {
		p.Empty++
	}
	p.Packets += uint64(n)
}

// Batch is the mean number of packets per non-empty poll (0 without one).
func (p PollStats) Batch() float64 {
	if p.Polls == p.Empty {
		return 0
	}
	return float64(p.Packets) / float64(p.Polls-p.Empty)
}

// EmptyFraction is the fraction of polls that returned nothing.
func (p PollStats) EmptyFraction() float64 {
	if p.Polls == 0 {
		return 0
	}
	return float64(p.Empty) / float64(p.Polls)
}

func (p PollStats) String() string {
	return fmt.Sprintf("%.1f pkts/batch, %.0f%% of %d polls empty", p.Batch(), 100*p.EmptyFraction(), p.Polls)
}
