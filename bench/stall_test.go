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

func TestSyscallWhy(t *testing.T) {
	for _, tc := range []struct{ meltdown, cpuinfo, want string }{
		{"Not affected\n", "flags\t: fpu pcid\n", ""},
		{"Mitigation: PTI\n", "processor\t: 0\nflags\t\t: fpu vme pse\n", "kernel page-table isolation without PCID: every system call flushes the TLB"},
		{"Mitigation: PTI\n", "flags\t\t: fpu pcid invpcid\n", "kernel page-table isolation, with PCID"},
		{"Mitigation: PTI\n", "", "kernel page-table isolation"},
		{"", "", ""},
	} {
		if got := syscallWhy(tc.meltdown, tc.cpuinfo); got != tc.want {
			t.Errorf("syscallWhy(%q, %q) = %q, want %q", tc.meltdown, tc.cpuinfo, got, tc.want)
		}
	}
}

func TestMeasureSyscall(t *testing.T) {
	c := MeasureSyscall(3)
	if c.Median <= 0 || c.Median > time.Second {
		t.Fatalf("median %v", c.Median)
	}
	if c.String() == "" {
		t.Fatal("empty String")
	}
}
