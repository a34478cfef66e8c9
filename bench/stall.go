package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// StallMin is the shortest gap MeasureStalls counts as a stall: far above
// the cost of one iteration of its loop (a clock read, tens of ns), below
// any latency a benchmark cares about.
const StallMin = 10 * time.Microsecond

// maxStallGaps bounds the gaps one thread records (a machine that stalls
// more often than this is reported as such; memory stays bounded).
const maxStallGaps = 1 << 16

// StallReport is what MeasureStalls saw: how often, and for how long, the
// operating system (or, in a virtual machine, the hypervisor) took the
// processor away from threads that never block. A busy-polling server and
// load generator lose the same time, so stalls set a floor under the tail
// latency no serializer or transport can go below.
type StallReport struct {
	Threads int           // spinning threads (one per CPU)
	Window  time.Duration // how long each spun
	Stalls  int           // gaps of at least StallMin, over all threads
	Lost    time.Duration // their total length
	Max     time.Duration // the longest
	// P99Floor estimates the p99 latency stalls alone cause: the smallest
	// x such that a request arriving at a random time is delayed by more
	// than x in less than 1% of cases, when a stall of length L on any of
	// the threads delays requests arriving during it by up to L.
	P99Floor time.Duration
	// Truncated reports that a thread recorded more gaps than it keeps;
	// the counts are then lower bounds.
	Truncated bool
}

// String summarises the report on one line.
func (r StallReport) String() string {
	s := fmt.Sprintf("%d spinning threads lost %.2f%% of %v to %d stalls of >= %v (max %v): stalls alone put the p99 at >= %v",
		r.Threads, 100*r.LostFraction(), r.Window, r.Stalls, StallMin, r.Max.Round(time.Microsecond), r.P99Floor.Round(time.Microsecond))
	if r.Truncated {
		s += " (gaps truncated: lower bounds)"
	}
	return s
}

// LostFraction is the share of the threads' time lost to stalls.
func (r StallReport) LostFraction() float64 {
	if r.Threads == 0 || r.Window <= 0 {
		return 0
	}
	return float64(r.Lost) / float64(time.Duration(r.Threads)*r.Window)
}

// MeasureStalls spins threads goroutines (default runtime.GOMAXPROCS) for
// window, each reading the clock in a loop, and records every gap between
// two reads of at least StallMin. The goroutines are not locked to threads:
// the Go scheduler's own preemption of a long-running goroutine then costs
// a few µs instead of a thread hand-off. It returns early, with what it saw,
// when ctx is done.
func MeasureStalls(ctx context.Context, threads int, window time.Duration) StallReport {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	gaps := make([][]time.Duration, threads)
	trunc := make([]bool, threads)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var g []time.Duration
			last := time.Since(start)
			for n := 0; ; n++ {
				now := time.Since(start)
				// A gap that runs past the window counts only up to its
				// end: Lost is a share of Threads × Window.
				if d := min(now, window) - last; d >= StallMin {
					if len(g) < maxStallGaps {
						g = append(g, d)
					} else {
						trunc[i] = true
					}
				}
				last = now
				if now >= window || (n&4095 == 0 && ctx.Err() != nil) {
					break
				}
			}
			gaps[i] = g
		}()
	}
	wg.Wait()
	r := StallReport{Threads: threads, Window: min(time.Since(start), window)}
	var all []time.Duration
	for i, g := range gaps {
		all = append(all, g...)
		r.Truncated = r.Truncated || trunc[i]
	}
	r.Stalls = len(all)
	for _, g := range all {
		r.Lost += g
		r.Max = max(r.Max, g)
	}
	r.P99Floor = p99Floor(all, r.Window)
	return r
}

// p99Floor is the smallest x with sum(max(0, g-x)) <= window/100 over the
// gaps: a request arriving during a gap of length g at a uniformly random
// moment waits more than x for a fraction (g-x)/window of arrivals.
func p99Floor(gaps []time.Duration, window time.Duration) time.Duration {
	if window <= 0 || len(gaps) == 0 {
		return 0
	}
	budget := window / 100
	over := func(x time.Duration) time.Duration {
		var s time.Duration
		for _, g := range gaps {
			if g > x {
				s += g - x
			}
		}
		return s
	}
	if over(0) <= budget {
		return 0
	}
	lo, hi := time.Duration(0), slices.Max(gaps) // over(hi) == 0
	for hi-lo > time.Microsecond {
		mid := lo + (hi-lo)/2
		if over(mid) <= budget {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
