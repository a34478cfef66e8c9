package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// preloadedStore returns a MemStore holding w's data set, as a server
// holds it after Preload.
func preloadedStore(w workload.Workload) *workload.MemStore {
	store := workload.NewMemStore()
	var resp workload.Response
	_ = w.Preload(func(r *workload.Request) error { store.Apply(r, &resp); return nil })
	return store
}

// The presets `cornflakes bench --experiment` accepts.
func ExampleExperimentNames() {
	fmt.Println(bench.ExperimentNames())
	// Output: [default table1 table2 fig7 table3 table4 table5 fig12]
}

// Every preset and how many sweeps (one per serializer, mode or workload)
// it runs.
func ExampleExperiments() {
	for _, e := range bench.Experiments() {
		fmt.Printf("%-8s %2d runs\n", e.Name, len(e.Runs))
	}
	// Output:
	// default   4 runs
	// table1   16 runs
	// table2    4 runs
	// fig7      4 runs
	// table3   12 runs
	// table4   12 runs
	// table5    6 runs
	// fig12     3 runs
}

// An Experiment is a list of RunSpecs; RunSpec.Info names each in the
// reports, and the series name tells table5's runs apart.
func ExampleExperiment() {
	e, err := bench.LookupExperiment("table5")
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Title)
	for _, r := range e.Runs[:2] {
		s := bench.NewSeries(r.Info(e.Name, "udp"), bench.SweepResult{})
		fmt.Printf("%s | %s | %s\n", r.Label, r.Workload, s.Name())
	}
	// Output:
	// Cornflakes with and without combined serialize-and-send
	// google 1-4 vals | google:keys=100000,values=1-3 | cornflakes/hybrid
	// google 1-4 vals | google:keys=100000,values=1-3 | cornflakes/hybrid (no serialize-and-send)
}

// Filter keeps the runs of some serializers (`cornflakes bench
// --serializers cornflakes,protobuf`).
func ExampleExperiment_Filter() {
	e, _ := bench.LookupExperiment("fig7")
	for _, r := range e.Filter(bench.SerCornflakes, bench.SerProtobuf).Runs {
		fmt.Println(r.Serializer, r.Mode, r.Workload)
	}
	// Output:
	// cornflakes hybrid twitter:keys=100000
	// protobuf  twitter:keys=100000
}

// An unknown name is an error that lists the presets.
func ExampleLookupExperiment() {
	_, err := bench.LookupExperiment("fig99")
	fmt.Println(errors.Is(err, bench.ErrUnknownExperiment))
	fmt.Println(err)
	// Output:
	// true
	// bench: unknown experiment "fig99" (have default, table1, table2, fig7, table3, table4, table5, fig12)
}

// WorkloadOnly compares every serializer on one workload spec
// (`cornflakes bench --workload`).
func ExampleWorkloadOnly() {
	e := bench.WorkloadOnly("ycsb:records=1000,shape=2x2048")
	fmt.Println(e.Name, "|", e.Title)
	for _, r := range e.Runs {
		fmt.Println(r.Label, r.Workload, r.Serializer)
	}
	// Output:
	// workload | Every serializer on ycsb:records=1000,shape=2x2048
	// ycsb ycsb:records=1000,shape=2x2048 cornflakes
	// ycsb ycsb:records=1000,shape=2x2048 protobuf
	// ycsb ycsb:records=1000,shape=2x2048 flatbuffers
	// ycsb ycsb:records=1000,shape=2x2048 capnp
}

// The paper labels Google runs "1-N values" with N excluded.
func ExampleGoogleSpec() {
	for _, n := range []int{1, 4, 8, 16} {
		fmt.Println(n, bench.GoogleSpec(n))
	}
	// Output:
	// 1 google:keys=100000,values=1-1
	// 4 google:keys=100000,values=1-3
	// 8 google:keys=100000,values=1-7
	// 16 google:keys=100000,values=1-15
}

// RunSpec.Info is the metadata a run's Series carries; only Cornflakes
// runs record the serialize-and-send switch.
func ExampleRunSpec_Info() {
	for _, r := range []bench.RunSpec{
		{Label: "twitter", Workload: bench.WorkloadTwitter, Serializer: bench.SerCornflakes, Mode: bench.ModeCopy, SerializeAndSend: true},
		{Label: "twitter", Workload: bench.WorkloadTwitter, Serializer: bench.SerCapnp},
	} {
		info := r.Info("fig12", "udp")
		fmt.Println(info.Experiment, info.Datapath, info.Serializer, info.Mode, info.SerializeAndSend != nil)
	}
	// Output:
	// fig12 udp cornflakes copy true
	// fig12 udp capnp  false
}

// Groups splits series into the tables and plots of a report: one group
// per experiment and label (or workload).
func ExampleGroups() {
	series := append(exampleSeries(),
		bench.Series{Experiment: "table4", Label: "1 val", Serializer: "cornflakes", Mode: "hybrid"},
		bench.Series{Experiment: "table4", Label: "1-4 vals", Serializer: "cornflakes", Mode: "hybrid"},
		bench.Series{Experiment: "table4", Label: "1 val", Serializer: "cornflakes", Mode: "copy"},
	)
	names, members := bench.Groups(series)
	for i, g := range names {
		fmt.Printf("%s:", g)
		for _, s := range members[i] {
			fmt.Printf(" %s", s.Name())
		}
		fmt.Println()
	}
	// Output:
	// demo twitter: cornflakes/hybrid protobuf
	// table4 1 val: cornflakes/hybrid cornflakes/copy
	// table4 1-4 vals: cornflakes/hybrid
}

// MeetsNone tells a run in which no load point met the SLO (e.g. on an
// overloaded machine), where only the saturated rates rank the serializers.
func ExampleMeetsNone() {
	missed := []bench.Series{
		{Serializer: "cornflakes", Mode: "hybrid", MaxRPSSaturated: 60000},
		{Serializer: "protobuf", MaxRPSSaturated: 50000},
	}
	fmt.Println(bench.MeetsNone(missed), bench.MeetsNone(exampleSeries()), bench.MeetsNone(nil))
	// Output: true false false
}

// Passes is the SLO test of every sweep point: p99 within the SLO,
// achieved at least minAchieved of offered, and nothing failed.
func ExamplePasses() {
	const slo = 500 * time.Microsecond
	ok := bench.Result{OfferedRPS: 10000, AchievedRPS: 9900, Received: 19800, P50: 40 * time.Microsecond, P99: 200 * time.Microsecond}
	slow, behind, failed, closed := ok, ok, ok, ok
	slow.P99 = 800 * time.Microsecond
	behind.AchievedRPS = 9000 // below 95% of offered: the server is falling behind
	failed.Lost = 1
	closed.OfferedRPS = 0 // closed loop: no offered rate to keep up with
	for _, x := range []struct {
		name string
		r    bench.Result
	}{{"ok", ok}, {"slow", slow}, {"behind", behind}, {"failed", failed}, {"closed", closed}} {
		fmt.Println(x.name, bench.Passes(x.r, slo, bench.DefaultMinAchieved))
	}
	// Output:
	// ok true
	// slow false
	// behind false
	// failed false
	// closed true
}

// A Result prints as one line.
func ExampleResult_String() {
	fmt.Println(bench.Result{Mode: "open", OfferedRPS: 20000, AchievedRPS: 19900,
		P50: 40 * time.Microsecond, P99: 120 * time.Microsecond, P999: 300 * time.Microsecond})
	fmt.Println(bench.Result{Mode: "open", OfferedRPS: 20000, AchievedRPS: 19900, Unit: workload.UnitObjects, AchievedUnitsPS: 9950,
		P50: 40 * time.Microsecond, P99: 1500 * time.Microsecond, P999: 2 * time.Millisecond, Lost: 3})
	// Output:
	// open loop: offered 20.0k achieved 19.9k rps, p50 40µs p99 120µs p99.9 300µs
	// open loop: offered 20.0k achieved 19.9k rps (9.9k objects/s), p50 40µs p99 1.5ms p99.9 2ms, 0 errors 3 lost 0 mismatches
}

// A closed-loop Config keeps Outstanding requests in flight per client
// instead of offering a rate: the throughput it reaches is the server's
// saturated rate. Each of the two clients dials its own Conn.
func ExampleConfig() {
	w, err := workload.Parse("ycsb:records=500,shape=1x512")
	if err != nil {
		panic(err)
	}
	store := preloadedStore(w)
	r, err := bench.Run(context.Background(), bench.Config{
		Workload:    w,
		Target:      bench.TargetFunc(func(int) (bench.Conn, error) { return &storeConn{store: store}, nil }),
		Clients:     2,
		Outstanding: 8,
		Duration:    30 * time.Millisecond,
		Check:       true,
		Seed:        1,
	})
	fmt.Println(err, r.Mode, r.Clients, r.OfferedRPS, r.Received > 0, r.Errors, r.Mismatches)
	// Output: <nil> closed 2 0 true 0 0
}

// storeTarget dials Conns to one shared in-process store and counts the
// dials.
type storeTarget struct {
	store *workload.MemStore
	dials atomic.Int32
}

func (t *storeTarget) Dial(int) (bench.Conn, error) {
	t.dials.Add(1)
	return &storeConn{store: t.store}, nil
}

// A Target gives each client goroutine of Run its own Conn.
func ExampleTarget() {
	w, _ := workload.Parse("google:keys=200")
	target := &storeTarget{store: preloadedStore(w)}
	r, err := bench.Run(context.Background(), bench.Config{
		Workload: w, Target: target, Clients: 3, Rate: 3000, Duration: 50 * time.Millisecond, Check: true,
	})
	fmt.Println(err, target.dials.Load(), "dials,", r.Mismatches, "mismatches")
	// Output: <nil> 3 dials, 0 mismatches
}

// TargetFunc turns a dial function into a Target. A failed dial yields a
// nil Conn even when the function returned a typed nil pointer.
func ExampleTargetFunc() {
	dial := bench.TargetFunc(func(client int) (bench.Conn, error) {
		if client > 0 {
			var c *storeConn // the usual "return c, err" of a failed constructor
			return c, errors.New("one client only")
		}
		return &storeConn{store: workload.NewMemStore()}, nil
	})
	c0, err0 := dial.Dial(0)
	c1, err1 := dial.Dial(1)
	fmt.Println(c0 != nil, err0)
	fmt.Println(c1 == nil, err1)
	_ = c0.Close()
	// Output:
	// true <nil>
	// true one client only
}

// slotConn keeps its per-request state in a fixed array indexed by SlotOf,
// as an RPC client keeps one preallocated continuation per slot.
type slotConn struct {
	store   *workload.MemStore
	pending [4]*workload.Request // Config.Outstanding slots
	ids     [4]uint64
	maxSlot *int
	resp    workload.Response
}

func (c *slotConn) Send(id uint64, req *workload.Request) error {
	i := bench.SlotOf(id)
	*c.maxSlot = max(*c.maxSlot, i)
	c.pending[i], c.ids[i] = req, id
	return nil
}

func (c *slotConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	n := 0
	for i, req := range c.pending {
		if req != nil {
			c.pending[i] = nil
			c.store.Apply(req, &c.resp)
			deliver(c.ids[i], &c.resp)
			n++
		}
	}
	return n, nil
}

func (c *slotConn) Close() error { return nil }

// SlotOf maps a request id to a dense slot index below the in-flight cap,
// so a Conn needs no map from ids to requests.
func ExampleSlotOf() {
	w, _ := workload.Parse("google:keys=100")
	maxSlot := 0
	target := bench.TargetFunc(func(int) (bench.Conn, error) {
		return &slotConn{store: preloadedStore(w), maxSlot: &maxSlot}, nil
	})
	r, err := bench.Run(context.Background(), bench.Config{
		Workload: w, Target: target, Outstanding: 4, Duration: 20 * time.Millisecond, Check: true,
	})
	fmt.Println(err, r.Received > 0, r.Mismatches, maxSlot < 4)
	// Output: <nil> true 0 true
}

// meteredTarget is a Target whose server reports its CPU time; this fake
// charges a fixed 3 µs per request it serves.
type meteredTarget struct {
	store  *workload.MemStore
	served atomic.Uint64
}

type countingConn struct {
	storeConn
	served *atomic.Uint64
}

func (c *countingConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	n, err := c.storeConn.Poll(deliver)
	c.served.Add(uint64(n))
	return n, err
}

func (t *meteredTarget) Dial(int) (bench.Conn, error) {
	return &countingConn{storeConn: storeConn{store: t.store}, served: &t.served}, nil
}

func (t *meteredTarget) ServerUsage() (time.Duration, uint64, error) {
	n := t.served.Load()
	return time.Duration(n) * 3 * time.Microsecond, n, nil
}

// A Target that implements ServerMeter gets the server's CPU time per
// request in Result.ServerCPU (and in the reports' server CPU column).
func ExampleServerMeter() {
	w, _ := workload.Parse("google:keys=100")
	target := &meteredTarget{store: preloadedStore(w)}
	r, err := bench.Run(context.Background(), bench.Config{Workload: w, Target: target, Outstanding: 4, Duration: 20 * time.Millisecond})
	fmt.Println(err, r.ServerCPU)
	// Output: <nil> 3µs
}

// capacityPoint stands in for bench.Run against a server that keeps up
// with up to capacity requests/s at a 100 µs p99 and falls behind above.
func capacityPoint(capacity float64) bench.PointFunc {
	return func(_ context.Context, offered float64) (bench.Result, error) {
		r := bench.Result{OfferedRPS: offered, AchievedRPS: min(offered, capacity), Received: 1000, P50: 30 * time.Microsecond, P99: 100 * time.Microsecond}
		if offered > capacity {
			r.P50, r.P99 = 2*time.Millisecond, 10*time.Millisecond
		}
		return r, nil
	}
}

// The adaptive sweep doubles the load from Start until a point fails, then
// bisects (geometrically) Refine times between the last pass and the
// first failure.
func ExampleSweepConfig() {
	cfg := bench.SweepConfig{SLO: 500 * time.Microsecond, Start: 10000, Factor: 2, Refine: 3}
	sr, err := bench.Sweep(context.Background(), cfg, capacityPoint(50000))
	for _, p := range sr.Points {
		fmt.Printf("%.0f rps: pass %v\n", p.OfferedRPS, bench.Passes(p, sr.SLO, sr.MinAchieved))
	}
	fmt.Printf("%v, max %.0f rps at the SLO\n", err, sr.MaxRPSAtSLO)
	// Output:
	// 10000 rps: pass true
	// 20000 rps: pass true
	// 40000 rps: pass true
	// 80000 rps: pass false
	// 56569 rps: pass false
	// 47568 rps: pass true
	// 51874 rps: pass false
	// <nil>, max 47568 rps at the SLO
}

// With Loads the sweep runs exactly the given points, in order.
func ExampleSweepConfig_loads() {
	cfg := bench.SweepConfig{Loads: []float64{30000, 45000, 60000}}
	sr, _ := bench.Sweep(context.Background(), cfg, capacityPoint(50000))
	fmt.Println(len(sr.Points), sr.Best, sr.MaxRPSAtSLO, sr.SLO)
	// Output: 3 1 45000 500µs
}

// A SweepResult keeps every attempt: here the machine stalled during the
// first 20k rps point (its p99 alone missed the SLO), the sweep re-ran it
// (SweepConfig.Retries) and the re-run passed.
func ExampleSweepResult() {
	stalled := false
	point := func(ctx context.Context, offered float64) (bench.Result, error) {
		r, err := capacityPoint(50000)(ctx, offered)
		if offered == 20000 && !stalled {
			stalled = true
			r.P99 = 4 * time.Millisecond // a tail-only failure: the median stays low
		}
		return r, err
	}
	sr, _ := bench.Sweep(context.Background(), bench.SweepConfig{Loads: []float64{10000, 20000, 40000, 80000}}, point)
	for _, p := range sr.Points {
		fmt.Println(p.OfferedRPS, p.P99)
	}
	fmt.Println("best:", sr.Points[sr.Best].OfferedRPS, "reruns:", sr.Reruns, "truncated:", sr.Truncated)
	// Output:
	// 10000 100µs
	// 20000 4ms
	// 20000 100µs
	// 40000 100µs
	// 80000 10ms
	// best: 40000 reruns: 1 truncated: false
}

// A Series' name is its row in the tables and its line in the plots.
func ExampleSeries_Name() {
	off := false
	for _, s := range []bench.Series{
		{Serializer: bench.SerCornflakes, Mode: bench.ModeZeroCopy},
		{Serializer: bench.SerCornflakes, Mode: bench.ModeHybrid, SerializeAndSend: &off},
		{Serializer: bench.SerFlatBuffers},
	} {
		fmt.Println(s.Name())
	}
	// Output:
	// cornflakes/zerocopy
	// cornflakes/hybrid (no serialize-and-send)
	// flatbuffers
}

// NewSeries turns a sweep into a Series, the unit of every report.
func ExampleSeries() {
	sr, _ := bench.Sweep(context.Background(), bench.SweepConfig{Loads: []float64{20000, 80000}}, capacityPoint(50000))
	run := bench.RunSpec{Label: "twitter", Workload: bench.WorkloadTwitter, Serializer: bench.SerProtobuf}
	s := bench.NewSeries(run.Info("fig7", "udp"), sr)
	fmt.Println(s.Experiment, s.Name(), s.Datapath, s.SLOP99us, s.MaxRPSAtSLO, s.MaxAchievedRPS)
	for _, p := range s.Points {
		fmt.Printf("offered %.0f achieved %.0f p99 %.0f µs meets SLO %v\n", p.OfferedRPS, p.AchievedRPS, p.P99us, p.MeetsSLO)
	}
	// Output:
	// fig7 protobuf udp 500 20000 50000
	// offered 20000 achieved 20000 p99 100 µs meets SLO true
	// offered 80000 achieved 50000 p99 10000 µs meets SLO false
}

// A StallReport as the machine check prints it (MeasureStalls measures
// one; these numbers are made up).
func ExampleStallReport() {
	r := bench.StallReport{Threads: 2, Window: 100 * time.Millisecond, Stalls: 3, Lost: 2 * time.Millisecond,
		Max: 1500 * time.Microsecond, P99Floor: 900 * time.Microsecond}
	fmt.Printf("%.3f\n", r.LostFraction())
	fmt.Println(r)
	// Output:
	// 0.010
	// 2 spinning threads lost 1.00% of 100ms to 3 stalls of >= 10µs (max 1.5ms): stalls alone put the p99 at >= 900µs
}

// RunExperiment sweeps every run of an experiment. Setup starts a server
// for each run (here an in-process store, preloaded with bench.Preload);
// Load and Sweep are the templates of every point.
func ExampleExperimentConfig() {
	e := bench.WorkloadOnly("google:keys=200").Filter(bench.SerCornflakes, bench.SerProtobuf)
	cfg := bench.ExperimentConfig{
		Datapath: "in-process",
		Load:     bench.Config{Duration: 30 * time.Millisecond, Check: true, Seed: 1},
		Sweep:    bench.SweepConfig{Loads: []float64{2000, 4000}, Retries: -1}, // no re-runs: exactly these points
		Setup: func(ctx context.Context, run bench.RunSpec, w workload.Workload) (bench.Target, func() error, error) {
			store := workload.NewMemStore()
			if _, err := bench.Preload(ctx, w, &storeConn{store: store}, 16, 0); err != nil {
				return nil, nil, err
			}
			target := bench.TargetFunc(func(int) (bench.Conn, error) { return &storeConn{store: store}, nil })
			return target, func() error { return nil }, nil
		},
		Saturation: 20 * time.Millisecond, // one closed-loop point per run
	}
	series, err := bench.RunExperiment(context.Background(), e, cfg)
	fmt.Println(err)
	for _, s := range series {
		fmt.Println(s.Experiment, s.Workload, s.Name(), s.Datapath, len(s.Points), "points,", s.MaxRPSSaturated > 0)
	}
	// Output:
	// <nil>
	// workload google:keys=200 cornflakes/hybrid in-process 2 points, true
	// workload google:keys=200 protobuf in-process 2 points, true
}

// PresetDefaults are the templates `cornflakes bench` starts from; the
// number of clients depends on the processors.
func ExamplePresetDefaults() {
	for _, quick := range []bool{false, true} {
		load, sweep := bench.PresetDefaults(quick)
		fmt.Println(load.Duration, load.MinSamples, load.Check, sweep.SLO, sweep.Start, sweep.Refine, sweep.Budget,
			load.Clients >= 1 && load.Clients <= 4)
	}
	// Output:
	// 2s 1000 true 500µs 5000 2 2m30s true
	// 500ms 1000 true 500µs 5000 1 1m30s true
}

// MainJobDefaults size the README's main job (`cornflakes bench` with no
// arguments) to finish within three minutes on two cores.
func ExampleMainJobDefaults() {
	load, sweep := bench.MainJobDefaults()
	fmt.Println(load.Duration, sweep.Budget, sweep.SLO, load.Check)
	// Output: 1s 32s 500µs true
}

// LoadAvg tells whether other work shares the machine: RunExperiment
// warns when it exceeds runtime.NumCPU(), and every Series records it.
// The value depends on the machine, so only its sign is printed here.
func ExampleLoadAvg() {
	load, err := bench.LoadAvg()
	if err != nil { // no /proc/loadavg (not Linux): unknown
		load = 0
	}
	fmt.Println(load >= 0)
	// Output: true
}

// WritePlot renders one throughput-latency plot as PNG.
func ExampleWritePlot() {
	var buf bytes.Buffer
	if err := bench.WritePlot(&buf, "demo twitter", exampleSeries()); err != nil {
		panic(err)
	}
	cfg, err := png.DecodeConfig(&buf)
	fmt.Println(err, cfg.Width, cfg.Height)
	// Output: <nil> 672 432
}

// WritePlots writes one PNG per group of series into a directory.
func ExampleWritePlots() {
	dir, err := os.MkdirTemp("", "bench-plots")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	series := append(exampleSeries(), bench.Series{Experiment: "table4", Label: "1-4 vals", Serializer: "cornflakes", Mode: "copy", SLOP99us: 500,
		Points: []bench.Point{{OfferedRPS: 10000, AchievedRPS: 10000, P99us: 90, MeetsSLO: true}}})
	paths, err := bench.WritePlots(dir, "run1-", series)
	fmt.Println(err)
	for _, p := range paths {
		fmt.Println(filepath.Base(p))
	}
	// Output:
	// <nil>
	// run1-demo_twitter.png
	// run1-table4_1-4_vals.png
}

// WriteFiles writes every output of `cornflakes bench --out DIR`: the
// JSON, the CSV and the plots.
func ExampleWriteFiles() {
	dir, err := os.MkdirTemp("", "bench-files")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	paths, err := bench.WriteFiles(dir, "", exampleSeries())
	fmt.Println(err)
	for _, p := range paths {
		fi, err := os.Stat(p)
		fmt.Println(filepath.Base(p), err == nil && fi.Size() > 0)
	}
	// Output:
	// <nil>
	// results.json true
	// results.csv true
	// demo_twitter.png true
}
