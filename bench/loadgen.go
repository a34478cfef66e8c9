// Package bench is the evaluation harness of Cornflakes for Go: an open-loop
// Poisson load generator (and a closed-loop one) over an abstract transport,
// HdrHistogram latency measured from each request's intended send time,
// response checking against a workload.Model, a sweep that finds the highest
// load meeting a p99 SLO, the paper's experiment presets, and reports (text
// table, CSV, JSON, PNG plots).
//
// The transport is a Conn per client goroutine; a KV client implements it
// over the RPC transport's asynchronous enqueue + continuation API.
package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"github.com/cornflakes-go/cornflakes/internal/loadgen"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Conn is one client's connection to the server under test (see
// loadgen.Conn, whose contract it is).
type Conn = loadgen.Conn

// Batcher is implemented by a Conn that sends a run of requests more cheaply
// together (see loadgen.Batcher): the generator brackets each run of sends
// between two polls with BeginSends and EndSends.
type Batcher = loadgen.Batcher

// Waiter is implemented by a Conn that can block until a response may have
// arrived (see loadgen.Waiter).
type Waiter = loadgen.Waiter

// MinWait is the shortest gap before the next send for which the generator
// sleeps in time.Sleep instead of yielding when nothing is in flight: Go
// timer timeouts have millisecond granularity on an idle runtime, so
// shorter sleeps would oversleep the send time.
const MinWait = 2 * time.Millisecond

// WaitMargin is how long before a send time a blocking Waiter.Wait is
// asked to return, to absorb the thread wake-up latency.
const WaitMargin = 50 * time.Microsecond

// Target opens one Conn per client goroutine.
type Target = loadgen.Target

// ServerMeter is implemented by a Target whose server can report its own
// cost: the CPU time its request-serving threads have used and the requests
// they have served, both cumulative. Run samples it before and after a
// point and reports the server's CPU time per request (Result.ServerCPU):
// the quantity a one-server-core throughput measures, and one that stays
// comparable on a shared machine where latencies and rates do not (time
// the server waits for a core is not CPU time).
type ServerMeter interface {
	ServerUsage() (cpu time.Duration, requests uint64, err error)
}

// SleepMeter is implemented by a Target whose server can count how often
// its request-serving threads went to sleep (voluntary context switches,
// cumulative; each is a system call to sleep and a wake-up later). Run
// samples it before and after a point with the ServerMeter's request count
// and reports sleeps per request (Result.ServerSleeps).
type SleepMeter interface {
	ServerSleeps() (uint64, error)
}

// TargetFunc adapts a function to Target.
type TargetFunc = loadgen.TargetFunc

// Defaults of Config.
const (
	DefaultWarmup         = 0.10 // fraction of the run discarded (Cornflakes' WARMUP_PERCENTAGE)
	DefaultMaxOutstanding = 4096 // per client
	DefaultDrain          = 500 * time.Millisecond
	DefaultMaxDuration    = 8 * time.Second // cap for Config.MinSamples' lengthening of a point
	// MaxLatency is the largest latency the histograms record; larger values are clamped.
	MaxLatency = 60 * time.Second
	// DefaultVerifyEvery is Config.VerifyEvery's default.
	DefaultVerifyEvery = 16
	maxSlots           = 1 << 20
	burstLimit         = 32 // sends between two polls when catching up
)

// Config describes one load-generation run.
type Config struct {
	Workload workload.Workload
	Target   Target
	Clients  int // client goroutines, each with its own Conn and Stream (default 1)
	// ConnsPerClient > 1 gives each client goroutine that many Conns
	// (Target indices i*k .. i*k+k-1), which it sends on in turn and polls
	// in one loop: more requests in flight (each Conn's transport bounds its
	// own) without more goroutines. Meant for Spin, where every client
	// goroutine keeps a processor busy. Default 1.
	ConnsPerClient int
	Rate           float64 // open loop: total offered requests per second
	// Outstanding selects closed loop when > 0: each client keeps this many
	// requests in flight, sending the next as soon as one completes.
	Outstanding int
	Duration    time.Duration // whole run, warm-up included
	// MinSamples (open loop) lengthens Duration so the measured window
	// expects at least this many requests at Rate, up to MaxDuration: a
	// low-rate point's p99 needs samples (0: Duration as given).
	MinSamples     int
	MaxDuration    time.Duration // cap for MinSamples' lengthening (default DefaultMaxDuration)
	Warmup         float64       // fraction of Duration whose requests are not measured (default 0.1; <0 for none)
	MaxOutstanding int           // open loop: in-flight cap per client (default 4096); at the cap sends wait (and their latency grows)
	Drain          time.Duration // after Duration, how long to wait for in-flight responses (default 500ms)
	// Check checks every response against Workload.Model(): status, value
	// count and lengths, and each value's first, middle and last 8 bytes
	// (workload.Model.CheckSpot); one response in VerifyEvery (per client,
	// counted in delivery order) is checked byte by byte
	// (workload.Model.Check). Every serializer gets the same checks.
	Check bool
	// VerifyEvery is how often a checked response has every byte of its
	// values verified (default DefaultVerifyEvery; 1: every response).
	// Reading every byte costs the load generator more CPU per request
	// than the server spends on a large value, which would make a
	// saturated run measure the generator.
	VerifyEvery int
	Seed        uint64 // stream seed; client i uses stream i
	// Spin busy-waits between sends like upstream's spin timer: the client
	// never sleeps, so it sends on time and sees a response at its next
	// poll instead of after a wake-up; every SpinYield it yields to other
	// goroutines (runtime.Gosched), never to the operating system. It
	// needs a core of its own (with a busy-polling server: two). When
	// false (default) the generator blocks in the Conn's Wait (if it is a
	// Waiter and requests are in flight) until WaitMargin before the next
	// send; otherwise it yields the processor (runtime.Gosched) while the
	// next send is less than MinWait away and sleeps (time.Sleep) until
	// about MinWait/2 before it. This leaves the core to the server on a
	// small machine and costs the wake-up latency.
	Spin bool
}

// Result is the outcome of one run. Latencies are from each request's
// intended send time (open loop) or actual send time (closed loop) to its
// response, over requests intended after the warm-up.
type Result struct {
	Mode            string  `json:"mode"` // "open" or "closed"
	Clients         int     `json:"clients"`
	OfferedRPS      float64 `json:"offered_rps"`       // configured rate (0 in closed loop)
	SentRPS         float64 `json:"sent_rps"`          // requests sent in the measured window per second
	AchievedRPS     float64 `json:"achieved_rps"`      // responses received in the measured window per second
	AchievedUnitsPS float64 `json:"achieved_units_ps"` // work units (Request.Units) completed per second
	Unit            string  `json:"unit"`

	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
	Mean time.Duration `json:"mean_ns"`

	Sent       uint64 `json:"sent"`       // measured requests sent
	Received   uint64 `json:"received"`   // measured responses received
	Errors     uint64 `json:"errors"`     // send failures and StatusError responses
	Mismatches uint64 `json:"mismatches"` // responses that differ from the model
	Lost       uint64 `json:"lost"`       // measured requests unanswered after the drain (recorded at their drain-time latency)
	Unexpected uint64 `json:"unexpected"` // responses for unknown or completed ids
	Stalls     uint64 `json:"stalls"`     // times a send waited for a free in-flight slot
	// FirstMismatch describes the first mismatch, if any.
	FirstMismatch string `json:"first_mismatch,omitempty"`

	// ServerCPU is the server's CPU time per request served during the
	// point (warm-up and drain included), when the Target is a
	// ServerMeter; 0 otherwise.
	ServerCPU time.Duration `json:"server_cpu_ns_per_req,omitempty"`
	// ServerSleeps is how often the server's serving threads went to
	// sleep per request served during the point, when the Target is a
	// ServerMeter and a SleepMeter; 0 otherwise.
	ServerSleeps float64 `json:"server_sleeps_per_req,omitempty"`
	// ServerTransport and ClientTransport are the transport's counters
	// during the point, on the server and on the load generator, when the
	// Target is a TransportMeter; nil otherwise.
	ServerTransport *TransportStats `json:"server_transport,omitempty"`
	ClientTransport *TransportStats `json:"client_transport,omitempty"`

	Window    time.Duration           `json:"window_ns"` // measured window
	Histogram *hdrhistogram.Histogram `json:"-"`         // merged latency histogram (ns)
}

// Errors returned by the generator.
var (
	// ErrConfig: the Config is invalid.
	ErrConfig = errs.New("bench: invalid config", cornflakes.ErrConfig)
	// ErrBusy is returned (wrapped) by Conn.Send when the transport cannot
	// take a request right now; the generator retries it after polling.
	ErrBusy = loadgen.ErrBusy
)

// String summarises the result on one line.
func (r Result) String() string {
	s := fmt.Sprintf("%s loop: offered %s achieved %s rps", r.Mode, formatRate(r.OfferedRPS), formatRate(r.AchievedRPS))
	if r.Unit == workload.UnitObjects {
		s += fmt.Sprintf(" (%s objects/s)", formatRate(r.AchievedUnitsPS))
	}
	s += fmt.Sprintf(", p50 %v p99 %v p99.9 %v", r.P50, r.P99, r.P999)
	if r.Errors+r.Lost+r.Mismatches > 0 {
		s += fmt.Sprintf(", %d errors %d lost %d mismatches", r.Errors, r.Lost, r.Mismatches)
	}
	return s
}

func (c *Config) normalize() error {
	if c.Workload == nil || c.Target == nil {
		return fmt.Errorf("%w: Workload and Target are required", ErrConfig)
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.ConnsPerClient == 0 {
		c.ConnsPerClient = 1
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.MaxOutstanding == 0 {
		c.MaxOutstanding = DefaultMaxOutstanding
	}
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = DefaultMaxDuration
	}
	if c.VerifyEvery == 0 {
		c.VerifyEvery = DefaultVerifyEvery
	}
	switch {
	case c.Clients < 1 || c.Clients > 4096:
		return fmt.Errorf("%w: %d clients (want 1..4096)", ErrConfig, c.Clients)
	case c.ConnsPerClient < 1 || c.Clients*c.ConnsPerClient > 4096:
		return fmt.Errorf("%w: %d connections per client (want 1..%d)", ErrConfig, c.ConnsPerClient, 4096/c.Clients)
	case c.Duration <= 0:
		return fmt.Errorf("%w: duration %v", ErrConfig, c.Duration)
	case c.Warmup >= 1:
		return fmt.Errorf("%w: warm-up fraction %v (want < 1)", ErrConfig, c.Warmup)
	case c.Outstanding < 0 || c.Outstanding > maxSlots:
		return fmt.Errorf("%w: %d outstanding", ErrConfig, c.Outstanding)
	case c.Outstanding == 0 && !(c.Rate > 0 && c.Rate < 1e9):
		return fmt.Errorf("%w: open-loop rate %v (want 0 < rate < 1e9)", ErrConfig, c.Rate)
	case c.MaxOutstanding < 1 || c.MaxOutstanding > maxSlots:
		return fmt.Errorf("%w: max outstanding %d (want 1..%d)", ErrConfig, c.MaxOutstanding, maxSlots)
	case c.VerifyEvery < 1:
		return fmt.Errorf("%w: verify every %d responses (want >= 1)", ErrConfig, c.VerifyEvery)
	case c.MinSamples < 0 || c.MaxDuration < 0:
		return fmt.Errorf("%w: min samples %d, max duration %v", ErrConfig, c.MinSamples, c.MaxDuration)
	}
	if c.Outstanding == 0 && c.MinSamples > 0 {
		need := time.Duration(float64(c.MinSamples) / c.Rate / (1 - c.Warmup) * float64(time.Second))
		if need > c.Duration {
			c.Duration = max(min(need, c.MaxDuration), c.Duration)
		}
	}
	return nil
}

// Run runs one load point: open loop at cfg.Rate, or closed loop when
// cfg.Outstanding > 0. Every client dials its Conn, and all start together.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.normalize(); err != nil {
		return Result{}, err
	}
	clients := make([]*client, cfg.Clients)
	for i := range clients {
		conn, err := dialClient(&cfg, i)
		if err != nil {
			for _, c := range clients[:i] {
				c.conn.Close()
			}
			return Result{}, fmt.Errorf("bench: dial client %d: %w", i, err)
		}
		clients[i] = newClient(&cfg, i, conn)
	}
	meter, _ := cfg.Target.(ServerMeter)
	var cpu0 time.Duration
	var reqs0 uint64
	if meter != nil {
		var err error
		if cpu0, reqs0, err = meter.ServerUsage(); err != nil {
			meter = nil // not measurable here (e.g. the server is not on locked threads)
		}
	}
	sm, _ := cfg.Target.(SleepMeter)
	var sleeps0 uint64
	if sm != nil && meter != nil {
		var err error
		if sleeps0, err = sm.ServerSleeps(); err != nil {
			sm = nil
		}
	}
	tm, _ := cfg.Target.(TransportMeter)
	var srv0, cli0 TransportStats
	if tm != nil {
		var err error
		if srv0, cli0, err = tm.TransportUsage(); err != nil {
			tm = nil
		}
	}
	base := time.Now()
	dur := int64(cfg.Duration)
	warmEnd := int64(float64(dur) * cfg.Warmup)
	start := int64(time.Millisecond) // let every goroutine get scheduled before the first send
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		c.base = base
		c.warmEnd, c.end = start+warmEnd, start+dur
		c.drainEnd = c.end + int64(cfg.Drain)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Outstanding > 0 {
				errs[i] = c.runClosed(ctx, start, cfg.Outstanding)
			} else {
				errs[i] = c.runOpen(ctx, start, cfg.Rate/float64(cfg.Clients), float64(i)/float64(cfg.Clients))
			}
		}()
	}
	wg.Wait()
	var firstErr error
	for i, c := range clients {
		if err := c.conn.Close(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("bench: close client %d: %w", i, err)
		}
		if errs[i] != nil && firstErr == nil {
			firstErr = fmt.Errorf("bench: client %d: %w", i, errs[i])
		}
	}
	res := merge(&cfg, clients, time.Duration(dur-warmEnd))
	if meter != nil {
		if cpu1, reqs1, err := meter.ServerUsage(); err == nil && reqs1 > reqs0 {
			res.ServerCPU = (cpu1 - cpu0) / time.Duration(reqs1-reqs0)
			if sm != nil {
				if sleeps1, err := sm.ServerSleeps(); err == nil && sleeps1 >= sleeps0 {
					res.ServerSleeps = float64(sleeps1-sleeps0) / float64(reqs1-reqs0)
				}
			}
		}
	}
	if tm != nil {
		if srv1, cli1, err := tm.TransportUsage(); err == nil {
			s, c := srv1.Sub(srv0), cli1.Sub(cli0)
			res.ServerTransport, res.ClientTransport = &s, &c
		}
	}
	return res, firstErr
}

// idShift is where the sequence number starts in a request id; the bits
// below hold the slot index.
const idShift = loadgen.IDShift

// SlotOf returns the in-flight slot index of a request id (see Conn).
func SlotOf(id uint64) int { return loadgen.SlotOf(id) }

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(MaxLatency), 3) }

func merge(cfg *Config, clients []*client, window time.Duration) Result {
	r := Result{Mode: "open", Clients: cfg.Clients, OfferedRPS: cfg.Rate, Unit: cfg.Workload.Unit(), Window: window}
	if cfg.Outstanding > 0 {
		r.Mode, r.OfferedRPS = "closed", 0
	}
	h := newHist()
	var sentWin, recvWin, units uint64
	for _, c := range clients {
		h.Merge(c.hist)
		r.Sent += c.sent
		r.Received += c.received
		r.Errors += c.errors
		r.Mismatches += c.mismatches
		r.Lost += c.lost
		r.Unexpected += c.unexpected
		r.Stalls += c.stalls
		sentWin += c.sentWin
		recvWin += c.recvWin
		units += c.unitsWin
		if r.FirstMismatch == "" && c.firstMismatch != nil {
			r.FirstMismatch = c.firstMismatch.Error()
		}
	}
	secs := window.Seconds()
	r.SentRPS = float64(sentWin) / secs
	r.AchievedRPS = float64(recvWin) / secs
	r.AchievedUnitsPS = float64(units) / secs
	r.Histogram = h
	if h.TotalCount() > 0 {
		r.P50 = time.Duration(h.ValueAtQuantile(50))
		r.P90 = time.Duration(h.ValueAtQuantile(90))
		r.P99 = time.Duration(h.ValueAtQuantile(99))
		r.P999 = time.Duration(h.ValueAtQuantile(99.9))
		r.Max = time.Duration(h.Max())
		r.Mean = time.Duration(h.Mean())
	}
	return r
}
