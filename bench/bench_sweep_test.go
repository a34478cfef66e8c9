package bench

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

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
