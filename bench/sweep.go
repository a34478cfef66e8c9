package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/cornflakes-go/cornflakes/workload"
)

// Sweep defaults.
const (
	DefaultSLO         = 500 * time.Microsecond // p99 target on kernel UDP loopback (the paper's ~50-100 µs assumes kernel bypass)
	DefaultMinAchieved = 0.95                   // achieved/offered a passing point needs (the paper's 95%)
	DefaultStartRPS    = 5000
	DefaultFactor      = 2.0
	DefaultMaxRPS      = 20e6
	DefaultRefine      = 3
	// DefaultMinSamples is how many measured responses an open-loop point
	// needs before its p99 means something: with 1000 samples the p99 is
	// the 10th-worst request rather than the 2nd. RunExperiment lengthens
	// low-rate points to reach it (up to ExperimentConfig.MaxPointDuration).
	DefaultMinSamples = 1000
	// DefaultMinRPSDivisor bounds the adaptive sweep's step-down: it stops
	// at Start/DefaultMinRPSDivisor (312 req/s with the default start).
	DefaultMinRPSDivisor = 16
	// DefaultRetries is how often a point that failed only in its tail is
	// re-run (SweepConfig.Retries).
	DefaultRetries = 2
	// TailOnlyMedianDivisor defines a tail-only failure: the p99 missed the
	// SLO while the median stayed at or below SLO/TailOnlyMedianDivisor.
	TailOnlyMedianDivisor = 4
)

// SweepConfig describes a load sweep.
type SweepConfig struct {
	SLO         time.Duration // p99 a passing point must not exceed (default DefaultSLO)
	MinAchieved float64       // achieved/offered a passing point needs (default 0.95)
	// Loads, when set, are run in order (all of them, within Budget).
	// Otherwise the sweep is adaptive: Start, Start*Factor, ... until a point
	// fails or MaxRPS, then Refine bisection steps between the highest
	// passing and the lowest failing load.
	Loads  []float64
	Start  float64 // default 5000
	Factor float64 // default 2
	MaxRPS float64 // default 20e6
	Refine int     // default 3; <0 for none
	// MinRPS is the lowest load the adaptive sweep steps down to (dividing
	// by Factor, or by 2 when Factor is smaller) when Start
	// already fails (default Start/16).
	MinRPS float64
	// Retries is how many times a point that failed only in its tail
	// (TailOnly) is re-run before it counts as failed; the point passes if
	// one attempt does (default DefaultRetries, <0 for none). A stall of
	// the OS or the hypervisor (MeasureStalls: up to tens of milliseconds
	// on a VM) delays the requests around it and can put one run's p99
	// over the SLO at any load, while an overloaded server raises the
	// median too. Every attempt is kept in SweepResult.Points.
	Retries int
	// Budget bounds the sweep's wall time (0: unbounded). A point is not
	// started when the time left is shorter than the last point took; the
	// first point always runs.
	Budget time.Duration
	// Progress, when non-nil, shows a progress bar (e.g. os.Stderr).
	Progress io.Writer
	Label    string // progress-bar description
}

// PointFunc runs one load point at the offered rate (requests/s).
type PointFunc func(ctx context.Context, offered float64) (Result, error)

// SweepResult is the outcome of a sweep.
type SweepResult struct {
	Points []Result // in the order run
	// MaxRPSAtSLO is the highest achieved rate among passing points (0 if none).
	MaxRPSAtSLO float64
	// MaxUnitsAtSLO is the units/s (objects/s for cdn) of that point.
	MaxUnitsAtSLO float64
	Best          int  // index of that point in Points, -1 if none
	Truncated     bool // the budget stopped the sweep early
	Reruns        int  // attempts re-run after a tail-only failure (SweepConfig.Retries)
	SLO           time.Duration
	MinAchieved   float64
}

// ErrMismatch is returned (wrapped with workload.ErrMismatch) when a point
// saw responses that differ from the model: a correctness failure stops the
// sweep.
var ErrMismatch = workload.ErrMismatch

func (c *SweepConfig) normalize() error {
	if c.SLO == 0 {
		c.SLO = DefaultSLO
	}
	if c.MinAchieved == 0 {
		c.MinAchieved = DefaultMinAchieved
	}
	if c.Start == 0 {
		c.Start = DefaultStartRPS
	}
	if c.Factor == 0 {
		c.Factor = DefaultFactor
	}
	if c.MaxRPS == 0 {
		c.MaxRPS = DefaultMaxRPS
	}
	if c.Refine == 0 {
		c.Refine = DefaultRefine
	}
	if c.MinRPS == 0 {
		c.MinRPS = c.Start / DefaultMinRPSDivisor
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	switch {
	case c.SLO < 0:
		return fmt.Errorf("%w: SLO %v", ErrConfig, c.SLO)
	case c.MinAchieved < 0 || c.MinAchieved > 1:
		return fmt.Errorf("%w: min achieved ratio %v", ErrConfig, c.MinAchieved)
	case !(c.Start > 0) || !(c.Factor > 1) || c.MaxRPS < c.Start || !(c.MinRPS > 0) || c.MinRPS > c.Start:
		return fmt.Errorf("%w: adaptive sweep start %v factor %v max %v min %v", ErrConfig, c.Start, c.Factor, c.MaxRPS, c.MinRPS)
	}
	for _, l := range c.Loads {
		if !(l > 0) || math.IsInf(l, 0) {
			return fmt.Errorf("%w: offered load %v", ErrConfig, l)
		}
	}
	return nil
}

// Passes reports whether r meets the SLO: p99 <= slo, achieved >= minAchieved
// x offered (open loop), and no errors, losses or mismatches.
func Passes(r Result, slo time.Duration, minAchieved float64) bool {
	if r.Errors > 0 || r.Lost > 0 || r.Mismatches > 0 || r.Received == 0 {
		return false
	}
	if r.P99 > slo {
		return false
	}
	return r.OfferedRPS == 0 || r.AchievedRPS >= minAchieved*r.OfferedRPS
}

// TailOnly reports whether r failed the SLO in its tail alone: it met
// every other criterion of Passes, its p99 exceeded slo and its median did
// not exceed slo/TailOnlyMedianDivisor. That is the mark of a stall of the
// machine rather than of an overloaded server, whose queue raises the
// median too.
func TailOnly(r Result, slo time.Duration, minAchieved float64) bool {
	withoutTail := r
	withoutTail.P99 = 0
	return !Passes(r, slo, minAchieved) && Passes(withoutTail, slo, minAchieved) && r.P50 <= slo/TailOnlyMedianDivisor
}

// Sweep runs points until it has found the highest load that meets the SLO.
func Sweep(ctx context.Context, cfg SweepConfig, run PointFunc) (SweepResult, error) {
	if err := cfg.normalize(); err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Best: -1, SLO: cfg.SLO, MinAchieved: cfg.MinAchieved}
	t0 := time.Now()
	var last time.Duration
	estimate := len(cfg.Loads)
	if estimate == 0 {
		estimate = int(math.Ceil(math.Log(cfg.MaxRPS/cfg.Start)/math.Log(cfg.Factor))) + 1
		estimate = min(estimate, 8) + max(cfg.Refine, 0) // most sweeps fail well before MaxRPS
	}
	var bar *progressbar.ProgressBar
	if cfg.Progress != nil {
		bar = progressbar.NewOptions(estimate,
			progressbar.OptionSetWriter(cfg.Progress),
			progressbar.OptionSetDescription(cfg.Label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetWidth(20),
			progressbar.OptionThrottle(0),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(cfg.Progress) }),
		)
	}
	attempt := func(offered float64) (bool, Result, error) {
		if cfg.Budget > 0 && len(res.Points) > 0 && time.Since(t0)+last > cfg.Budget {
			res.Truncated = true
			return false, Result{}, errStop
		}
		if err := ctx.Err(); err != nil {
			return false, Result{}, err
		}
		if bar != nil {
			bar.Describe(fmt.Sprintf("%s %s rps", cfg.Label, formatRate(offered)))
		}
		ts := time.Now()
		r, err := run(ctx, offered)
		last = time.Since(ts)
		if err != nil {
			return false, r, err
		}
		res.Points = append(res.Points, r)
		if bar != nil {
			if bar.GetMax() <= len(res.Points) {
				bar.ChangeMax(len(res.Points) + 1)
			}
			_ = bar.Add(1)
		}
		if r.Mismatches > 0 {
			return false, r, fmt.Errorf("bench: %d responses differ from the model at %s rps (first: %s): %w", r.Mismatches, formatRate(offered), r.FirstMismatch, ErrMismatch)
		}
		ok := Passes(r, cfg.SLO, cfg.MinAchieved)
		if ok && (res.Best < 0 || r.AchievedRPS > res.MaxRPSAtSLO) {
			res.Best = len(res.Points) - 1
			res.MaxRPSAtSLO = r.AchievedRPS
			res.MaxUnitsAtSLO = r.AchievedUnitsPS
		}
		return ok, r, nil
	}
	step := func(offered float64) (bool, error) {
		ok, r, err := attempt(offered)
		for try := 0; err == nil && !ok && try < cfg.Retries && TailOnly(r, cfg.SLO, cfg.MinAchieved); try++ {
			res.Reruns++
			ok, r, err = attempt(offered)
		}
		return ok, err
	}
	var err error
	if len(cfg.Loads) > 0 {
		for _, l := range cfg.Loads {
			if _, err = step(l); err != nil {
				break
			}
		}
	} else {
		err = adaptive(cfg, step)
	}
	if bar != nil {
		if err == nil || errors.Is(err, errStop) {
			bar.ChangeMax(len(res.Points))
			_ = bar.Finish()
		} else {
			_ = bar.Exit()
		}
	}
	if errors.Is(err, errStop) {
		err = nil
	}
	return res, err
}

var errStop = errors.New("bench: sweep budget exhausted")

func adaptive(cfg SweepConfig, step func(float64) (bool, error)) error {
	pass, fail := 0.0, 0.0
	for l := cfg.Start; l <= cfg.MaxRPS; l *= cfg.Factor {
		ok, err := step(l)
		if err != nil {
			return err
		}
		if !ok {
			fail = l
			break
		}
		pass = l
	}
	if fail == 0 {
		return nil // passed up to MaxRPS
	}
	if pass == 0 { // the first load already failed: step down, at least halving
		down := max(cfg.Factor, 2)
		for l := fail / down; l >= cfg.MinRPS; l /= down {
			ok, err := step(l)
			if err != nil {
				return err
			}
			if ok {
				pass = l
				break
			}
			fail = l
		}
		if pass == 0 {
			return nil
		}
	}
	lo, hi := pass, fail
	for range max(cfg.Refine, 0) {
		if hi/lo < 1.05 {
			break
		}
		mid := math.Sqrt(lo * hi)
		ok, err := step(mid)
		if err != nil {
			return err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return nil
}

func formatRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}
