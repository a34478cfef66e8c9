// Package rpcbench measures the RPC transport next to the raw datapath it
// runs on and next to gRPC-Go: the experiments of eRPC §6 (small-RPC rate,
// latency, large-message bandwidth, bandwidth under loss, factor analysis,
// session scalability). The cornflakes rpcbench command is a thin wrapper.
//
// Every number is measured, never asserted. Loss experiments always run on
// memnet (the only datapath with loss injection).
package rpcbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	cfbench "github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/datapath/udp" // also registers "udp"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/internal/pin"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// Record is one measurement, the JSON shape of cornflakes rpcbench --json.
type Record struct {
	Test     string  `json:"test"`
	Variant  string  `json:"variant"`
	Datapath string  `json:"datapath"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
}

// String is the record as one row of WriteTable.
func (r Record) String() string {
	return fmt.Sprintf("%-12s %-26s %-8s %14.3f %s", r.Test, r.Variant, r.Datapath, r.Value, r.Unit)
}

// WriteTable writes recs as a text table, one row per record, followed by
// one met/MISSED line per target they cover (CheckTargets).
func WriteTable(w io.Writer, recs []Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %-26s %-8s %14s %s\n", "test", "variant", "datapath", "value", "unit")
	for _, r := range recs {
		b.WriteString(r.String() + "\n")
	}
	if lines := CheckTargets(recs); len(lines) > 0 {
		b.WriteString("\ntargets (docs/PERFORMANCE.md §4):\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Tests lists the experiments, in the order Run performs them.
var Tests = []string{"small_rate", "latency", "large_bw", "loss_bw", "factor", "sessions", "zc_resp"}

// Options configures Run.
type Options struct {
	// Datapath is "udp" (loopback, default), "udp-veth" (kernel UDP
	// between two network namespaces joined by a veth pair: a real link,
	// with the two hosts' network stacks apart), "shm" (shared memory:
	// packets of up to 1 MiB and a page, registered memory sent as
	// descriptors), "memnet" or "xdp".
	Datapath string
	// Quick shortens every measurement (the whole run stays under 3 minutes).
	Quick bool
	// Only restricts the run to these tests (names from Tests; latency
	// covers latency_p50 and latency_p99). Empty: all.
	Only []string
	// CC turns congestion control (Timely and the rate limiter) on in
	// small_rate, latency, large_bw, loss_bw and sessions; factor always
	// measures with it. Off: off (explicitly, rpc.CCConfig.Disable: the
	// endpoints' automatic mode would turn it on across udp-veth's and
	// xdp's links).
	CC bool
	// Progress receives one line per measurement (nil: silent).
	Progress io.Writer
}

const (
	reqEcho  = 1 // dispatch: echo from preallocated memory (the message record up to rpc.InlineMax, the slot's buffer above)
	reqLarge = 2 // dispatch: 32-byte response
	reqEchoB = 3 // dispatch: echo with a freshly allocated pool buffer per response (no prealloc)

	smallSize   = 32
	maxPayload  = 8972
	largeSize   = 8 << 20
	concurrency = 32
)

// ErrOptions reports invalid options.
var ErrOptions = errors.New("rpcbench: invalid options")

// Run performs the selected experiments and returns their records.
func Run(ctx context.Context, o Options) (recs []Record, err error) {
	if o.Datapath == "" {
		o.Datapath = "udp"
	}
	var veth *netns.Pair
	var space *mem.Space
	switch o.Datapath {
	case "udp", "memnet":
	case "shm":
		sp, err := newShmSpace()
		if err != nil {
			return nil, fmt.Errorf("%w: datapath shm: %v", ErrOptions, err)
		}
		// Closed after every endpoint and pool of the run (each
		// measurement closes its own).
		defer func() { _ = sp.Close() }()
		space = sp
	case "udp-veth":
		p, err := netns.Create(netns.Config{Prefix: vethPrefix, MTU: maxPayload + 28})
		if err != nil {
			return nil, fmt.Errorf("%w: datapath udp-veth: %v", ErrOptions, err)
		}
		defer p.Close()
		veth = p
	case "xdp":
		// Both endpoints run on the process-wide AF_XDP topology (a pair
		// of network namespaces); tear it down when the run ends.
		if err := xdp.Available(); err != nil {
			return nil, fmt.Errorf("%w: datapath xdp: %v", ErrOptions, err)
		}
		defer func() { _ = xdp.CloseAutoTopology() }()
	default:
		return nil, fmt.Errorf("%w: datapath %q (want udp, udp-veth, shm, memnet or xdp)", ErrOptions, o.Datapath)
	}
	want := map[string]bool{}
	for _, t := range o.Only {
		ok := false
		for _, k := range Tests {
			ok = ok || k == t
		}
		if !ok {
			return nil, fmt.Errorf("%w: unknown test %q", ErrOptions, t)
		}
		want[t] = true
	}
	b := &bench{o: o, dur: 2 * time.Second, reps: 5, ctx: ctx, veth: veth, space: space}
	if o.Quick {
		b.dur = 400 * time.Millisecond
		b.reps = 3
	}
	// Two busy-polling loops hold two Ps; the Nexus, gRPC and runtime
	// goroutines need more so that they are never starved behind them.
	if prev := runtime.GOMAXPROCS(0); prev < minProcs {
		runtime.GOMAXPROCS(minProcs)
		defer runtime.GOMAXPROCS(prev)
	}
	b.addLoad("loadavg_start")
	defer func() {
		// After the results: the returned slice must include it.
		b.addLoad("loadavg_end")
		recs = b.recs
	}()
	// Kernel UDP pays a system call per batch on each side: its cost on
	// this machine is the unit the udp results scale with.
	sc := cfbench.MeasureSyscall(0)
	b.add("machine", "syscall_ns", "-", float64(sc.Median), "ns")
	b.progress("machine check: %v\n", sc)
	for _, t := range Tests {
		if len(want) > 0 && !want[t] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return b.recs, err
		}
		var err error
		switch t {
		case "small_rate":
			err = b.smallRate()
		case "latency":
			err = b.latency()
		case "large_bw":
			err = b.largeBW()
		case "loss_bw":
			err = b.lossBW()
		case "factor":
			err = b.factor()
		case "sessions":
			err = b.sessions()
		case "zc_resp":
			err = b.zcResp()
		}
		if err != nil {
			return b.recs, fmt.Errorf("rpcbench %s: %w", t, err)
		}
	}
	// The comparisons the targets are stated in, computed from this run's
	// own baselines.
	for _, r := range Ratios(b.recs) {
		b.add(r.Test, r.Variant, r.Datapath, r.Value, r.Unit)
	}
	return b.recs, nil
}

type bench struct {
	o    Options
	dur  time.Duration
	reps int // interleaved repetitions of small_rate and latency (median reported)
	ctx  context.Context
	recs []Record
	sys  batching    // the last rpcRate's system calls (udp)
	veth *netns.Pair // udp-veth's namespaces (nil otherwise)
	// space is shm's shared space: the endpoints' pools and zc_resp's
	// buffers live in it, so that what they send goes out as descriptors.
	space *mem.Space
}

// batching is the system-call batching of a client/server pair over one
// measurement (udp only: zero otherwise), to compare the RPC loop with
// the raw loop: packets per sendmmsg and recvmmsg, and the share of
// receive calls that found nothing.
type batching struct {
	ok       bool
	cli, srv udp.SyscallStats
	cliS     datapath.Stats
	srvS     datapath.Stats
}

// collect reads cli's and srv's counters; both must be idle (the server's
// loop stopped).
func (x *batching) collect(cli, srv datapath.Endpoint) {
	type sysStater interface{ SyscallStats() udp.SyscallStats }
	c, ok1 := cli.(sysStater)
	s, ok2 := srv.(sysStater)
	if !ok1 || !ok2 {
		*x = batching{}
		return
	}
	*x = batching{ok: true, cli: c.SyscallStats(), srv: s.SyscallStats(), cliS: cli.Stats(), srvS: srv.Stats()}
}

func (x batching) String() string {
	if !x.ok {
		return "n/a"
	}
	per := func(p, n uint64) float64 {
		if n == 0 {
			return 0
		}
		return float64(p) / float64(n)
	}
	side := func(name string, y udp.SyscallStats, st datapath.Stats) string {
		return fmt.Sprintf("%s tx %.1f pkt/sendmmsg (%d calls), rx %.2f pkt/recvmmsg (%d calls, %.0f%% empty)",
			name, per(st.TxPackets, y.SendCalls), y.SendCalls, per(st.RxPackets, y.RecvCalls), y.RecvCalls,
			100*per(y.RecvEmpty, y.RecvCalls))
	}
	return side("client", x.cli, x.cliS) + "; " + side("server", x.srv, x.srvS)
}

// addLoad records the 1-minute load average (/proc/loadavg) as test
// "machine": on a shared machine every other number must be read next to it.
func (b *bench) addLoad(variant string) {
	if l, ok := loadAvg(); ok {
		b.add("machine", variant, "-", l, "load")
	}
}

// loadAvg returns the 1-minute load average, false where /proc/loadavg is
// missing.
func loadAvg() (float64, bool) {
	d, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(d))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// onLockedThread runs fn on a fresh goroutine locked to its own OS thread
// and waits for it: every measuring loop (client and server, RPC and raw)
// busy-polls on a locked thread, as eRPC's do, so the comparison between
// them is apples to apples and no loop waits for the Go scheduler to hand
// it back a thread.
//
// role labels the goroutine's CPU profile samples (see withRole).
func onLockedThread(role string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		restore := pinThread(cpuClient)
		defer restore()
		withRole(role, func() { done <- fn() })
	}()
	return <-done
}

// withRole runs fn with the pprof label role=<role> ("rpc-client",
// "rpc-server", "raw-client", "raw-server"), which goroutines started by
// fn inherit: a profile of a run (cornflakes rpcbench --cpuprofile)
// separates the two sides of each loop with -tagfocus role=rpc-client.
func withRole(role string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("role", role), func(context.Context) { fn() })
}

// CPUs the measuring loops are pinned to (modulo the CPU count): the client
// and the server loop always run on different CPUs. Unpinned, the kernel
// sometimes stacks both spinning threads on one CPU of a loaded machine,
// and every round trip then waits for a scheduler time slice (~8 ms here).
const (
	cpuClient = 0
	cpuServer = 1
)

// pinThread binds the calling (locked) OS thread to cpu (pin.Thread).
func pinThread(cpu int) (restore func()) { return pin.Thread(cpu) }

// minProcs is the smallest GOMAXPROCS Run measures with.
const minProcs = 4

// busyPoll is the IdleSpin of every benchmark endpoint: never sleep in
// the datapath's Wait (the raw loops do not either).
const busyPoll = time.Duration(math.MaxInt64)

func (b *bench) add(test, variant, dp string, v float64, unit string) {
	r := Record{Test: test, Variant: variant, Datapath: dp, Value: v, Unit: unit}
	b.recs = append(b.recs, r)
	if b.o.Progress != nil {
		fmt.Fprintln(b.o.Progress, r)
	}
}

// ---- setup ----

type setup struct {
	srvNx    *rpc.Nexus
	cliNx    *rpc.Nexus
	srv, cli *rpc.Endpoint
	srvDP    datapath.Endpoint
	cliDP    datapath.Endpoint
	cancel   context.CancelFunc
	srvDone  chan error
	pools    []*mem.Pool // endpoints' pools in a shared space (shm), closed after them
}

// vethPrefix names udp-veth's network namespaces (cfrpcb-<pid>-<n>-a|b).
const vethPrefix = "cfrpcb"

// fabric is where a measurement's two endpoints live: the datapath kind
// and, for memnet, its network or, for udp-veth, the namespace pair.
type fabric struct {
	kind string
	net  *memnet.Network
	veth *netns.Pair
	// space, when set, is the shared space the endpoints send zero-copy
	// from (shm: mem.SpaceConfig.Shared, registered with both endpoints).
	space *mem.Space
}

// open opens the server's (side A of udp-veth) or the client's datapath
// endpoint. Session management stays on loopback in every case; only the
// data path crosses udp-veth's link.
func (f fabric) open(server bool) (datapath.Endpoint, error) {
	cfg := datapath.Config{MaxPayload: maxPayload}
	switch f.kind {
	case "udp":
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
		return datapath.Open("udp", cfg)
	case "udp-veth":
		end := f.veth.B
		if server {
			end = f.veth.A
		}
		cfg.Local = netip.AddrPortFrom(end.Addr4, 0)
		var ep datapath.Endpoint
		err := netns.Do(end.NS, func() error { // the socket stays in the namespace
			var err error
			ep, err = datapath.Open("udp", cfg)
			return err
		})
		return ep, err
	case "xdp":
		// No interface named: the endpoint joins the AF_XDP auto topology.
		return datapath.Open("xdp", cfg)
	case "shm":
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
		cfg.MaxPayload = shmMaxPayload
		cfg.Options = shmOptions(f.space)
		return datapath.Open("shm", cfg)
	}
	ep, err := f.net.Open(cfg, memnet.Options{RxRing: 4096, TxQueue: 8192})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ep, nil
}

func registerHandlers(nx *rpc.Nexus) {
	_ = nx.Register(reqEcho, rpc.Dispatch, func(r *rpc.Request) {
		d := r.Data()
		if len(d) <= rpc.InlineMax {
			// Copied into the endpoint's record of the response: a record
			// the bury of the slot's previous response just touched,
			// where the slot's own buffer is one more cold object (and
			// its reference count another) per request.
			_ = r.RespondBytes(d)
			return
		}
		if pre := r.PreResp(); len(d) <= len(pre) {
			_ = r.RespondPre(copy(pre, d))
			return
		}
		_ = r.RespondBytes(d)
	})
	_ = nx.Register(reqEchoB, rpc.Dispatch, func(r *rpc.Request) {
		// A buffer from the endpoint's pool per response, as without
		// preallocated responses (eRPC Table 3).
		d := r.Data()
		b, err := r.Endpoint().Pool().Alloc(max(len(d), 1))
		if err != nil {
			_ = r.RespondBytes(d)
			return
		}
		_ = r.Respond(rpc.BufMsg(b.Slice(0, copy(b.Bytes(), d))))
	})
	_ = nx.Register(reqLarge, rpc.Dispatch, func(r *rpc.Request) {
		pre := r.PreResp()
		_ = r.RespondPre(copy(pre, r.Data()[:smallSize]))
	})
}

// newSetup starts a server endpoint (on its own goroutine, running the
// benchmark's handlers) and a client endpoint (for the calling goroutine)
// with nSess sessions.
func newSetup(f fabric, cfg rpc.EndpointConfig, nSess int) (*setup, []rpc.Session, error) {
	return newSetupLoop(f, cfg, nSess, func(nx *rpc.Nexus) error { registerHandlers(nx); return nil }, nil)
}

// serverLoop runs a server endpoint until ctx is done (nil: ep.Run).
type serverLoop func(ctx context.Context, ep *rpc.Endpoint, dp datapath.Endpoint) error

// newSetupLoop is newSetup with the server's handlers registered by
// register and its loop run by loop.
func newSetupLoop(f fabric, cfg rpc.EndpointConfig, nSess int, register func(*rpc.Nexus) error, loop serverLoop) (*setup, []rpc.Session, error) {
	s := &setup{}
	var err error
	nc := rpc.NexusConfig{FailureTimeout: 30 * time.Second, ConnectTimeout: 20 * time.Second}
	if s.srvNx, err = rpc.NewNexus(nc); err != nil {
		return nil, nil, err
	}
	if s.cliNx, err = rpc.NewNexus(nc); err != nil {
		s.close()
		return nil, nil, err
	}
	if err := register(s.srvNx); err != nil {
		s.close()
		return nil, nil, err
	}
	if cfg.IdleSpin == 0 {
		cfg.IdleSpin = busyPoll
	}
	sc := cfg
	sc.ID = 1
	if sc.Pool, err = s.pool(f, "rpcbench server"); err != nil {
		s.close()
		return nil, nil, err
	}
	if sc.Datapath, err = f.open(true); err != nil {
		s.close()
		return nil, nil, err
	}
	s.srvDP = sc.Datapath
	if s.srv, err = s.srvNx.NewEndpoint(sc); err != nil {
		_ = sc.Datapath.Close()
		s.close()
		return nil, nil, err
	}
	cc := cfg
	cc.ID = 2
	if cc.Pool, err = s.pool(f, "rpcbench client"); err != nil {
		s.close()
		return nil, nil, err
	}
	if cc.Datapath, err = f.open(false); err != nil {
		s.close()
		return nil, nil, err
	}
	s.cliDP = cc.Datapath
	if s.cli, err = s.cliNx.NewEndpoint(cc); err != nil {
		_ = cc.Datapath.Close()
		s.close()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.srvDone = make(chan error, 1)
	srv, srvDP := s.srv, s.srvDP
	if loop == nil {
		loop = func(ctx context.Context, ep *rpc.Endpoint, _ datapath.Endpoint) error { return ep.Run(ctx) }
	}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		restore := pinThread(cpuServer)
		defer restore()
		withRole("rpc-server", func() { s.srvDone <- loop(ctx, srv, srvDP) })
	}()
	sess, err := s.connect(nSess)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, sess, nil
}

// connect opens n sessions, at most 256 handshakes at a time.
func (s *setup) connect(n int) ([]rpc.Session, error) {
	var out []rpc.Session
	deadline := time.Now().Add(60 * time.Second)
	for len(out) < n {
		batch := n - len(out)
		if batch > 256 {
			batch = 256
		}
		var cur []rpc.Session
		for i := 0; i < batch; i++ {
			ss, err := s.cli.Connect(s.srvNx.Addr(), 1)
			if err != nil {
				return nil, err
			}
			cur = append(cur, ss)
		}
		for _, ss := range cur {
			for !s.cli.IsConnected(ss) {
				if time.Now().After(deadline) {
					return nil, errors.New("connect timed out")
				}
				if err := s.cli.RunOnce(); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, cur...)
	}
	return out, nil
}

// stopServer stops the server endpoint's loop.
func (s *setup) stopServer() {
	if s.cancel != nil {
		s.cancel()
		<-s.srvDone
		s.cancel = nil
	}
}

func (s *setup) close() {
	s.stopServer()
	if s.cli != nil {
		_ = s.cli.Close()
	}
	if s.srv != nil {
		_ = s.srv.Close()
	}
	if s.cliNx != nil {
		_ = s.cliNx.Close()
	}
	if s.srvNx != nil {
		_ = s.srvNx.Close()
	}
	for _, p := range s.pools { // after the endpoints that used them
		_ = p.Close()
	}
	s.pools = nil
}

// pool returns the message pool of an RPC endpoint on f: nil (the
// endpoint makes its own) unless f has a shared space, where the pool
// lives in it so that request and response bodies go out as descriptors.
// The setup closes it after its endpoints.
func (s *setup) pool(f fabric, name string) (*mem.Pool, error) {
	if f.space == nil {
		return nil, nil
	}
	p, err := mem.NewPool(mem.PoolConfig{Name: name, Space: f.space})
	if err != nil {
		return nil, err
	}
	s.pools = append(s.pools, p)
	return p, nil
}

// ---- RPC workloads ----

// loop is a closed-loop client: every completion issues the next request.
type loop struct {
	ep       *rpc.Endpoint
	sess     []rpc.Session
	next     int
	reqType  uint8
	req      mem.Buf // registered request body, sent zero-copy (a Clone per request)
	done     int
	inflight int
	stop     bool
	err      error
	lat      *[]time.Duration
	cancel   context.CancelFunc // ends the current runFor early (a failed request)
}

type loopSlot struct {
	l     *loop
	start time.Time
	fn    func(*rpc.Response)
}

func (l *loop) issue(sl *loopSlot) {
	s := l.sess[l.next]
	if l.next++; l.next == len(l.sess) { // round robin without a division per request
		l.next = 0
	}
	if l.lat != nil {
		sl.start = time.Now() // a clock read per request only when measuring latency
	}
	l.inflight++
	if err := l.ep.Enqueue(s, l.reqType, rpc.BufMsg(l.req.Clone()), sl.fn); err != nil {
		l.inflight--
		if l.err == nil {
			l.err = err
		}
	}
}

func (sl *loopSlot) complete(r *rpc.Response) {
	l := sl.l
	l.inflight--
	if r.Err != nil {
		if l.err == nil {
			l.err = r.Err
		}
		if l.cancel != nil {
			l.cancel()
		}
		return
	}
	l.done++
	if l.lat != nil {
		*l.lat = append(*l.lat, time.Since(sl.start))
	}
	if !l.stop {
		l.issue(sl)
	}
}

// runFor runs the client endpoint's event loop for d, or until a request
// fails. It uses Run, whose loop reads the clock once per iteration (its
// own) and checks d every 64 iterations: a RunOnce loop here would add a
// clock read and two atomic operations per iteration of the harness's own,
// which the raw loop (one clock read per iteration) does not pay.
func (l *loop) runFor(d time.Duration) error {
	if l.err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	l.cancel = cancel
	err := l.ep.Run(ctx)
	l.cancel = nil
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// closedLoop keeps window requests of reqSize bytes in flight over sess
// (round robin) for d, after a warm-up of d/10, and returns completed
// requests per second. With lat non-nil it records every latency.
func closedLoop(ep *rpc.Endpoint, sess []rpc.Session, reqType uint8, reqSize, window int, d time.Duration, lat *[]time.Duration) (float64, error) {
	req, err := ep.Pool().Alloc(reqSize)
	if err != nil {
		return 0, err
	}
	defer func() { _ = req.Release() }()
	clear(req.Bytes())
	l := &loop{ep: ep, sess: sess, reqType: reqType, req: req, lat: lat}
	slots := make([]*loopSlot, window)
	for i := range slots {
		sl := &loopSlot{l: l}
		sl.fn = sl.complete
		slots[i] = sl
	}
	for _, sl := range slots {
		l.issue(sl)
	}
	// Warm up for d/10, until one request completed (first-touch of
	// large buffers can be slow) and until every session carried one
	// (the server allocates a slot's response buffer on first use: with
	// 20000 sessions a short warm-up would measure those allocations);
	// at most 30 s.
	limit := time.Now().Add(30 * time.Second)
	if err := l.runFor(d / 10); err != nil {
		return 0, err
	}
	for (l.done == 0 || l.done < len(sess)) && time.Now().Before(limit) && l.err == nil {
		if err := l.runFor(10 * time.Millisecond); err != nil {
			return 0, err
		}
	}
	l.done = 0
	if lat != nil {
		*lat = (*lat)[:0]
	}
	start := time.Now()
	if err := l.runFor(d); err != nil {
		return 0, err
	}
	el := time.Since(start)
	n := l.done
	l.stop = true
	drain := time.Now().Add(30 * time.Second)
	for l.inflight > 0 && time.Now().Before(drain) {
		if err := ep.RunOnce(); err != nil {
			return 0, err
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return float64(n) / el.Seconds(), nil
}

func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return s[i]
}
