package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes/internal/report"
	"github.com/cornflakes-go/cornflakes/workload"
)

// ErrPreload is returned when the server rejects a preload request.
var ErrPreload = errors.New("bench: preload failed")

// Preload loads w's data set through conn, keeping up to window requests in
// flight, and fails on the first response that is not OK. Before each
// AppendToList it waits for every request in flight, so a list's
// continuation can never overtake (and be replaced by) its PutList when a
// packet is lost and retransmitted or responses are reordered. A send the
// transport refuses with ErrBusy is retried after reaping responses. While
// the window is full it blocks in the Conn's Wait when it is a Waiter. It
// gives up after timeout without progress (0: 10s).
func Preload(ctx context.Context, w workload.Workload, conn Conn, window int, timeout time.Duration) (int, error) {
	if window < 1 {
		window = 1
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	slots := make([]workload.Request, window)
	busy := make([]bool, window)
	free := make([]int, 0, window)
	for i := window - 1; i >= 0; i-- {
		free = append(free, i)
	}
	var firstErr error
	done, inflight := 0, 0
	lastProgress := time.Now()
	deliver := func(id uint64, resp *workload.Response) {
		if id >= uint64(window) || !busy[id] {
			return
		}
		if resp.Status != workload.StatusOK && firstErr == nil {
			r := &slots[id]
			firstErr = fmt.Errorf("%w: %s %q: status %s", ErrPreload, r.Op, r.Keys[0], resp.Status)
		}
		busy[id] = false
		free = append(free, int(id))
		inflight--
		done++
		lastProgress = time.Now()
	}
	wait := func(until int) error {
		for inflight > until {
			n, err := conn.Poll(deliver)
			if err != nil {
				return err
			}
			if n == 0 {
				if time.Since(lastProgress) > timeout {
					return fmt.Errorf("%w: no response for %v (%d in flight)", ErrPreload, timeout, inflight)
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if wt, ok := conn.(Waiter); ok {
					// Block in the transport until a response may have
					// arrived: a polling client would take the core the
					// server needs on a small machine.
					if err := wt.Wait(time.Millisecond); err != nil {
						return err
					}
				} else {
					runtime.Gosched()
				}
			}
		}
		return firstErr
	}
	err := w.Preload(func(r *workload.Request) error {
		until := window - 1
		if r.Op == workload.OpAppendToList {
			until = 0
		}
		if err := wait(until); err != nil {
			return err
		}
		i := free[len(free)-1]
		free = free[:len(free)-1]
		slots[i].CopyFrom(r)
		busy[i] = true
		for {
			err := conn.Send(uint64(i), &slots[i])
			if err == nil {
				break
			}
			if !errors.Is(err, ErrBusy) {
				busy[i] = false
				free = append(free, i)
				return fmt.Errorf("%w: send: %v", ErrPreload, err)
			}
			// The transport has no free slot: reap responses and retry.
			if _, err := conn.Poll(deliver); err != nil {
				return err
			}
		}
		inflight++
		return nil
	})
	if err == nil {
		err = wait(0)
	}
	return done, err
}

// Setup prepares the server for one run of an experiment (starts it with the
// run's serializer and mode, and preloads w, e.g. with Preload) and returns
// the Target the load generator dials, plus a function that tears the server
// down.
type Setup func(ctx context.Context, run RunSpec, w workload.Workload) (Target, func() error, error)

// ExperimentConfig drives RunExperiment.
type ExperimentConfig struct {
	Datapath string      // reported in every Series
	Load     Config      // template for every point (Workload, Target and Rate are set per point)
	Sweep    SweepConfig // per run; Budget is the whole experiment's and is split evenly across runs
	Setup    Setup       // required
	Log      io.Writer   // one line per finished run (e.g. os.Stderr); nil for none
	// Saturation is the length of the closed-loop point measured after
	// each sweep (Series.MaxRPSSaturated); 0 for Load.Duration, <0 to skip.
	Saturation time.Duration
	// SaturationRounds > 1 measures the saturation point that many times,
	// interleaved across the consecutive runs sharing a workload (one
	// round = one point per run, after the group's sweeps), and reports
	// the median: on a shared machine one point measures who got the CPU.
	SaturationRounds int
	// SaturationClients is the number of client connections of the
	// saturation point (default Load.Clients): each RPC session carries a
	// bounded number of requests, so more connections keep the server's
	// receive batches full instead of measuring one client's round trip.
	// With Load.Spin they are driven by one client goroutine
	// (Config.ConnsPerClient).
	SaturationClients int
	Workload          func(spec string) (workload.Workload, error) // default workload.Parse
	// Stalls, when set, is the machine check (MeasureStalls) the caller ran
	// before the experiment; it is recorded in every Series: on a shared or
	// virtual machine it tells how low a p99 can go at all.
	Stalls *StallReport
	// Syscall, when set, is the machine check's system-call cost
	// (MeasureSyscall), recorded in every Series.
	Syscall *SyscallCost
	// BusyPoll is recorded in every Series (Series.BusyPoll): the server
	// and the load generator polled without sleeping.
	BusyPoll bool
	// Anchor, when > 0, measures each run's first saturation point before
	// its sweep rather than after, and starts the adaptive sweep at Anchor
	// times the saturated rate, growing by DefaultAnchorFactor. A sweep
	// from a fixed start doubles its way up, so within a few points its
	// answer is only good to a factor of two; from near the server's
	// capacity the same points bisect to a few percent. Ignored with
	// Sweep.Loads or a negative Saturation.
	Anchor float64
}

// Sweep anchoring defaults (ExperimentConfig.Anchor): the max load at a
// p99 SLO of hundreds of µs lies at 50-100 % of the closed-loop saturated
// rate for a server whose requests take a few µs, so a sweep from half of
// it in steps of 1.25x brackets it within three or four points.
const (
	DefaultAnchor       = 0.5
	DefaultAnchorFactor = 1.25
)

// RunExperiment sweeps every run of e and returns one Series per run (in
// order). A run whose setup or sweep fails stops the experiment with the
// series measured so far.
func RunExperiment(ctx context.Context, e Experiment, cfg ExperimentConfig) ([]Series, error) {
	if cfg.Setup == nil {
		return nil, fmt.Errorf("%w: ExperimentConfig.Setup is required", ErrConfig)
	}
	parse := cfg.Workload
	if parse == nil {
		parse = workload.Parse
	}
	cache := map[string]workload.Workload{}
	t0 := time.Now()
	load, _ := LoadAvg()
	if cfg.Log != nil && load > float64(runtime.NumCPU()) {
		fmt.Fprintf(cfg.Log, "bench: warning: load average %.2f on %d CPUs: other work shares the cores, latencies will be inflated and max loads at the SLO low\n", load, runtime.NumCPU())
	}
	var stalls StallReport
	if cfg.Stalls != nil {
		stalls = *cfg.Stalls
	}
	var out []Series
	var sats [][]Result // saturation points of each series
	groupStart := 0     // first run of the current workload group
	for i, run := range e.Runs {
		w, ok := cache[run.Workload]
		if !ok {
			var err error
			if w, err = parse(run.Workload); err != nil {
				return out, err
			}
			cache[run.Workload] = w
		}
		sc := cfg.Sweep
		if cfg.Sweep.Budget > 0 {
			left := cfg.Sweep.Budget - time.Since(t0)
			sc.Budget = left / time.Duration(len(e.Runs)-i)
			if sc.Budget <= 0 {
				// Out of time: the run still gets its first point (and is
				// reported as cut short), so no serializer disappears
				// from the comparison.
				sc.Budget = time.Nanosecond
			}
		}
		info := run.Info(e.Name, cfg.Datapath)
		if sc.Label == "" {
			sc.Label = fmt.Sprintf("[%d/%d] %s %s", i+1, len(e.Runs), run.Label, Series{Serializer: run.Serializer, Mode: run.Mode, SerializeAndSend: info.SerializeAndSend}.Name())
		}
		target, teardown, err := cfg.Setup(ctx, run, w)
		if err != nil {
			return out, fmt.Errorf("bench: setup %s %s: %w", run.Label, run.Serializer, err)
		}
		seed := cfg.Load.Seed
		anchored := cfg.Anchor > 0 && len(sc.Loads) == 0 && cfg.Saturation >= 0
		var sat Result
		var sr SweepResult
		if anchored {
			// A seed apart from the sweep's (seed+1, seed+2, ...).
			sat, err = saturate(ctx, cfg, w, target, seed+1_000_000)
			if err == nil {
				anchor(&sc, sat, cfg.Anchor)
			}
		}
		if err == nil {
			sr, err = Sweep(ctx, sc, func(ctx context.Context, offered float64) (Result, error) {
				lc := cfg.Load
				lc.Workload, lc.Target, lc.Rate = w, target, offered
				seed++
				lc.Seed = seed
				return Run(ctx, lc)
			})
		}
		if err == nil && !anchored {
			sat, err = saturate(ctx, cfg, w, target, seed+1)
		}
		if terr := teardown(); err == nil && terr != nil {
			err = fmt.Errorf("bench: teardown: %w", terr)
		}
		s := NewSeries(info, sr)
		s.MaxRPSSaturated, s.SaturatedP99us, s.SaturatedServerCPUus = sat.AchievedRPS, us(sat.P99), us(sat.ServerCPU)
		s.SaturatedServerTransport, s.SaturatedClientTransport = sat.ServerTransport, sat.ClientTransport
		s.SaturatedServerSleeps = sat.ServerSleeps
		s.LoadAvg, s.CPUs, s.BusyPoll = load, runtime.NumCPU(), cfg.BusyPoll
		if stalls.Threads > 0 {
			s.StallLostFraction = stalls.LostFraction()
			s.StallMaxus = float64(stalls.Max) / 1e3
			s.StallP99Floorus = float64(stalls.P99Floor) / 1e3
		}
		if cfg.Syscall != nil {
			s.SyscallNs = float64(cfg.Syscall.Median)
		}
		out = append(out, s)
		sats = append(sats, []Result{sat})
		if err == nil && cfg.SaturationRounds > 1 && cfg.Saturation >= 0 && (i+1 == len(e.Runs) || e.Runs[i+1].Workload != run.Workload) {
			err = moreRounds(ctx, cfg, e.Runs[groupStart:i+1], w, sats[groupStart:])
			for j := groupStart; j <= i; j++ {
				out[j].MaxRPSSaturated, out[j].SaturatedP99us, out[j].SaturatedServerCPUus = medianSaturation(sats[j])
				m := medianPoint(sats[j])
				out[j].SaturatedServerTransport, out[j].SaturatedClientTransport = m.ServerTransport, m.ClientTransport
				out[j].SaturatedServerSleeps = m.ServerSleeps
			}
		}
		if i+1 < len(e.Runs) && e.Runs[i+1].Workload != run.Workload {
			groupStart = i + 1
		}
		if cfg.Log != nil {
			reruns := ""
			if s.Reruns > 0 {
				reruns = fmt.Sprintf(", %d of them re-runs after a tail-only failure", s.Reruns)
			}
			cpu := ""
			if s.SaturatedServerCPUus > 0 {
				cpu = fmt.Sprintf(", server %.3f µs CPU and %.3f sleeps per request", s.SaturatedServerCPUus, s.SaturatedServerSleeps)
			}
			fmt.Fprintf(cfg.Log, "%s %s: max %s rps at p99 <= %.0f µs (%d points%s); %s rps saturated (closed loop, p99 %.0f µs%s)\n",
				run.Label, s.Name(), formatRate(s.MaxRPSAtSLO), s.SLOP99us, len(s.Points), reruns, formatRate(s.MaxRPSSaturated), s.SaturatedP99us, cpu)
			if t := sat.ServerTransport; t != nil {
				fmt.Fprintf(cfg.Log, "%s %s: saturated transport: server: %v\n", run.Label, s.Name(), *t)
			}
			if t := sat.ClientTransport; t != nil {
				fmt.Fprintf(cfg.Log, "%s %s: saturated transport: client: %v\n", run.Label, s.Name(), *t)
			}
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// anchor points sc's adaptive sweep at fraction x the saturated rate of
// sat, growing by DefaultAnchorFactor. A saturation point that completed
// nothing leaves sc as it was.
func anchor(sc *SweepConfig, sat Result, fraction float64) {
	start := fraction * sat.AchievedRPS
	if !(start >= 1) || math.IsInf(start, 0) {
		return
	}
	sc.Start, sc.Factor = start, DefaultAnchorFactor
	sc.MinRPS = start / DefaultMinRPSDivisor
	if sc.MaxRPS > 0 && sc.MaxRPS < start {
		sc.MaxRPS = start
	}
}

// saturate measures one closed-loop saturation point (zero Result when
// cfg.Saturation < 0).
func saturate(ctx context.Context, cfg ExperimentConfig, w workload.Workload, target Target, seed uint64) (Result, error) {
	if cfg.Saturation < 0 || ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	lc := cfg.Load
	lc.Workload, lc.Target, lc.Rate = w, target, 0
	lc.Outstanding = SaturationOutstanding
	if cfg.SaturationClients > 0 {
		lc.Clients = cfg.SaturationClients
		if lc.Spin {
			// Spinning clients each keep a processor: one goroutine
			// drives every connection, so that the busy-polling server
			// does not take turns with several of them for the cores.
			lc.Clients, lc.ConnsPerClient = 1, cfg.SaturationClients
		}
	}
	if cfg.Saturation > 0 {
		lc.Duration = cfg.Saturation
	}
	lc.Seed = seed
	r, err := Run(ctx, lc)
	if err == nil && r.Mismatches > 0 {
		err = fmt.Errorf("bench: %d responses differ from the model at saturation (first: %s): %w", r.Mismatches, r.FirstMismatch, ErrMismatch)
	}
	return r, err
}

// moreRounds measures rounds 2..SaturationRounds of the saturation points
// of runs (one workload group), interleaved, appending to sats.
func moreRounds(ctx context.Context, cfg ExperimentConfig, runs []RunSpec, w workload.Workload, sats [][]Result) error {
	for round := 1; round < cfg.SaturationRounds; round++ {
		for j, run := range runs {
			target, teardown, err := cfg.Setup(ctx, run, w)
			if err != nil {
				return fmt.Errorf("bench: setup %s %s: %w", run.Label, run.Serializer, err)
			}
			r, err := saturate(ctx, cfg, w, target, cfg.Load.Seed+uint64(1000*round+j))
			if terr := teardown(); err == nil && terr != nil {
				err = fmt.Errorf("bench: teardown: %w", terr)
			}
			if err != nil {
				return err
			}
			sats[j] = append(sats[j], r)
		}
	}
	return nil
}

// medianSaturation returns the median throughput of the saturation points
// with the p99 of that point, and the median server CPU per request (µs,
// over the points that measured it).
func medianSaturation(rs []Result) (rps, p99us, cpuUs float64) {
	if len(rs) == 0 {
		return 0, 0, 0
	}
	m := medianPoint(rs)
	var cpus []time.Duration
	for _, r := range rs {
		if r.ServerCPU > 0 {
			cpus = append(cpus, r.ServerCPU)
		}
	}
	if len(cpus) > 0 {
		slices.Sort(cpus)
		cpuUs = us(cpus[len(cpus)/2])
	}
	return m.AchievedRPS, us(m.P99), cpuUs
}

// medianPoint returns the point of median throughput of rs (zero for none).
func medianPoint(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b Result) int { return cmp.Compare(a.AchievedRPS, b.AchievedRPS) })
	return sorted[len(sorted)/2]
}

// SaturationOutstanding is the closed-loop window per client of the
// saturation point RunExperiment measures after each sweep.
const SaturationOutstanding = 32

// LoadAvg returns the 1-minute load average from /proc/loadavg (an error
// where it does not exist).
func LoadAvg() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("bench: empty /proc/loadavg")
	}
	return strconv.ParseFloat(f[0], 64)
}

// PresetDefaults returns the load and sweep templates `cornflakes bench`
// uses: GOMAXPROCS/2 client goroutines (1 to 4; the other half of the
// processors is left to the server's endpoints), response checking on,
// 2 s points (0.5 s with quick) lengthened to DefaultMinSamples measured
// requests at low rates, and a budget that keeps a whole experiment
// under about 150 s (90 s with quick) on top of server setup
// (RunExperiment splits the budget across the runs).
func PresetDefaults(quick bool) (Config, SweepConfig) {
	clients := min(max(runtime.GOMAXPROCS(0)/2, 1), 4)
	load := Config{Clients: clients, Duration: 2 * time.Second, MinSamples: DefaultMinSamples, Check: true, Seed: 1}
	sweep := SweepConfig{SLO: DefaultSLO, Start: DefaultStartRPS, Factor: DefaultFactor, Refine: 2, Budget: 150 * time.Second}
	if quick {
		load.Duration = 500 * time.Millisecond
		sweep.Refine, sweep.Budget = 1, 90*time.Second
	}
	return load, sweep
}

// MainJob* size the README's main job (`cornflakes bench` with no
// arguments): together with a cold build of the binary it must finish in
// three minutes on a two-core machine, so its points are 1 s, its sweeps
// share 32 s and its saturation points take 0.5 s (plus the machine check
// and the preload). With a 55 s budget a fresh clone took 2 min 54 s
// (114 s to build, 60 s to run; 2026-11-26); with 40 s and 1 s saturation
// points, a clone built with empty build and module caches took 3 min 2 s
// (about 20 s to fetch modules and start, 109 s to build, 53 s to run).
const (
	MainJobPointDuration = time.Second
	MainJobBudget        = 32 * time.Second
	MainJobSaturation    = 500 * time.Millisecond
)

// MainJobDefaults returns PresetDefaults(false) sized for the main job.
func MainJobDefaults() (Config, SweepConfig) {
	load, sweep := PresetDefaults(false)
	load.Duration, sweep.Budget = MainJobPointDuration, MainJobBudget
	return load, sweep
}

// WriteFiles writes <prefix>results.json, <prefix>results.csv and one PNG
// plot per group into dir, and returns the paths written.
func WriteFiles(dir, prefix string, series []Series) ([]string, error) {
	d, err := report.Create(dir, "bench")
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, []Series) error
	}{{"results.json", WriteJSON}, {"results.csv", WriteCSV}} {
		if err := d.Stream(prefix+f.name, func(w io.Writer) error { return f.write(w, series) }); err != nil {
			return d.Paths(), err
		}
	}
	plots, err := WritePlots(dir, prefix, series)
	return append(d.Paths(), plots...), err
}
