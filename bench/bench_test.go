package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// TestClosedLoopDefersTime pins the closed loop's timestamping: a delivered
// response is checked at once but recorded only by the loop's next clock
// read (flushDone), with that time, and neither step allocates.
func TestClosedLoopDefersTime(t *testing.T) {
	w := mustParse(t, "twitter:keys=1000")
	srv := preloaded(w, 0)
	conn, _ := srv.Dial(0)
	cfg := Config{Workload: w, Target: srv, Outstanding: 8, Duration: time.Hour, Check: true}
	if err := cfg.normalize(); err != nil {
		t.Fatal(err)
	}
	c := newClient(&cfg, 0, conn)
	c.base = time.Now()
	c.warmEnd, c.end = 0, int64(time.Hour)
	c.deferTime = true
	for range 8 {
		if !c.send(1) {
			t.Fatal("send refused")
		}
	}
	got, err := c.pollN()
	if err != nil || got != 8 {
		t.Fatalf("pollN = %d, %v; want 8 responses", got, err)
	}
	if c.received != 0 || len(c.done) != 8 || c.checks != 8 {
		t.Fatalf("after the poll: received %d, queued %d, checked %d; want 0, 8, 8", c.received, len(c.done), c.checks)
	}
	const at = int64(5 * time.Millisecond)
	c.flushDone(at)
	if c.received != 8 || len(c.done) != 0 || c.recvWin != 8 {
		t.Fatalf("after flushDone: received %d recvWin %d queued %d; want 8, 8, 0", c.received, c.recvWin, len(c.done))
	}
	if lo, hi := c.hist.Min(), c.hist.Max(); !c.hist.ValuesAreEquivalent(lo, at-1) || !c.hist.ValuesAreEquivalent(hi, at-1) {
		t.Fatalf("latencies %d..%d, want %d (flush time - intended)", lo, hi, at-1)
	}
	allocs := testing.AllocsPerRun(500, func() {
		c.send(c.now())
		if _, err := c.pollN(); err != nil {
			t.Fatal(err)
		}
		c.flushDone(c.now())
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per request", allocs)
	}
	if c.mismatches != 0 {
		t.Fatalf("%d mismatches: %v", c.mismatches, c.firstMismatch)
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

// TestSampledVerification: a corrupted byte that the spot check reads is
// caught in every response; one between the words it reads is caught in
// exactly the responses verified byte by byte (one in VerifyEvery), and in
// all of them with VerifyEvery 1.
func TestSampledVerification(t *testing.T) {
	w := mustParse(t, "ycsb:records=200,shape=1x4096,update=0")
	for _, tc := range []struct {
		name  string
		mid   bool
		every int
	}{
		{"first-byte", false, DefaultVerifyEvery},
		{"mid-sampled", true, 4},
		{"mid-every", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := preloaded(w, time.Microsecond)
			srv.corruptEvery, srv.corruptMid = 1, tc.mid
			r, err := Run(context.Background(), Config{Workload: w, Target: srv, Outstanding: 4, Duration: 100 * time.Millisecond,
				Warmup: -1, Drain: time.Second, Check: true, VerifyEvery: tc.every})
			if err != nil {
				t.Fatal(err)
			}
			if r.Received < 40 || r.Lost != 0 {
				t.Fatalf("received %d, lost %d", r.Received, r.Lost)
			}
			want := r.Received
			if tc.mid && tc.every > 1 {
				want = r.Received / uint64(tc.every)
			}
			if r.Mismatches != want {
				t.Fatalf("%d mismatches in %d responses, want %d", r.Mismatches, r.Received, want)
			}
		})
	}
	if _, err := Run(context.Background(), Config{Workload: w, Target: preloaded(w, 0), Outstanding: 1, Duration: time.Millisecond, VerifyEvery: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("VerifyEvery -1: %v, want ErrConfig", err)
	}
}
