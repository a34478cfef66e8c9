package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

func mustParse(t *testing.T, spec string) workload.Workload {
	t.Helper()
	w, err := workload.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestOpenLoopChecksEveryResponse(t *testing.T) {
	for _, spec := range []string{"ycsb:records=2000,shape=2x2048", "google:keys=1000", "twitter:keys=2000", "cdn:objects=100"} {
		t.Run(spec, func(t *testing.T) {
			w := mustParse(t, spec)
			srv := preloaded(w, 2*time.Microsecond)
			r, err := Run(context.Background(), Config{
				Workload: w, Target: srv, Clients: 2, Rate: 4000, Duration: 300 * time.Millisecond, Check: true, Seed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Received == 0 || r.Mismatches != 0 || r.Errors != 0 || r.Unexpected != 0 {
				t.Fatalf("result %+v", r)
			}
			if r.Lost != 0 {
				t.Fatalf("lost %d", r.Lost)
			}
			if r.P50 <= 0 || r.P99 < r.P50 || r.P999 < r.P99 || r.Max < r.P999 {
				t.Fatalf("percentiles p50 %v p99 %v p999 %v max %v", r.P50, r.P99, r.P999, r.Max)
			}
			if r.Histogram.TotalCount() != int64(r.Received) {
				t.Fatalf("histogram holds %d, received %d", r.Histogram.TotalCount(), r.Received)
			}
			if r.AchievedRPS <= 0 || r.SentRPS <= 0 || r.Mode != "open" {
				t.Fatalf("rates %+v", r)
			}
			if w.Unit() == workload.UnitObjects && r.AchievedUnitsPS >= r.AchievedRPS {
				t.Fatalf("cdn objects/s %v not below segments/s %v", r.AchievedUnitsPS, r.AchievedRPS)
			}
		})
	}
}

func TestMismatchIsCounted(t *testing.T) {
	w := mustParse(t, "ycsb:records=500")
	srv := preloaded(w, time.Microsecond)
	srv.corruptEvery = 7
	r, err := Run(context.Background(), Config{Workload: w, Target: srv, Rate: 3000, Duration: 200 * time.Millisecond, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mismatches == 0 || r.FirstMismatch == "" {
		t.Fatalf("corrupted responses not counted: %+v", r)
	}
	if Passes(r, time.Hour, 0) {
		t.Fatal("a point with mismatches passes")
	}
	// the sweep stops with ErrMismatch
	_, err = Sweep(context.Background(), SweepConfig{Loads: []float64{2000, 4000}, SLO: time.Hour}, func(ctx context.Context, offered float64) (Result, error) {
		return Run(ctx, Config{Workload: w, Target: srv, Rate: offered, Duration: 100 * time.Millisecond, Check: true})
	})
	if !errors.Is(err, workload.ErrMismatch) {
		t.Fatalf("sweep err = %v, want ErrMismatch", err)
	}
}

func TestErrorsAndLost(t *testing.T) {
	w := mustParse(t, "ycsb:records=100,update=0.5")
	srv := preloaded(w, time.Microsecond)
	srv.failPuts = true
	r, err := Run(context.Background(), Config{Workload: w, Target: srv, Rate: 2000, Duration: 300 * time.Millisecond, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors == 0 || r.Mismatches != 0 {
		t.Fatalf("error responses: %+v", r)
	}
	srv.failPuts, srv.silent = false, true
	r, err = Run(context.Background(), Config{Workload: w, Target: srv, Rate: 2000, Duration: 100 * time.Millisecond, Drain: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost == 0 || r.Received != 0 || Passes(r, time.Hour, 0) {
		t.Fatalf("silent server: %+v (lost %d sent %d received %d stalls %d window %v)", r, r.Lost, r.Sent, r.Received, r.Stalls, r.Window)
	}
	if r.P99 < 20*time.Millisecond {
		t.Fatalf("lost requests not in the percentiles: p99 %v", r.P99)
	}
}

func TestClosedLoop(t *testing.T) {
	w := mustParse(t, "google:keys=200")
	srv := preloaded(w, 5*time.Microsecond)
	r, err := Run(context.Background(), Config{Workload: w, Target: srv, Clients: 2, Outstanding: 4, Duration: 200 * time.Millisecond, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "closed" || r.Received == 0 || r.Mismatches != 0 || r.OfferedRPS != 0 || r.Lost != 0 {
		t.Fatalf("closed loop: %+v", r)
	}
	if !strings.Contains(r.String(), "closed loop") {
		t.Fatalf("String() = %q", r.String())
	}
}

// TestSpin: a spinning generator (Config.Spin) checks every response in
// open and closed loop, with several clients sharing the processor.
func TestSpin(t *testing.T) {
	w := mustParse(t, "google:keys=200")
	srv := preloaded(w, 2*time.Microsecond)
	for _, cfg := range []Config{
		{Rate: 4000, Clients: 2},
		{Outstanding: 4, Clients: 3},
	} {
		cfg.Workload, cfg.Target, cfg.Duration, cfg.Check, cfg.Spin = w, srv, 200*time.Millisecond, true, true
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Received == 0 || r.Mismatches != 0 || r.Errors != 0 || r.Lost != 0 || r.Unexpected != 0 {
			t.Fatalf("%s loop, spinning: %+v", r.Mode, r)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	w := mustParse(t, "google:keys=10")
	srv := newFakeServer(0)
	for _, c := range []Config{
		{},
		{Workload: w, Target: srv, Duration: time.Second},             // no rate
		{Workload: w, Target: srv, Rate: 100},                         // no duration
		{Workload: w, Target: srv, Rate: 100, Duration: 1, Warmup: 1}, // warm-up all
		{Workload: w, Target: srv, Rate: 100, Duration: 1, Clients: -1},
		{Workload: w, Target: srv, Rate: 100, Duration: 1, MinSamples: -1},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) err = %v, want ErrConfig", c, err)
		}
	}
}

func TestSendPollDoNotAllocate(t *testing.T) {
	w := mustParse(t, "ycsb:records=1000,shape=2x1024")
	srv := preloaded(w, 0)
	conn, _ := srv.Dial(0)
	cfg := Config{Workload: w, Target: srv, Rate: 1, Duration: time.Hour, Check: true}
	if err := cfg.normalize(); err != nil {
		t.Fatal(err)
	}
	c := newClient(&cfg, 0, conn)
	c.base = time.Now()
	c.warmEnd, c.end = 0, int64(time.Hour)
	for range 100 { // warm the slots' scratch and the conn's queue
		c.send(c.now())
		_ = c.poll()
	}
	allocs := testing.AllocsPerRun(500, func() {
		c.send(c.now())
		if err := c.poll(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per request", allocs)
	}
	if c.mismatches != 0 || c.received == 0 {
		t.Fatalf("received %d mismatches %d", c.received, c.mismatches)
	}
}

// synthetic points: capacity 100k rps, deterministic, no timing.
func fakePoints(capacity float64) PointFunc {
	return func(_ context.Context, offered float64) (Result, error) {
		r := Result{OfferedRPS: offered, AchievedRPS: offered, Received: 1000, P50: 10 * time.Microsecond, P99: 40 * time.Microsecond, Unit: "requests"}
		if offered > capacity { // overloaded: the queue raises the median too
			r.AchievedRPS = capacity
			r.P50, r.P99 = 5*time.Millisecond, 10*time.Millisecond
		}
		return r, nil
	}
}

func TestAdaptiveSweep(t *testing.T) {
	sr, err := Sweep(context.Background(), SweepConfig{SLO: 100 * time.Microsecond, Start: 5000, Factor: 2, Refine: 3}, fakePoints(100_000))
	if err != nil {
		t.Fatal(err)
	}
	// 5k..80k pass, 160k fails, then 3 bisection steps
	if len(sr.Points) != 6+3 {
		t.Fatalf("%d points", len(sr.Points))
	}
	if sr.MaxRPSAtSLO < 80_000 || sr.MaxRPSAtSLO > 100_000 || sr.Best < 0 {
		t.Fatalf("max at SLO %v", sr.MaxRPSAtSLO)
	}
	// first point failing: the sweep steps down
	sr, err = Sweep(context.Background(), SweepConfig{SLO: 100 * time.Microsecond, Start: 50_000, Refine: -1}, fakePoints(10_000))
	if err != nil {
		t.Fatal(err)
	}
	if sr.MaxRPSAtSLO != 6250 {
		t.Fatalf("step down: max %v, points %d", sr.MaxRPSAtSLO, len(sr.Points))
	}
	// a fine factor still steps down by halves
	sr, err = Sweep(context.Background(), SweepConfig{SLO: 100 * time.Microsecond, Start: 50_000, Factor: 1.25, Refine: -1}, fakePoints(10_000))
	if err != nil {
		t.Fatal(err)
	}
	if sr.MaxRPSAtSLO != 6250 || len(sr.Points) != 4 {
		t.Fatalf("step down by 1.25: max %v, points %d", sr.MaxRPSAtSLO, len(sr.Points))
	}
	// nothing passes: the step-down stops at MinRPS (Start/16 by default)
	sr, err = Sweep(context.Background(), SweepConfig{SLO: time.Microsecond, Start: 1000}, fakePoints(1e9))
	if err != nil || sr.Best != -1 || sr.MaxRPSAtSLO != 0 {
		t.Fatalf("nothing passes: %+v %v", sr, err)
	}
	if lowest := sr.Points[len(sr.Points)-1].OfferedRPS; lowest < 1000/DefaultMinRPSDivisor || lowest > 2*1000/DefaultMinRPSDivisor {
		t.Fatalf("step-down ended at %v req/s", lowest)
	}
}

// A point that misses the SLO in its tail alone (a stall of the machine)
// is re-run up to Retries times and passes if one attempt does; a point
// whose median rose too (overload) or that lost throughput is not re-run.
func TestSweepRetriesTailOnlyFailures(t *testing.T) {
	const slo = 500 * time.Microsecond
	stalled := func(r Result) Result { r.P99 = 3 * time.Millisecond; return r }
	for _, tc := range []struct {
		name       string
		retries    int
		point      func(r Result, attempt int) Result // attempt counts from 0 at each load
		wantMax    float64
		wantReruns int
		wantPoints int
	}{
		{"stall once at 20k", 0, func(r Result, a int) Result {
			if r.OfferedRPS == 20000 && a == 0 {
				return stalled(r)
			}
			return r
		}, 40000, 1, 5 + 1},
		{"stalls at 20k in every attempt", 0, func(r Result, a int) Result {
			if r.OfferedRPS == 20000 {
				return stalled(r)
			}
			return r
		}, 10000, 2, 3 + 2},
		{"retries off", -1, func(r Result, a int) Result {
			if r.OfferedRPS == 20000 && a == 0 {
				return stalled(r)
			}
			return r
		}, 10000, 0, 3},
		{"overload raises the median: no re-run", 0, func(r Result, a int) Result {
			if r.OfferedRPS >= 20000 {
				r = stalled(r)
				r.P50 = 400 * time.Microsecond
			}
			return r
		}, 10000, 0, 3},
		{"lost throughput: no re-run", 0, func(r Result, a int) Result {
			if r.OfferedRPS >= 20000 {
				r = stalled(r)
				r.AchievedRPS = r.OfferedRPS / 2
			}
			return r
		}, 10000, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := map[float64]int{}
			run := func(_ context.Context, offered float64) (Result, error) {
				r := Result{OfferedRPS: offered, AchievedRPS: offered, Received: 1000, P50: 20 * time.Microsecond, P99: 100 * time.Microsecond}
				if offered > 40000 { // capacity
					r.AchievedRPS, r.P50, r.P99 = 40000, 5*time.Millisecond, 20*time.Millisecond
				}
				r = tc.point(r, attempts[offered])
				attempts[offered]++
				return r, nil
			}
			sr, err := Sweep(context.Background(), SweepConfig{SLO: slo, Start: 5000, Refine: -1, Retries: tc.retries}, run)
			if err != nil {
				t.Fatal(err)
			}
			if sr.MaxRPSAtSLO != tc.wantMax || sr.Reruns != tc.wantReruns || len(sr.Points) != tc.wantPoints {
				t.Fatalf("max %v, %d reruns, %d points; want %v, %d, %d", sr.MaxRPSAtSLO, sr.Reruns, len(sr.Points), tc.wantMax, tc.wantReruns, tc.wantPoints)
			}
		})
	}
}

// TestMinSamplesLengthensLowRatePoints: an open-loop point at a low rate
// runs long enough to measure MinSamples requests, up to MaxDuration.
func TestMinSamplesLengthensLowRatePoints(t *testing.T) {
	w := mustParse(t, "ycsb:records=1000,shape=1x64")
	for _, tc := range []struct {
		name                   string
		minSamples             int
		maxDuration            time.Duration
		wantWindowMin, wantMax time.Duration
	}{
		{"none", 0, 0, 80 * time.Millisecond, 100 * time.Millisecond},
		{"lengthened", 400, 0, 390 * time.Millisecond, 420 * time.Millisecond},
		{"capped", 100000, 300 * time.Millisecond, 260 * time.Millisecond, 280 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{
				Workload: w, Target: preloaded(w, time.Microsecond), Rate: 1000, Duration: 100 * time.Millisecond,
				MinSamples: tc.minSamples, MaxDuration: tc.maxDuration, Check: true, Seed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Window < tc.wantWindowMin || r.Window > tc.wantMax {
				t.Fatalf("measured window %v, want %v..%v", r.Window, tc.wantWindowMin, tc.wantMax)
			}
			if r.Mismatches != 0 || r.Errors != 0 {
				t.Fatalf("result %+v", r)
			}
		})
	}
}

func TestSweepBudget(t *testing.T) {
	slow := func(ctx context.Context, offered float64) (Result, error) {
		time.Sleep(20 * time.Millisecond)
		return fakePoints(1e12)(ctx, offered)
	}
	sr, err := Sweep(context.Background(), SweepConfig{Start: 1000, Budget: 50 * time.Millisecond}, slow)
	if err != nil {
		t.Fatal(err)
	}
	if !sr.Truncated || len(sr.Points) >= 8 || len(sr.Points) == 0 {
		t.Fatalf("truncated %v after %d points", sr.Truncated, len(sr.Points))
	}
}

// TestPipelineEndToEnd runs an experiment against two fake servers of
// different speeds through sweep, JSON, CSV, table and PNG.
func TestPipelineEndToEnd(t *testing.T) {
	exp := Experiment{Name: "e2e", Runs: []RunSpec{
		{Label: "google", Workload: "google:keys=300,values=1-3", Serializer: SerCornflakes, Mode: ModeHybrid, SerializeAndSend: true},
		{Label: "google", Workload: "google:keys=300,values=1-3", Serializer: SerProtobuf},
	}}
	var progress bytes.Buffer
	var maxClient atomic.Int32
	series, err := RunExperiment(context.Background(), exp, ExperimentConfig{
		Datapath:          "fake",
		SaturationRounds:  3,
		SaturationClients: 3,
		Load:              Config{Clients: 2, Duration: 120 * time.Millisecond, Check: true, Drain: 50 * time.Millisecond},
		Sweep:             SweepConfig{SLO: 5 * time.Millisecond, Start: 2000, Factor: 4, MaxRPS: 200_000, Refine: 1, Progress: &progress},
		Setup: func(ctx context.Context, run RunSpec, w workload.Workload) (Target, func() error, error) {
			service := 20 * time.Microsecond
			if run.Serializer != SerCornflakes {
				service = 40 * time.Microsecond
			}
			srv := newFakeServer(0)
			conn, _ := srv.Dial(0)
			if _, err := Preload(ctx, w, conn, 32, time.Second); err != nil {
				return nil, nil, err
			}
			conn.Close()
			srv.service = service
			target := meteredFake{srv}
			return dialRecorder{target, target, &maxClient}, func() error { return nil }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d series", len(series))
	}
	for _, s := range series {
		if len(s.Points) == 0 {
			t.Fatalf("%s: no points", s.Name())
		}
		if s.MaxRPSSaturated <= 0 || s.CPUs <= 0 {
			t.Fatalf("%s: saturated %v rps, %d cpus", s.Name(), s.MaxRPSSaturated, s.CPUs)
		}
		if want := map[string]float64{SerCornflakes: 20, SerProtobuf: 40}[s.Serializer]; s.SaturatedServerCPUus != want {
			t.Fatalf("%s: server CPU %v µs per request at saturation, want %v", s.Name(), s.SaturatedServerCPUus, want)
		}
		for _, p := range s.Points {
			if p.Mismatches != 0 {
				t.Fatalf("%s: mismatches", s.Name())
			}
		}
	}
	if !strings.Contains(progress.String(), "rps") {
		t.Errorf("no progress output: %q", progress.String())
	}
	// JSON in the schema
	var js bytes.Buffer
	if err := WriteJSON(&js, series); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"experiment", "workload", "serializer", "mode", "datapath", "max_rps_at_slo", "slo_p99_us", "points"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	pt := raw[0]["points"].([]any)[0].(map[string]any)
	for _, k := range []string{"offered_rps", "achieved_rps", "p50_us", "p99_us"} {
		if _, ok := pt[k]; !ok {
			t.Errorf("JSON point lacks %q", k)
		}
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil || len(back) != 2 || back[0].Serializer != SerCornflakes || back[1].Mode != "" {
		t.Fatalf("ReadJSON: %v %+v", err, back)
	}
	// CSV: header + one row per point
	var cb bytes.Buffer
	if err := WriteCSV(&cb, series); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + len(series[0].Points) + len(series[1].Points); len(rows) != want {
		t.Fatalf("%d CSV rows, want %d", len(rows), want)
	}
	if got := maxClient.Load(); got != 2 {
		t.Fatalf("highest client index dialed %d, want 2 (SaturationClients 3)", got)
	}
	// table
	var tb bytes.Buffer
	if err := WriteTable(&tb, series); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "cornflakes/hybrid") || !strings.Contains(tb.String(), "protobuf") {
		t.Fatalf("table:\n%s", tb.String())
	}
	// PNG plots
	dir := t.TempDir()
	if d := os.Getenv("BENCH_PLOT_DIR"); d != "" {
		dir = d
	}
	paths, err := WriteFiles(dir, "", series)
	if err != nil || len(paths) != 3 {
		t.Fatalf("files %v %v", paths, err)
	}
	for _, p := range paths[:2] {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	paths = paths[2:]
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("plot %v", b)
	}
	if filepath.Base(paths[0]) != "e2e_google.png" {
		t.Errorf("plot name %s", paths[0])
	}
}

func TestPresetDefaults(t *testing.T) {
	for _, quick := range []bool{false, true} {
		load, sweep := PresetDefaults(quick)
		if !load.Check || load.Duration <= 0 || sweep.Budget <= 0 || sweep.SLO != DefaultSLO {
			t.Fatalf("quick=%v: %+v %+v", quick, load, sweep)
		}
	}
	load, sweep := MainJobDefaults()
	full, fullSweep := PresetDefaults(false)
	if load.Duration >= full.Duration || sweep.Budget >= fullSweep.Budget || !load.Check || load.MinSamples != DefaultMinSamples {
		t.Fatalf("main job %+v %+v", load, sweep)
	}
}

func TestPreloadFailure(t *testing.T) {
	w := mustParse(t, "ycsb:records=50")
	srv := newFakeServer(0)
	srv.failPuts = true
	conn, _ := srv.Dial(0)
	if _, err := Preload(context.Background(), w, conn, 8, time.Second); !errors.Is(err, ErrPreload) {
		t.Fatalf("err = %v, want ErrPreload", err)
	}
	srv.failPuts, srv.silent = false, true
	conn, _ = srv.Dial(0)
	if _, err := Preload(context.Background(), w, conn, 8, 30*time.Millisecond); !errors.Is(err, ErrPreload) {
		t.Fatalf("silent: err = %v, want ErrPreload", err)
	}
}

func TestExperimentsPresets(t *testing.T) {
	for _, name := range []string{"default", "table1", "table2", "fig7", "table3", "table4", "table5", "fig12"} {
		e, err := LookupExperiment(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Runs) == 0 {
			t.Fatalf("%s: no runs", name)
		}
		for _, r := range e.Runs {
			// validate the spec at a small size (the presets' sizes take seconds to build)
			small := strings.NewReplacer("keys=100000", "keys=100", "keys=50000", "keys=100", "records=100000", "records=100", "objects=10000", "objects=10").Replace(r.Workload)
			if small == r.Workload {
				t.Fatalf("%s: spec %q has no size to scale down", name, r.Workload)
			}
			if _, err := workload.Parse(small); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	if _, err := LookupExperiment("nope"); !errors.Is(err, ErrUnknownExperiment) {
		t.Fatal(err)
	}
	t1, _ := LookupExperiment("table1")
	if n := len(t1.Filter(SerCornflakes).Runs); n != 4 {
		t.Fatalf("table1 cornflakes runs %d", n)
	}
	t5, _ := LookupExperiment("table5")
	off := 0
	for _, r := range t5.Runs {
		if !r.SerializeAndSend {
			off++
		}
	}
	if off != 3 {
		t.Fatalf("table5 has %d runs without serialize-and-send", off)
	}
}

// BenchmarkClientSendPoll measures the generator's own cost per request
// (stream, send, poll, histogram, model check) against an immediate target.
func BenchmarkClientSendPoll(b *testing.B) {
	for _, spec := range []string{"ycsb:records=10000,shape=1x4096", "google:keys=10000", "twitter:keys=10000", "cdn:objects=1000"} {
		b.Run(spec, func(b *testing.B) {
			w, err := workload.Parse(spec)
			if err != nil {
				b.Fatal(err)
			}
			srv := preloaded(w, 0)
			conn, _ := srv.Dial(0)
			cfg := Config{Workload: w, Target: srv, Rate: 1, Duration: time.Hour, Check: true}
			if err := cfg.normalize(); err != nil {
				b.Fatal(err)
			}
			c := newClient(&cfg, 0, conn)
			c.base = time.Now()
			c.warmEnd, c.end = 0, int64(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.send(c.now())
				if err := c.poll(); err != nil {
					b.Fatal(err)
				}
			}
			if c.mismatches != 0 {
				b.Fatal("mismatches")
			}
		})
	}
}

// busyConn refuses every third Send with ErrBusy.
type busyConn struct {
	Conn
	n, refused int
}

func (b *busyConn) Send(id uint64, req *workload.Request) error {
	if SlotOf(id) >= DefaultMaxOutstanding {
		return fmt.Errorf("slot %d out of range", SlotOf(id))
	}
	b.n++
	if b.n%3 == 0 {
		b.refused++
		return fmt.Errorf("no free slot: %w", ErrBusy)
	}
	return b.Conn.Send(id, req)
}

func TestBusyTransportRetries(t *testing.T) {
	w := mustParse(t, "cdn:objects=50")
	srv := preloaded(w, time.Microsecond)
	var conns []*busyConn
	target := TargetFunc(func(i int) (Conn, error) {
		c, err := srv.Dial(i)
		bc := &busyConn{Conn: c}
		conns = append(conns, bc)
		return bc, err
	})
	r, err := Run(context.Background(), Config{Workload: w, Target: target, Rate: 3000, Duration: 200 * time.Millisecond, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if conns[0].refused == 0 || r.Errors != 0 || r.Mismatches != 0 || r.Lost != 0 || r.Received != r.Sent || r.Received == 0 {
		t.Fatalf("refused %d, result %+v", conns[0].refused, r)
	}
}

func TestPoissonGaps(t *testing.T) {
	w := mustParse(t, "google:keys=10")
	cfg := Config{Workload: w, Target: newFakeServer(0), Rate: 1, Duration: time.Second}
	if err := cfg.normalize(); err != nil {
		t.Fatal(err)
	}
	c := newClient(&cfg, 0, nil)
	const n, mean = 200_000, 10_000.0 // ns
	sum, sumSq := 0.0, 0.0
	for range n {
		g := float64(c.expGap(mean))
		if g < 0 {
			t.Fatal("negative gap")
		}
		sum += g
		sumSq += g * g
	}
	m := sum / n
	sd := math.Sqrt(sumSq/n - m*m)
	// exponential: mean = sd = 1/rate
	if math.Abs(m-mean)/mean > 0.02 || math.Abs(sd-mean)/mean > 0.03 {
		t.Fatalf("gap mean %.0f sd %.0f, want %.0f", m, sd, mean)
	}
}

func TestTableObjectsAndRatio(t *testing.T) {
	sas := true
	mk := func(ser, mode string, rps, objs float64) Series {
		return Series{Experiment: "table2", Label: "cdn", Serializer: ser, Mode: mode, SerializeAndSend: &sas, Unit: "objects",
			MaxRPSAtSLO: rps, MaxUnitsAtSLO: objs, SLOP99us: 500,
			Points: []Point{{OfferedRPS: rps, AchievedRPS: rps, P50us: 10, P99us: 100, MeetsSLO: true}}}
	}
	pb := mk(SerProtobuf, "", 40000, 10000)
	pb.SerializeAndSend = nil
	var b bytes.Buffer
	if err := WriteTable(&b, []Series{mk(SerCornflakes, ModeHybrid, 80000, 20000), pb}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"max objects/s at SLO", "20.0k", "10.0k", "2.00x", "table2 cdn"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestPreloadReordered preloads list workloads (PutList followed by
// AppendToList) through a connection that reorders everything in flight:
// Preload must wait before each AppendToList, or list segments are lost and
// the checked load run below sees mismatches.
func TestPreloadReordered(t *testing.T) {
	for _, spec := range []string{"cdn:objects=50", "google:keys=200,values=1-15"} {
		t.Run(spec, func(t *testing.T) {
			w := mustParse(t, spec)
			srv := newFakeServer(0)
			if _, err := Preload(context.Background(), w, &reorderConn{store: srv.store}, 16, time.Second); err != nil {
				t.Fatal(err)
			}
			r, err := Run(context.Background(), Config{Workload: w, Target: srv, Outstanding: 4, Duration: 300 * time.Millisecond, Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Received == 0 || r.Mismatches != 0 {
				t.Fatalf("received %d, %d mismatches (first: %s)", r.Received, r.Mismatches, r.FirstMismatch)
			}
		})
	}
}

// TestTableSaturated: when no series meets the SLO, MeetsNone says so and
// the table still ranks the serializers by their saturated throughput.
func TestTableSaturated(t *testing.T) {
	mk := func(ser string, sat float64) Series {
		return Series{Experiment: "default", Label: "twitter", Serializer: ser, SLOP99us: 500, MaxRPSSaturated: sat,
			Points: []Point{{OfferedRPS: 1000, AchievedRPS: 1000, P50us: 300, P99us: 9000}}}
	}
	series := []Series{mk(SerCornflakes, 30000), mk(SerProtobuf, 20000), mk(SerCapnp, 0)}
	if !MeetsNone(series) {
		t.Fatal("MeetsNone = false with no passing series")
	}
	var b bytes.Buffer
	if err := WriteTable(&b, series); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max rps saturated", "30.0k", "20.0k", "1.50x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	series[1].MaxRPSAtSLO = 1000
	if MeetsNone(series) || MeetsNone(nil) {
		t.Fatal("MeetsNone = true with a passing series / no series")
	}
}

// Compare puts the table's comparisons into every compared series (for
// the JSON output): against the best baseline of its group, or against the
// group's first series when the group has only Cornflakes modes; the
// reference itself and values missing on either side get none.
func TestCompare(t *testing.T) {
	mk := func(exp, label, ser, mode string, atSLO, sat, cpu float64) Series {
		return Series{Experiment: exp, Label: label, Serializer: ser, Mode: mode, MaxRPSAtSLO: atSLO, MaxRPSSaturated: sat, SaturatedServerCPUus: cpu}
	}
	series := []Series{
		mk("default", "twitter", SerCornflakes, ModeHybrid, 30000, 180000, 5),
		mk("default", "twitter", SerProtobuf, "", 20000, 120000, 8),
		mk("default", "twitter", SerFlatBuffers, "", 10000, 200000, 4),
		mk("table4", "ycsb", SerCornflakes, ModeHybrid, 1000, 0, 2),
		mk("table4", "ycsb", SerCornflakes, ModeCopy, 2000, 0, 4),
	}
	Compare(series)
	f := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%.2f", *p)
	}
	var got []string
	for _, s := range series {
		got = append(got, fmt.Sprintf("%s %s: %q %s %s %s", s.group(false), s.Name(), s.VsReference,
			f(s.VsReferenceAtSLO), f(s.VsReferenceSaturated), f(s.VsReferenceServerCPU)))
	}
	want := []string{
		`default twitter cornflakes/hybrid: "best baseline" 1.50 0.90 0.80`,
		`default twitter protobuf: "" nil nil nil`,
		`default twitter flatbuffers: "" nil nil nil`,
		`table4 ycsb cornflakes/hybrid: "" nil nil nil`,
		`table4 ycsb cornflakes/copy: "cornflakes/hybrid" 2.00 nil 0.50`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Compare:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, series[:1]); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"vs_reference": "best baseline"`, `"vs_reference_at_slo": 1.5`, `"vs_reference_saturated": 0.9`, `"vs_reference_server_cpu": 0.8`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("JSON lacks %s:\n%s", w, b.String())
		}
	}
}

// TestServerCPUPerRequest: a Target that is a ServerMeter gets its server's
// CPU time per request reported with each point (and plain Targets none).
func TestServerCPUPerRequest(t *testing.T) {
	w := mustParse(t, "ycsb:records=500,shape=1x64")
	srv := newFakeServer(7 * time.Microsecond)
	for _, c := range []struct {
		target Target
		want   time.Duration
	}{{meteredFake{srv}, 7 * time.Microsecond}, {srv, 0}} {
		r, err := Run(context.Background(), Config{Workload: w, Target: c.target, Rate: 2000, Duration: 300 * time.Millisecond, Check: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.ServerCPU != c.want || r.Received == 0 {
			t.Fatalf("%T: server CPU %v per request, want %v (%+v)", c.target, r.ServerCPU, c.want, r)
		}
	}
}

func TestMedianSaturation(t *testing.T) {
	for _, c := range []struct {
		rps           []float64
		want, wantCPU float64
	}{{nil, 0, 0}, {[]float64{5}, 5, 95}, {[]float64{9, 1, 5}, 5, 95}, {[]float64{4, 1}, 4, 99}} {
		var rs []Result
		for _, r := range c.rps {
			// the server CPU falls as the rate rises: its median is taken on its own
			rs = append(rs, Result{AchievedRPS: r, P99: time.Duration(r) * time.Microsecond, ServerCPU: time.Duration(100-r) * time.Microsecond})
		}
		got, p99, cpu := medianSaturation(rs)
		if got != c.want || (got > 0 && p99 != got) || cpu != c.wantCPU {
			t.Errorf("%v: median %v p99 %v cpu %v, want %v", c.rps, got, p99, cpu, c.want)
		}
	}
}

// dialRecorder records the highest client index dialed.
type dialRecorder struct {
	Target
	ServerMeter
	max *atomic.Int32
}

func (d dialRecorder) Dial(i int) (Conn, error) {
	for {
		m := d.max.Load()
		if int32(i) <= m || d.max.CompareAndSwap(m, int32(i)) {
			break
		}
	}
	return d.Target.Dial(i)
}

// sleepyTarget's connections stall the client in their first Poll, past
// the end of the point.
type sleepyTarget struct {
	Target
	stall time.Duration
}

type sleepyConn struct {
	Conn
	stall time.Duration
}

func (t sleepyTarget) Dial(i int) (Conn, error) {
	c, err := t.Target.Dial(i)
	return &sleepyConn{c, t.stall}, err
}

func (c *sleepyConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	if c.stall > 0 {
		time.Sleep(c.stall)
		c.stall = 0
	}
	return c.Conn.Poll(deliver)
}

// TestLateClientStillSends: a client that runs late (here: stalled past
// the end of the point) still sends every request intended before the end,
// and their latency counts from the intended time (no coordinated omission).
func TestLateClientStillSends(t *testing.T) {
	w := mustParse(t, "ycsb:records=100,shape=1x64")
	srv := preloaded(w, time.Microsecond)
	r, err := Run(context.Background(), Config{Workload: w, Target: sleepyTarget{srv, 150 * time.Millisecond}, Rate: 2000, Duration: 100 * time.Millisecond, Check: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// ~180 requests intended in the measured 90 ms
	if r.Sent < 120 || r.Received != r.Sent || r.Mismatches != 0 {
		t.Fatalf("sent %d, received %d, mismatches %d: %v", r.Sent, r.Received, r.Mismatches, r)
	}
	if r.P50 < 40*time.Millisecond {
		t.Fatalf("p50 %v: latency not counted from the intended send times", r.P50)
	}
}

// TestExperimentBudgetKeepsEveryRun: when the experiment's budget runs out,
// the remaining runs still measure one point each (cut short) instead of
// disappearing from the comparison.
func TestExperimentBudgetKeepsEveryRun(t *testing.T) {
	var runs []RunSpec
	for _, s := range []string{SerCornflakes, SerProtobuf, SerFlatBuffers, SerCapnp} {
		runs = append(runs, RunSpec{Label: "ycsb", Workload: "ycsb:records=100,shape=1x64", Serializer: s})
	}
	series, err := RunExperiment(context.Background(), Experiment{Name: "budget", Runs: runs}, ExperimentConfig{
		Load:       Config{Duration: 50 * time.Millisecond, Check: true},
		Sweep:      SweepConfig{Start: 1000, Budget: 60 * time.Millisecond},
		Saturation: -1,
		Setup: func(ctx context.Context, run RunSpec, w workload.Workload) (Target, func() error, error) {
			return preloaded(w, time.Microsecond), func() error { return nil }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != len(runs) {
		t.Fatalf("%d series for %d runs", len(series), len(runs))
	}
	for _, s := range series[1:] {
		if len(s.Points) != 1 || !s.Truncated {
			t.Errorf("%s: %d points, truncated %v (want 1 point, cut short)", s.Serializer, len(s.Points), s.Truncated)
		}
	}
}

// TestTargetFuncDialFailure: a dial function that returns its connection
// type's nil pointer with an error (a non-nil Conn interface) still gives
// the caller a nil Conn, so that an "if conn != nil { conn.Close() }"
// cleanup does not call Close on nil.
func TestTargetFuncDialFailure(t *testing.T) {
	dial := func() (*fakeConn, error) { return nil, errors.New("refused") }
	target := TargetFunc(func(int) (Conn, error) { return dial() })
	if c, err := target.Dial(0); err == nil || c != nil {
		t.Fatalf("Dial = %v, %v; want nil and the error", c, err)
	}
}

func TestAnchor(t *testing.T) {
	base := SweepConfig{Start: 5000, Factor: 2, MinRPS: 312, MaxRPS: 20e6}
	for _, c := range []struct {
		name     string
		sat      float64
		fraction float64
		want     SweepConfig
	}{
		{"anchored", 200_000, 0.5, SweepConfig{Start: 100_000, Factor: DefaultAnchorFactor, MinRPS: 100_000.0 / DefaultMinRPSDivisor, MaxRPS: 20e6}},
		{"another fraction", 10_000, 0.8, SweepConfig{Start: 8000, Factor: DefaultAnchorFactor, MinRPS: 8000.0 / DefaultMinRPSDivisor, MaxRPS: 20e6}},
		{"nothing completed", 0, 0.5, base},
		{"under one request per second", 1, 0.5, base},
	} {
		sc := base
		anchor(&sc, Result{AchievedRPS: c.sat}, c.fraction)
		if sc.Start != c.want.Start || sc.Factor != c.want.Factor || sc.MinRPS != c.want.MinRPS || sc.MaxRPS != c.want.MaxRPS {
			t.Errorf("%s: %+v, want %+v", c.name, sc, c.want)
		}
	}
	// a start above MaxRPS raises MaxRPS, so that the sweep stays valid
	sc := SweepConfig{MaxRPS: 1000}
	anchor(&sc, Result{AchievedRPS: 10_000}, 0.5)
	if sc.MaxRPS != sc.Start {
		t.Errorf("MaxRPS %v below start %v", sc.MaxRPS, sc.Start)
	}
}

// TestAnchoredExperiment: with ExperimentConfig.Anchor the saturation point
// runs first and the sweep starts at that fraction of its rate.
func TestAnchoredExperiment(t *testing.T) {
	runs := []RunSpec{{Label: "ycsb", Workload: "ycsb:records=100,shape=1x64", Serializer: SerCornflakes}}
	series, err := RunExperiment(context.Background(), Experiment{Name: "anchor", Runs: runs}, ExperimentConfig{
		Load:       Config{Duration: 50 * time.Millisecond, Check: true},
		Sweep:      SweepConfig{Refine: -1, Retries: -1, MaxRPS: 1e9},
		Saturation: 50 * time.Millisecond,
		Anchor:     0.5,
		Setup: func(ctx context.Context, run RunSpec, w workload.Workload) (Target, func() error, error) {
			return preloaded(w, 20*time.Microsecond), func() error { return nil }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := series[0]
	if !(s.MaxRPSSaturated > 0) || len(s.Points) == 0 {
		t.Fatalf("saturated %v, %d points", s.MaxRPSSaturated, len(s.Points))
	}
	if got, want := s.Points[0].OfferedRPS, 0.5*s.MaxRPSSaturated; math.Abs(got-want) > 1e-6*want {
		t.Fatalf("first point offered %v, want half the saturated %v", got, s.MaxRPSSaturated)
	}
	if len(s.Points) > 1 {
		if r := s.Points[1].OfferedRPS / s.Points[0].OfferedRPS; math.Abs(r-DefaultAnchorFactor) > 1e-9 && math.Abs(r-0.5) > 1e-9 {
			t.Fatalf("second point at %vx the first", r)
		}
	}
}
