package bench

import (
	"context"
	"testing"
	"time"
)

func TestP99Floor(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		name   string
		gaps   []time.Duration
		window time.Duration
		want   time.Duration // within 1 µs
	}{
		{"none", nil, time.Second, 0},
		{"below 1%", []time.Duration{5 * time.Millisecond, 4 * time.Millisecond}, time.Second, 0},
		// One 20 ms stall in 1 s: arrivals in its first 10 ms wait > 10 ms.
		{"one long", []time.Duration{20 * time.Millisecond}, time.Second, 10 * time.Millisecond},
		// Two 10 ms stalls: 5 ms of each is over x = 5 ms.
		{"two", []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, time.Second, 5 * time.Millisecond},
		{"many short", []time.Duration{100 * us, 100 * us, 100 * us, 100 * us}, 20 * time.Millisecond, 50 * us},
	} {
		got := p99Floor(tc.gaps, tc.window)
		if d := got - tc.want; d < -us || d > us {
			t.Errorf("%s: p99Floor = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMeasureStalls: the probe spins for its window on every thread and
// reports consistent numbers; a cancelled context ends it early.
func TestMeasureStalls(t *testing.T) {
	r := MeasureStalls(context.Background(), 2, 50*time.Millisecond)
	if r.Threads != 2 || r.Window <= 0 || r.Window > 50*time.Millisecond {
		t.Fatalf("report %+v", r)
	}
	if r.Stalls > 0 && (r.Max < StallMin || r.Lost < r.Max) || r.P99Floor > r.Max {
		t.Fatalf("inconsistent report %+v", r)
	}
	if f := r.LostFraction(); f < 0 || f > 1 {
		t.Fatalf("lost fraction %v", f)
	}
	if r.String() == "" {
		t.Fatal("empty String")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	MeasureStalls(ctx, 1, time.Minute)
	if time.Since(t0) > 10*time.Second {
		t.Fatal("cancelled probe did not stop")
	}
}
