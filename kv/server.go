package kv

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp" // registers "udp"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/workload"
	"golang.org/x/sys/unix"
)

// Datapath kinds the server and client open by name.
const (
	DatapathUDP    = "udp"
	DatapathMemnet = "memnet"
	// DatapathXDP is AF_XDP (datapath/xdp): endpoints in network
	// namespaces of an AF_XDP topology (ServerConfig.XDP, or the
	// process-wide automatic one that kv/kvbench registers, RegisterXDP),
	// store values in the topology's UMEM so responses carry them
	// zero-copy. Needs root; see xdp.Available.
	DatapathXDP = "xdp"
)

// Defaults of ServerConfig.
const (
	DefaultPoolBytes = 4 << 30 // registered memory the store may use
	// FirstEndpointID is the RPC endpoint id of the server's first
	// endpoint; endpoint i has id FirstEndpointID+i.
	FirstEndpointID = 1
)

// ServerConfig configures a Server. Zero fields take the defaults.
type ServerConfig struct {
	// Datapath is "udp" (kernel UDP sockets, the default), "shm" (shared
	// memory with clients on this host; the store's values are sent from
	// a shared space), "memnet" or "xdp".
	Datapath string
	// Addr is the Nexus (session-management) address clients connect to
	// (default 127.0.0.1:0). The endpoints' data sockets bind the same IP
	// on ephemeral ports.
	Addr netip.AddrPort
	// Memnet is the in-memory network for Datapath "memnet" (nil: the
	// process default network).
	Memnet *memnet.Network
	// Endpoints is the number of endpoints (one goroutine and, ideally, one
	// core each; default 1). Keys are sharded across them: clients send a
	// request to the endpoint owning its first key.
	Endpoints int
	// Codecs restricts the serializers served (default: all).
	Codecs []Codec
	// Threshold overrides the hybrid Cornflakes codecs' copy threshold
	// (0: the datapath's calibrated one, datapath.HybridThreshold; the
	// copy and zerocopy codecs are fixed).
	Threshold int
	// PoolBytes bounds the registered memory holding values (default 4 GiB).
	PoolBytes int64
	// RPC tunes the endpoints (Datapath, ID and Pool are set by the server).
	RPC rpc.EndpointConfig
	// XDP is the AF_XDP topology the endpoints of Datapath "xdp" are
	// opened on (kvbench.XDP adapts an xdp.Topology; nil: the process-wide
	// one RegisterXDP provides, xdp.AutoTopology with kv/kvbench linked;
	// the caller closes it, e.g. with xdp.CloseAutoTopology, after the
	// server).
	XDP XDPTopology
	// LockThread runs each endpoint's loop on its own locked OS thread
	// (runtime.LockOSThread), for endpoints that busy-poll (large
	// RPC.IdleSpin) so the Go scheduler never parks them behind other
	// goroutines. It also makes the endpoints' CPU time measurable
	// (Server.Usage).
	LockThread bool
	// BusyPoll runs each endpoint's loop without ever sleeping, as the
	// paper's DPDK servers do: a request is picked up at the next poll
	// instead of after a wake-up (on the 2-vCPU test VM a sleeping thread
	// takes 25-150 µs to wake), at the price of one core per endpoint
	// spinning while idle. Usage then reports busy time instead of thread
	// CPU time (which would be the wall-clock time); LockThread is ignored.
	BusyPoll bool
	// Nexus tunes the Nexus (ControlAddr is set from Addr). FailureTimeout
	// defaults to DefaultFailureTimeout.
	Nexus rpc.NexusConfig
	// Keys, when set, admits only clients holding one of its credentials
	// (it becomes Nexus.Keys; rotate with Keys.Set while serving) and
	// refuses writes (put, delete, append) from sessions whose key's role
	// is not RoleReadWrite (rpc.ErrDenied at the client). Nil: no
	// authentication, every client may read and write.
	Keys *rpc.Keyring
	// PoolIdle is how long a region of the store's pool must go unused
	// before its memory is returned to the OS (checked every second;
	// default rpc.DefaultPoolIdle; negative: never). The endpoints' own
	// pools follow RPC.PoolIdle.
	PoolIdle time.Duration
}

// DefaultFailureTimeout is the peer failure timeout of the server's and
// client's Nexus: longer than eRPC's 500 ms because the benchmark shares a
// small machine between load generator, server and other work, where a
// heartbeat can be delayed by scheduling.
const DefaultFailureTimeout = 5 * time.Second

// ServerStats counts requests served.
type ServerStats struct {
	Requests uint64 // requests answered
	Errors   uint64 // requests answered with StatusError (bad request, limit, allocation failure)
	Denied   uint64 // requests refused for their credential's role (ServerConfig.Keys)
}

// Server is the key-value store served over the RPC transport: one Nexus,
// Endpoints endpoints each running its event loop on its own goroutine,
// dispatch handlers for every (serializer, operation) request type, and one
// Store whose shards follow the endpoints.
type Server struct {
	cfg    ServerConfig
	nx     *rpc.Nexus
	store  *Store
	svc    *kvService // the typed service (service.go)
	eps    []*serverEP
	byID   [256]*serverEP
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
	shared *mem.Space // datapath shm: the store pool's shared space (closed after it)

	storeTrimmed atomic.Int64 // bytes of the store's pool returned to the OS
}

type serverEP struct {
	ep      *rpc.Endpoint
	dp      datapath.Endpoint // ep's datapath (for its detailed counters)
	codecs  [numCodecs]codec
	q       Query
	res     Result
	maxResp int
	reqs    atomic.Uint64
	errs    atomic.Uint64
	denied  atomic.Uint64
	tid     atomic.Int32 // OS thread of the endpoint loop (LockThread), for Usage
	busy    atomic.Int64 // thread CPU ns of loop iterations that served requests (BusyPoll), for Usage
	// BusyPoll accounting (PollStats): busy wall ns, epochs closed, epochs
	// whose thread CPU time could not be measured.
	busyWall           atomic.Int64
	epochs, unmeasured atomic.Uint64
	lastErr            atomic.Pointer[error]
	loopErr            error // why the endpoint loop ended before Close (read after wg.Wait)
}

// ErrXDPPoolTooLarge reports a PoolBytes that does not fit in the AF_XDP
// topology's UMEM.
var ErrXDPPoolTooLarge = errors.New("kv: store pool larger than the AF_XDP UMEM")

// openDatapath opens an endpoint of kind whose buffers come from pool (nil:
// the endpoint creates its own; xdp always uses its UMEM); on shm, shared
// is the shared space it sends from (nil: none).
func openDatapath(kind string, ip netip.Addr, nw *memnet.Network, topo XDPTopology, pool *mem.Pool, shared *mem.Space) (datapath.Endpoint, error) {
	cfg := datapath.Config{Pool: pool}
	if kind == DatapathXDP {
		cfg.Pool = nil
	}
	if kind == DatapathXDP && topo != nil {
		ep, err := topo.OpenEndpoint(datapath.Config{})
		if err != nil {
			return nil, err
		}
		return ep, nil
	}
	switch kind {
	case "", DatapathUDP:
		kind = DatapathUDP
		cfg.Local = netip.AddrPortFrom(ip, 0)
	case DatapathMemnet:
		cfg.Options = memnet.Options{Network: nw}
	case DatapathShm:
		cfg.Local = netip.AddrPortFrom(ip, 0)
		cfg.Options = shmOptions(shared)
	default:
		cfg.Local = netip.AddrPortFrom(ip, 0)
	}
	return datapath.Open(kind, cfg)
}

// NewServer starts a server: it opens the Nexus and the endpoints and runs
// their loops until Close.
func NewServer(cfg ServerConfig) (_ *Server, err error) {
	if cfg.Endpoints <= 0 {
		cfg.Endpoints = 1
	}
	if cfg.Endpoints > 64 {
		return nil, fmt.Errorf("kv: %d endpoints (at most 64)", cfg.Endpoints)
	}
	if cfg.PoolBytes <= 0 {
		cfg.PoolBytes = DefaultPoolBytes
	}
	if !cfg.Addr.IsValid() {
		cfg.Addr = netip.MustParseAddrPort("127.0.0.1:0")
	}
	if len(cfg.Codecs) == 0 {
		cfg.Codecs = AllCodecs()
	}
	var space *mem.Space
	if cfg.Datapath == DatapathXDP {
		topo := cfg.XDP
		if topo == nil {
			if topo, err = autoXDP(); err != nil {
				return nil, fmt.Errorf("kv: datapath xdp: %w", err)
			}
		}
		cfg.XDP = topo
		space = topo.Space()
		// The endpoints' frames and pools share the UMEM: leave them a
		// quarter of it (at least 64 MiB).
		limit := int64(space.Len()) - max(int64(space.Len())/4, 64<<20)
		if cfg.PoolBytes > limit {
			if cfg.PoolBytes != DefaultPoolBytes {
				return nil, fmt.Errorf("%w: %d MiB requested, at most %d MiB fit in the topology's %d MiB", ErrXDPPoolTooLarge, cfg.PoolBytes>>20, limit>>20, space.Len()>>20)
			}
			cfg.PoolBytes = limit
		}
	}
	var shared *mem.Space // shm: the store's values are sent from it
	if cfg.Datapath == DatapathShm {
		if shared, err = shmStoreSpace(cfg.PoolBytes); err != nil {
			return nil, fmt.Errorf("kv: datapath shm: %w", err)
		}
		space = shared
	}
	pool, err := mem.NewPool(mem.PoolConfig{Name: "kv-store", MaxBytes: cfg.PoolBytes, Concurrent: cfg.Endpoints > 1, Space: space})
	if err != nil {
		if shared != nil {
			_ = shared.Close()
		}
		return nil, err
	}
	s := &Server{cfg: cfg, store: NewStore(pool, cfg.Endpoints), shared: shared}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	nc := cfg.Nexus
	nc.ControlAddr = cfg.Addr
	if cfg.Keys != nil {
		nc.Keys = cfg.Keys
	}
	if nc.FailureTimeout <= 0 {
		nc.FailureTimeout = DefaultFailureTimeout
	}
	s.nx, err = rpc.NewNexus(nc)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Codecs {
		if err := c.valid(); err != nil {
			return nil, err
		}
		for op := workload.OpGet; op <= workload.OpDelete; op++ {
			if err := s.nx.Register(ReqType(c, op), rpc.Dispatch, s.handle); err != nil {
				return nil, err
			}
		}
	}
	if err := s.registerService(); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Endpoints; i++ {
		dp, err := openDatapath(cfg.Datapath, cfg.Addr.Addr(), cfg.Memnet, cfg.XDP, nil, shared)
		if err != nil {
			return nil, err
		}
		ec := cfg.RPC
		ec.ID, ec.Datapath, ec.Pool = uint8(FirstEndpointID+i), dp, nil
		ep, err := s.nx.NewEndpoint(ec)
		if err != nil {
			_ = dp.Close()
			return nil, err
		}
		st := &serverEP{ep: ep, dp: dp, maxResp: ep.MaxMsgSize() - 4096}
		for _, c := range cfg.Codecs {
			if st.codecs[c], err = newCodecOn(c, dp, cfg.Threshold); err != nil {
				return nil, err
			}
		}
		s.eps = append(s.eps, st)
		s.byID[ec.ID] = st
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, st := range s.eps {
		s.wg.Add(1)
		go func(st *serverEP) {
			defer s.wg.Done()
			// The label lets a CPU profile of a whole benchmark separate the
			// server's work (go tool pprof -tagfocus kv=server).
			pprof.Do(ctx, pprof.Labels("kv", "server"), func(ctx context.Context) {
				var err error
				if cfg.BusyPoll {
					err = st.poll(ctx)
				} else {
					if cfg.LockThread {
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						st.tid.Store(int32(unix.Gettid()))
					}
					err = st.ep.Run(ctx)
				}
				if err != nil && ctx.Err() == nil {
					// The loop ended on its own (its datapath closed): the
					// endpoint serves nothing more. Keep the reason for
					// LastError and Close.
					err = fmt.Errorf("kv: endpoint %d stopped: %w", st.ep.ID(), err)
					st.loopErr = err
					st.recordErr(err)
				}
			})
		}(st)
	}
	if cfg.PoolIdle == 0 {
		cfg.PoolIdle = rpc.DefaultPoolIdle
	}
	if cfg.PoolIdle > 0 {
		s.wg.Add(1)
		go s.trimStore(ctx, cfg.PoolIdle)
	}
	return s, nil
}

// trimStore returns the memory of the store pool's idle regions to the OS
// every second, on the first endpoint's goroutine (the owner of a
// single-goroutine store pool), until ctx is done.
func (s *Server) trimStore(ctx context.Context, idle time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.eps[0].ep.Post(func() { s.storeTrimmed.Add(s.store.pool.Trim(idle)) })
		}
	}
}

// poll is the endpoint loop of ServerConfig.BusyPoll: RunOnce without
// sleeping, accounting the time of every iteration that served a request
// (from its start to the next one's start) as busy. At saturation that is
// the server's whole time; below it, the iterations that found nothing
// (one empty receive each) are left out, so busy time per request is the
// cost of serving one, as thread CPU time is for a server that sleeps when
// idle. Busy wall time also counts every moment the thread was not running
// (another process on its CPU, the Go scheduler running another goroutine
// on its processor); busyMeter removes those with the thread's CPU clock
// (st.busy is the corrected time, st.busyWall the uncorrected one).
//
// After an empty poll it yields to other goroutines (at most every 20 µs).
// The goroutine is not locked to a thread: the Go scheduler preempts a
// goroutine that runs for 10 ms, and a locked one then waits for a thread
// hand-off (a futex wake-up, tens of µs on the VM) where an unlocked one
// continues on the same thread; a locked goroutine's Gosched is such a
// hand-off every time.
func (st *serverEP) poll(ctx context.Context) error {
	const pollYield = 20 * time.Microsecond // at most this often after empty polls
	// Each iteration's start is the endpoint's own clock reading
	// (rpc.Endpoint.LoopTime): an iteration that served requests adds
	// the time to the next one's start. No clock read of its own.
	var prev, yielded time.Time
	var m busyMeter
	served := false
	for i := 0; ; i++ {
		if i&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		before := st.reqs.Load()
		if err := st.ep.RunOnce(); err != nil {
			return err
		}
		now := st.ep.LoopTime()
		if served {
			m.add(now.Sub(prev))
		}
		m.tick(st, now)
		served = st.reqs.Load() != before
		prev = now
		if !served && now.Sub(yielded) >= pollYield {
			// Nothing served: let other goroutines have the processor,
			// above all the garbage collector's workers (an allocating
			// codec's server collapsed from 30k to 6-9k req/s when the
			// poll loop held its processor until preempted). Not on every
			// empty poll: Gosched takes the scheduler's global lock.
			// The accounting epoch ends here: the goroutine may resume
			// on another thread.
			m.pause(st, now)
			runtime.Gosched()
			m.resume()
			yielded = now
		}
	}
}

// Addr is the address clients connect to (the Nexus control socket).
func (s *Server) Addr() netip.AddrPort { return s.nx.Addr() }

// Endpoints is the number of server endpoints (ids FirstEndpointID...).
func (s *Server) Endpoints() int { return len(s.eps) }

// Store is the server's store (for inspection; it is shared with the
// endpoints, which must be stopped before single-goroutine use).
func (s *Server) Store() *Store { return s.store }

// ErrTimeout is returned by Clear when the endpoint does not run the
// request in time.
var ErrTimeout = errors.New("kv: timed out")

// Clear removes every key. It runs on the first endpoint's goroutine (the
// owner of a single-goroutine store pool) and waits for it.
func (s *Server) Clear() error {
	done := make(chan struct{})
	if err := s.eps[0].ep.Post(func() { s.store.Clear(); close(done) }); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return ErrTimeout
	}
}

// Stats sums the endpoints' counters.
func (s *Server) Stats() ServerStats {
	var st ServerStats
	for _, e := range s.eps {
		st.Requests += e.reqs.Load()
		st.Errors += e.errs.Load()
		st.Denied += e.denied.Load()
	}
	if s.svc != nil {
		st.Requests += s.svc.reqs.Load()
		st.Errors += s.svc.errs.Load()
		st.Denied += s.svc.denied.Load()
	}
	return st
}

// ErrUsageUnavailable is returned by Usage when the endpoints' CPU time
// cannot be read: they do not run on locked threads (ServerConfig.LockThread)
// or the system has no per-thread scheduler statistics.
var ErrUsageUnavailable = errors.New("kv: server CPU usage unavailable")

// Usage returns the CPU time (user and system) the endpoint threads have
// used and the requests they have served since the server started, both
// cumulative: the server's cost per request, independent of how long it
// waited for a core (bench.ServerMeter). It needs ServerConfig.LockThread
// and Linux's /proc/self/task/<tid>/schedstat (nanosecond run time). With
// ServerConfig.BusyPoll it returns the endpoints' busy time corrected to
// thread CPU time instead (PollStats.CPU): a polling thread's CPU time is
// its wall-clock time, idle polls included. The busy-poll figure is
// published every millisecond of loop time (it lags the request count by
// at most that).
func (s *Server) Usage() (cpu time.Duration, requests uint64, err error) {
	if s.cfg.BusyPoll {
		for _, e := range s.eps {
			cpu += time.Duration(e.busy.Load())
			requests += e.reqs.Load()
		}
		return cpu, requests, nil
	}
	for _, e := range s.eps {
		tid := e.tid.Load()
		if tid == 0 {
			return 0, 0, fmt.Errorf("%w: endpoint threads are not locked", ErrUsageUnavailable)
		}
		ns, err := threadRunTime(int(tid))
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %v", ErrUsageUnavailable, err)
		}
		cpu += ns
		requests += e.reqs.Load()
	}
	return cpu, requests, nil
}

// PollStats returns the busy-time accounting of the endpoints
// (ServerConfig.BusyPoll; zero otherwise).
func (s *Server) PollStats() PollStats {
	var p PollStats
	for _, e := range s.eps {
		p.CPU += time.Duration(e.busy.Load())
		p.BusyWall += time.Duration(e.busyWall.Load())
		p.Epochs += e.epochs.Load()
		p.Unmeasured += e.unmeasured.Load()
	}
	return p
}

// Sleeps returns how often the endpoint threads have gone to sleep since
// they started (voluntary context switches, cumulative; each is a system
// call to sleep and a wake-up later). Like Usage it needs
// ServerConfig.LockThread; with ServerConfig.BusyPoll, whose loops never
// sleep and do not own a thread, it fails with ErrUsageUnavailable.
func (s *Server) Sleeps() (uint64, error) {
	if s.cfg.BusyPoll {
		return 0, fmt.Errorf("%w: busy-polling endpoints do not sleep", ErrUsageUnavailable)
	}
	var n uint64
	for _, e := range s.eps {
		tid := e.tid.Load()
		if tid == 0 {
			return 0, fmt.Errorf("%w: endpoint threads are not locked", ErrUsageUnavailable)
		}
		v, err := threadSleeps(int(tid))
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrUsageUnavailable, err)
		}
		n += v
	}
	return n, nil
}

// threadSleeps reads the voluntary context switches of thread tid of this
// process (/proc/self/task/<tid>/status).
func threadSleeps(tid int) (uint64, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	const field = "\nvoluntary_ctxt_switches:"
	_, rest, ok := strings.Cut(string(b), field)
	if !ok {
		return 0, fmt.Errorf("no voluntary_ctxt_switches in thread %d's status", tid)
	}
	line, _, _ := strings.Cut(rest, "\n")
	return strconv.ParseUint(strings.TrimSpace(line), 10, 64)
}

// threadRunTime reads the time thread tid of this process has run on a CPU:
// its CPU clock (cpuclock.Of), exact to the nanosecond, or where that
// fails the first field of /proc/self/task/<tid>/schedstat, which for a
// thread that is running only advances at scheduler ticks.
func threadRunTime(tid int) (time.Duration, error) {
	if d, ok := cpuclock.Of(tid); ok {
		return d, nil
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0, err
	}
	f, _, _ := strings.Cut(string(b), " ")
	ns, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat %q: %w", b, err)
	}
	return time.Duration(ns), nil
}

// LastError is the most recent error a request was answered with (nil if none).
func (s *Server) LastError() error {
	for _, e := range s.eps {
		if p := e.lastErr.Load(); p != nil {
			return *p
		}
	}
	return nil
}

// handle serves one request on its endpoint's goroutine: decode with the
// request type's codec, execute, encode the answer and respond. The store
// hands out references on the values it returns; they are released once
// the response has been handed to the RPC layer (which holds its own
// references until the packets are sent).
func (s *Server) handle(r *rpc.Request) {
	st := s.byID[r.Endpoint().ID()]
	c, op := splitType(r.Type())
	if s.cfg.Keys != nil && writes(op) && r.Role() != RoleReadWrite {
		st.denied.Add(1)
		_ = r.Deny()
		return
	}
	cd := st.codecs[c]
	st.reqs.Add(1)
	st.q.reset(op)
	err := cd.decodeRequest(op, r.Data(), &st.q)
	if err == nil {
		err = s.store.Exec(&st.q, &st.res, st.maxResp)
	} else {
		st.res.set(workload.StatusError)
	}
	msg, eerr := cd.encodeResponse(op, &st.res, r.Endpoint().Pool())
	if eerr != nil {
		cd.done()
		st.res.set(workload.StatusError)
		if err == nil {
			err = eerr
		}
		msg, eerr = cd.encodeResponse(op, &st.res, r.Endpoint().Pool())
	}
	if err != nil {
		st.errs.Add(1)
		st.recordErr(err)
	}
	if eerr != nil {
		// Not even an error answer could be built (no registered memory):
		// the client sees the request rejected.
		_ = r.Respond(rpc.BytesMsg(nil))
	} else {
		_ = r.Respond(msg.msg())
	}
	cd.done()
	st.res.Release()
	clear(st.q.Keys)
	clear(st.q.Vals)
}

// recordErr keeps err as the endpoint's last error (a separate function so
// that only the error path allocates).
func (st *serverEP) recordErr(err error) { st.lastErr.Store(&err) }

// Close stops the endpoints, closes the Nexus, frees every stored value
// and closes the store's pool. It fails if registered memory is still in
// use afterwards (a leak), and reports an endpoint whose loop had stopped
// on its own before Close (its datapath closed underneath it).
func (s *Server) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	var errs []error
	for _, st := range s.eps {
		if st.loopErr != nil {
			errs = append(errs, st.loopErr)
		}
		if err := st.ep.Close(); err != nil {
			errs = append(errs, err)
		}
		for _, cd := range st.codecs {
			if cd != nil {
				cd.done()
			}
		}
		st.res.Release()
	}
	if s.nx != nil {
		if err := s.nx.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.store.Clear()
	if n := s.store.pool.InUse(); n != 0 {
		errs = append(errs, fmt.Errorf("kv: %d store buffers still in use at close", n))
	} else if err := s.store.pool.Close(); err != nil {
		errs = append(errs, err)
	} else if s.shared != nil {
		errs = append(errs, s.shared.Close())
	}
	return errors.Join(errs...)
}
