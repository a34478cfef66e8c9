package kvbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/workload"
)

// BenchConfig drives RunBench (`cornflakes bench`).
type BenchConfig struct {
	// Experiment is a bench preset (bench.ExperimentNames); "" is "default"
	// unless Workload is set.
	Experiment string
	// Workload, when set, compares every serializer on this workload spec
	// (bench.WorkloadOnly) instead of a preset.
	Workload string
	// Datapath is "udp" (default), "shm", "memnet" or "xdp".
	Datapath string
	// Quick uses the presets' quick sweep (shorter points, fewer steps).
	Quick bool
	// SLO overrides the p99 target (default bench.DefaultSLO).
	SLO time.Duration
	// Duration overrides the length of each load point.
	Duration time.Duration
	// Budget overrides the sweep budget of the whole experiment.
	Budget time.Duration
	// Anchor starts each sweep at this fraction of the run's saturated
	// rate, measured first (default bench.DefaultAnchor; negative for the
	// fixed start of bench.SweepConfig, 5000 req/s doubling).
	Anchor float64
	// Serializers restricts the runs to these serializers (default all).
	Serializers []string
	// NoVT leaves out vtprotobuf, which RunBench otherwise adds after each
	// protobuf run.
	NoVT bool
	// Endpoints is the number of server endpoints (default 1: one server core).
	Endpoints int
	// Threshold overrides the hybrid Cornflakes codecs' copy threshold
	// (0: the datapath's calibrated one, datapath.HybridThreshold).
	Threshold int
	// Sessions is kv.ClientConfig.Sessions of the load generator's
	// connections (0: DefaultSessions): RPC sessions per server
	// endpoint, each holding 8 requests in flight. With k > 1 the
	// saturation points use BenchSaturationClients/k connections (at least
	// one), so the same requests in flight are polled through fewer event
	// loops (docs/perf/load12.md); 1 gives the four single-session
	// connections of sessions 1-22.
	Sessions int
	// ServerSpin is how long a server endpoint keeps busy-polling after its
	// last request before it sleeps (default DefaultServerSpin; ignored
	// with BusyPoll).
	ServerSpin time.Duration
	// BusyPoll decides whether the server endpoints (kv.ServerConfig.BusyPoll)
	// and the load generator (bench.Config.Spin) poll without ever
	// sleeping, as the paper's servers and clients do: one core for each
	// server endpoint, one for the clients. Server CPU per request is then
	// its busy time. The default, BusyPollAuto, polls when the machine has
	// the cores and the machine check finds them free.
	BusyPoll BusyPollMode
	// Server, when set, is the Nexus address of a running server
	// (`cornflakes kv serve`, possibly on another machine, as in the
	// paper's setup) that the load generator drives instead of starting
	// its own. It must serve every serializer of the runs with Endpoints
	// endpoints; RunBench preloads each workload into it through the
	// client. The server's CPU time is not measured then. udp, or shm for
	// a server in another process on this host.
	Server netip.AddrPort
	// Local is the IP the load generator binds (default 127.0.0.1; with a
	// remote Server, an address of this machine the server can reach).
	Local netip.Addr
	// CC turns on congestion control (Timely and the rate limiter) in the
	// load generator's RPC sessions; off, as in the paper's key-value
	// experiments, by default.
	CC bool
	// Progress receives the progress bars and Log one line per run (both
	// may be nil).
	Progress, Log io.Writer
}

// AF_XDP settings of RunBench: its topology's namespace prefix (`cornflakes
// netns down --prefix cfxbench` removes leftovers of a killed run) and UMEM
// size (committed, locked memory holding the store and every endpoint's
// frames).
const (
	BenchXDPPrefix = "cfxbench"
	BenchXDPSpace  = 1 << 30
)

// BenchSaturationRounds is the number of interleaved closed-loop
// saturation points per serializer whose median is max_rps_saturated: on
// the shared 2-core test machine single points of the same configuration
// minutes apart differed by 2-3.5x, and quiet runs of the same binary
// minutes apart still moved every library by up to 1.5x with 3 rounds. 5
// rounds cost a quick single-workload run 2 more points per serializer
// (about 5 s of its ~100 s) and a median of 5 survives two outliers.
const BenchSaturationRounds = 5

// BenchStallProbe is how long RunBench measures the machine's scheduling
// stalls (bench.MeasureStalls) before the first run.
const BenchStallProbe = time.Second

// BusyPollMode is BenchConfig.BusyPoll.
type BusyPollMode int

const (
	// BusyPollAuto polls when there is a core for every server endpoint
	// plus one for the load generator, the datapath is not memnet (whose
	// deliveries run in endpoint calls that pollers starve), and the
	// machine check lost less than BusyPollMaxLost of the spinning
	// threads' time: a poller that shares its core with other work waits
	// whole scheduler slices (milliseconds), a sleeper only a wake-up.
	BusyPollAuto BusyPollMode = iota
	BusyPollOn
	BusyPollOff
)

// BusyPollMaxLost is BusyPollAuto's limit on the share of time the machine
// check's spinning threads lose to other work.
const BusyPollMaxLost = 0.2

// String returns "auto", "on" or "off".
func (m BusyPollMode) String() string {
	switch m {
	case BusyPollOn:
		return "on"
	case BusyPollOff:
		return "off"
	}
	return "auto"
}

// decide resolves the mode for a run with the given endpoints on datapath
// dp, after the machine check r; the string says why.
func (m BusyPollMode) decide(endpoints int, dp string, r bench.StallReport) (bool, string) {
	switch {
	case m == BusyPollOn:
		return true, "requested"
	case m == BusyPollOff:
		return false, "requested"
	case dp == kv.DatapathMemnet:
		return false, "memnet"
	case runtime.NumCPU() < max(endpoints, 1)+1:
		return false, fmt.Sprintf("%d CPUs for %d server endpoint(s) and the load generator", runtime.NumCPU(), max(endpoints, 1))
	case r.LostFraction() >= BusyPollMaxLost:
		return false, fmt.Sprintf("the machine check lost %.0f%% >= %.0f%% of the spinning threads' time to other work", 100*r.LostFraction(), 100*BusyPollMaxLost)
	}
	return true, fmt.Sprintf("%d CPUs, machine check lost %.1f%% < %.0f%%", runtime.NumCPU(), 100*r.LostFraction(), 100*BusyPollMaxLost)
}

// BenchWarmup is the closed-loop warm-up RunBench runs after each preload,
// before the first measured run on that data set.
const BenchWarmup = 500 * time.Millisecond

// BenchSaturationClients is the number of client connections (each its own
// RPC endpoint and sessions, on one goroutine each) of the saturation
// points: one session holds 8 requests, and with one client the "saturated"
// rate measured that client's round trip (server thread ~40% busy on the
// 2-core test machine); with 4 the server's batches fill (twitter: 51-71k
// -> 67-90k req/s, server CPU 7.4-9.4 -> 5.6-6.2 µs per request). With
// BenchConfig.Sessions k > 1 the saturation points use
// BenchSaturationClients/k connections (at least one) of k sessions each.
const BenchSaturationClients = 4

// DefaultSessions is BenchConfig.Sessions' default: the saturation points'
// 32 requests in flight on one connection of four sessions. Measured on the
// quiet 2-vCPU test machine with busy polling (docs/perf/load12.md), cdn's
// Cornflakes rate went from 916.6k (four connections) to 1181.8k req/s,
// vtprotobuf's from 531.5k to 592.1k. It applies with busy polling off too
// (a sleeping load generator), since the shm datapath wakes a peer for
// packets published while it was still dialing (session 24; before that,
// one connection sometimes completed no request in a 100 ms window).
const DefaultSessions = 4

// DefaultServerSpin makes benchmark server endpoints sleep in the socket as
// soon as they are idle (negative IdleSpin). Measured on the 2-core test
// machine shared with the load generator: mean sequential round trip
// 332 µs sleeping at once, 865 µs with the RPC's default idle spin (100 µs) and
// 2.97 ms busy-polling, because a spinning server takes the core the
// client needs. Under load the server is never idle, so it never sleeps.
const DefaultServerSpin = -1

// Experiment resolves cfg to the experiment RunBench runs.
func (cfg BenchConfig) experiment() (bench.Experiment, error) {
	var e bench.Experiment
	switch {
	case cfg.Workload != "":
		if _, err := workload.Parse(cfg.Workload); err != nil {
			return e, err
		}
		e = bench.WorkloadOnly(cfg.Workload)
	default:
		name := cfg.Experiment
		if name == "" {
			name = "default"
		}
		var err error
		if e, err = bench.LookupExperiment(name); err != nil {
			return e, err
		}
	}
	if !cfg.NoVT {
		var runs []bench.RunSpec
		for _, r := range e.Runs {
			runs = append(runs, r)
			if r.Serializer == kv.SerProtobuf {
				v := r
				v.Serializer = kv.SerVTProtobuf
				runs = append(runs, v)
			}
		}
		e.Runs = runs
	}
	for _, s := range cfg.Serializers {
		if _, err := kv.LookupCodec(s, "", true); err != nil {
			return e, err
		}
	}
	e = e.Filter(cfg.Serializers...)
	if len(e.Runs) == 0 {
		return e, fmt.Errorf("%w: no run left after filtering by %v", kv.ErrUnknownSerializer, cfg.Serializers)
	}
	return e, nil
}

// RunBench runs a benchmark experiment: it starts one in-process server
// (Endpoints endpoints on their own goroutines) and, per run of the
// experiment, sweeps the offered load with the bench package's open-loop
// generator (client goroutines with one Conn each, every response checked
// against the workload's model). The server serves every serializer at
// once, so a workload is preloaded once and shared by the runs that use
// it. It returns one series per run.
func RunBench(ctx context.Context, cfg BenchConfig) ([]bench.Series, error) {
	e, err := cfg.experiment()
	if err != nil {
		return nil, err
	}
	if cfg.Datapath == "" {
		cfg.Datapath = kv.DatapathUDP
	}
	remote := cfg.Server.IsValid()
	if remote && cfg.Datapath != kv.DatapathUDP && cfg.Datapath != kv.DatapathShm {
		return nil, fmt.Errorf("kv: bench: a remote server (BenchConfig.Server) needs datapath udp or shm, not %q", cfg.Datapath)
	}
	load, sweep := bench.PresetDefaults(cfg.Quick)
	var saturation time.Duration // 0: as long as a load point
	if e.Name == "default" && !cfg.Quick {
		load, sweep = bench.MainJobDefaults() // the README's main job: build + run in ~3 min
		saturation = bench.MainJobSaturation
	}
	if cfg.SLO > 0 {
		sweep.SLO = cfg.SLO
	}
	if cfg.Duration > 0 {
		load.Duration = cfg.Duration
	}
	if cfg.Budget > 0 {
		sweep.Budget = cfg.Budget
	}
	sweep.Progress = cfg.Progress
	anchor := cfg.Anchor
	switch {
	case anchor == 0:
		anchor = bench.DefaultAnchor
	case anchor < 0:
		anchor = 0
	}
	stalls := bench.MeasureStalls(ctx, 0, BenchStallProbe)
	syscall := bench.MeasureSyscall(0)
	busyPoll, why := cfg.BusyPoll.decide(cfg.Endpoints, cfg.Datapath, stalls)
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "bench: machine check: %v; %v\n", stalls, syscall)
		onOff := "off"
		if busyPoll {
			onOff = "on"
		}
		fmt.Fprintf(cfg.Log, "bench: busy polling %s (mode %v: %s)\n", onOff, cfg.BusyPoll, why)
	}
	load.Spin = busyPoll
	sessions := cfg.Sessions
	if sessions <= 0 {
		sessions = DefaultSessions
	}

	var nw *memnet.Network
	var topo *xdp.Topology
	switch cfg.Datapath {
	case kv.DatapathMemnet:
		nw = memnet.NewNetwork(memnet.NetworkConfig{})
	case kv.DatapathXDP:
		if err := xdp.Available(); err != nil {
			return nil, fmt.Errorf("kv: bench: datapath xdp: %w", err)
		}
		// One topology (namespaces joined by a bridge, one UMEM) for the
		// whole run, removed on every return path.
		if topo, err = xdp.NewTopology(xdp.TopologyConfig{Prefix: BenchXDPPrefix, SpaceSize: BenchXDPSpace}); err != nil {
			return nil, fmt.Errorf("kv: bench: datapath xdp: %w", err)
		}
		defer func() {
			if cerr := topo.Close(); cerr != nil && cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "bench: closing the AF_XDP topology: %v\n", cerr)
			}
		}()
	case kv.DatapathUDP, kv.DatapathShm:
	default:
		return nil, fmt.Errorf("kv: bench: unknown datapath %q (want udp, shm, memnet or xdp)", cfg.Datapath)
	}

	var (
		srv     *kv.Server
		cl      *kv.Client
		current string
	)
	stop := func() error {
		var errs []error
		if cl != nil {
			errs = append(errs, cl.Close())
		}
		if srv != nil {
			if p := srv.PollStats(); p.Epochs > 0 && cfg.Log != nil {
				// How much of the busy-polling server's busy wall time was
				// its thread's CPU time (docs/WORKLOADS.md, "Server CPU per
				// request").
				fmt.Fprintf(cfg.Log, "bench: busy-poll server accounting: busy wall %v, thread CPU %v (%.1f%%), %d of %d epochs unmeasured\n",
					p.BusyWall.Round(time.Millisecond), p.CPU.Round(time.Millisecond), 100*float64(p.CPU)/float64(max(p.BusyWall, 1)), p.Unmeasured, p.Epochs)
			}
			errs = append(errs, srv.Close())
		}
		srv, cl, current = nil, nil, ""
		return errors.Join(errs...)
	}
	setup := func(ctx context.Context, run bench.RunSpec, w workload.Workload) (bench.Target, func() error, error) {
		codec, err := kv.LookupCodec(run.Serializer, run.Mode, run.SerializeAndSend)
		if err != nil {
			return nil, nil, err
		}
		if cl == nil || current != run.Workload {
			// The load generator's client; its server is cfg.Server, or
			// one started here (again for each workload).
			ccfg := kv.ClientConfig{Server: cfg.Server, Endpoints: max(cfg.Endpoints, 1), Sessions: sessions, Datapath: cfg.Datapath, Memnet: nw, XDP: xdpOf(topo),
				Local: cfg.Local, Threshold: cfg.Threshold, RPC: cfg.rpc()}
			var keys func() int // the server's key count, for the log
			if !remote {
				if err := stop(); err != nil {
					return nil, nil, err
				}
				sc := kv.ServerConfig{Datapath: cfg.Datapath, Memnet: nw, XDP: xdpOf(topo), Endpoints: cfg.Endpoints, Threshold: cfg.Threshold}
				if topo != nil {
					sc.PoolBytes = int64(topo.Space().Len()) * 3 / 4
				}
				sc.LockThread = true // endpoints on their own threads: kv.Server.Usage measures their CPU time
				sc.BusyPoll = busyPoll
				sc.RPC.IdleSpin = cfg.ServerSpin
				if sc.RPC.IdleSpin == 0 {
					sc.RPC.IdleSpin = DefaultServerSpin
				}
				if srv, err = kv.NewServer(sc); err != nil {
					return nil, nil, err
				}
				ccfg.Server, ccfg.Endpoints, keys = srv.Addr(), srv.Endpoints(), srv.Store().Len
			}
			if cl == nil {
				if cl, err = kv.NewClient(ccfg); err != nil {
					return nil, nil, err
				}
			}
			if err := warmUp(ctx, cfg, cl, codec, w, load.Spin, keys); err != nil {
				return nil, nil, err
			}
			current = run.Workload
		}
		if srv == nil { // a remote server: its CPU time is not ours to read
			return clientMeteredTarget{cl.Target(codec), cl}, func() error { return nil }, nil
		}
		return meteredTarget{cl.Target(codec), srv, cl}, func() error { return nil }, nil
	}
	series, err := bench.RunExperiment(ctx, e, bench.ExperimentConfig{
		Datapath: cfg.Datapath, Load: load, Sweep: sweep, Setup: setup, Log: cfg.Log,
		SaturationRounds: BenchSaturationRounds, SaturationClients: max(BenchSaturationClients/sessions, 1), Anchor: anchor,
		Stalls: &stalls, Syscall: &syscall, BusyPoll: busyPoll, Saturation: saturation,
	})
	if serr := stop(); err == nil {
		err = serr
	}
	return series, err
}

// rpc is the load generator's RPC endpoint configuration.
func (cfg BenchConfig) rpc() rpc.EndpointConfig {
	// Explicit either way: the paper's runs have no congestion control,
	// and the automatic mode would turn it on for a --server across a
	// network.
	return rpc.EndpointConfig{CC: rpc.CCConfig{Enable: cfg.CC, Disable: !cfg.CC}}
}

// warmUp preloads w into the server through cl, then runs a short checked
// closed loop so that the first measured run does not pay for the preload
// (its garbage, cold caches, the kernel's socket buffers, the scheduler's
// view of the threads). keys, if not nil, counts the server's keys for the
// log.
func warmUp(ctx context.Context, cfg BenchConfig, cl *kv.Client, codec kv.Codec, w workload.Workload, spin bool, keys func() int) error {
	t0 := time.Now()
	if err := preload(ctx, cl, w); err != nil {
		return err
	}
	if cfg.Log != nil {
		n := ""
		if keys != nil {
			n = fmt.Sprintf(": %d keys", keys())
		}
		fmt.Fprintf(cfg.Log, "preloaded %s%s in %v\n", w.Name(), n, time.Since(t0).Round(time.Millisecond))
	}
	runtime.GC()
	r, err := bench.Run(ctx, bench.Config{Workload: w, Target: cl.Target(codec), Outstanding: bench.SaturationOutstanding, Spin: spin,
		Duration: BenchWarmup, Check: true, Seed: ^uint64(0)})
	if err == nil && r.Mismatches > 0 {
		err = fmt.Errorf("%d responses differ from the model (first: %s): %w", r.Mismatches, r.FirstMismatch, bench.ErrMismatch)
	}
	if err != nil {
		return fmt.Errorf("kv: bench warm-up: %w", err)
	}
	return nil
}

// meteredTarget is a client Target whose server reports its CPU time per
// request (bench.ServerMeter via kv.Server.Usage) and its sleeps
// (bench.SleepMeter via kv.Server.Sleeps), and whose server and client
// report their transport counters (bench.TransportMeter).
type meteredTarget struct {
	bench.Target
	srv *kv.Server
	cl  *kv.Client
}

func (t meteredTarget) ServerUsage() (time.Duration, uint64, error) { return t.srv.Usage() }

func (t meteredTarget) ServerSleeps() (uint64, error) { return t.srv.Sleeps() }

func (t meteredTarget) TransportUsage() (server, client bench.TransportStats, err error) {
	server, err = t.srv.Transport()
	return server, t.cl.Transport(), err
}

// clientMeteredTarget is the Target of a remote server: only the load
// generator's transport counters are known (the server's read zero).
type clientMeteredTarget struct {
	bench.Target
	cl *kv.Client
}

func (t clientMeteredTarget) TransportUsage() (server, client bench.TransportStats, err error) {
	return bench.TransportStats{}, t.cl.Transport(), nil
}

// Preload loads w's data set into the server through cn, keeping up to
// window requests in flight; see bench.Preload (which waits for every
// request in flight before an AppendToList and retries sends refused with
// bench.ErrBusy). It fails on the first response that is not OK.
func Preload(ctx context.Context, w workload.Workload, cn bench.Conn, window int) (int, error) {
	return bench.Preload(ctx, w, cn, window, 0)
}

// preload loads w through one Cornflakes connection.
func preload(ctx context.Context, cl *kv.Client, w workload.Workload) error {
	cn, err := cl.Dial(kv.CodecCFHybrid)
	if err != nil {
		return err
	}
	_, err = Preload(ctx, w, cn, 32)
	if cerr := cn.Close(); err == nil {
		err = cerr
	}
	return err
}

// PreloadServer loads w into srv through an in-process client over the
// server's datapath (for `cornflakes kv serve --workload`). It returns the
// number of preload requests.
func PreloadServer(ctx context.Context, srv *kv.Server, w workload.Workload) (int, error) {
	addr, sc := srv.Addr(), srv.Config()
	if addr.Addr().IsUnspecified() {
		addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), addr.Port())
	}
	cl, err := kv.NewClient(kv.ClientConfig{Server: addr, Endpoints: srv.Endpoints(), Datapath: sc.Datapath, Memnet: sc.Memnet, XDP: sc.XDP, Local: addr.Addr()})
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	cn, err := cl.Dial(sc.Codecs[0])
	if err != nil {
		return 0, err
	}
	n, err := Preload(ctx, w, cn, 32)
	if cerr := cn.Close(); err == nil {
		err = cerr
	}
	return n, err
}
