package bench_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// storeConn is a minimal Conn: it answers every request from a MemStore on
// the next Poll. A real client issues the request over the RPC transport in
// Send and delivers from the transport's continuation in Poll.
type storeConn struct {
	store *workload.MemStore
	ids   []uint64
	reqs  []*workload.Request
	resp  workload.Response
}

func (c *storeConn) Send(id uint64, req *workload.Request) error {
	c.ids, c.reqs = append(c.ids, id), append(c.reqs, req)
	return nil
}

func (c *storeConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	n := len(c.ids)
	for i := range n {
		c.store.Apply(c.reqs[i], &c.resp)
		deliver(c.ids[i], &c.resp)
	}
	c.ids, c.reqs = c.ids[:0], c.reqs[:0]
	return n, nil
}

func (c *storeConn) Close() error { return nil }

// Run one open-loop point against an in-process store, checking every response.
func ExampleRun() {
	w, _ := workload.Parse("google:keys=1000")
	store := workload.NewMemStore()
	var resp workload.Response
	_ = w.Preload(func(r *workload.Request) error { store.Apply(r, &resp); return nil })

	target := bench.TargetFunc(func(int) (bench.Conn, error) { return &storeConn{store: store}, nil })
	r, err := bench.Run(context.Background(), bench.Config{
		Workload: w, Target: target, Rate: 2000, Duration: 200 * time.Millisecond, Check: true,
	})
	fmt.Println(err, r.Received > 0, r.Mismatches, r.Errors)
	// Output: <nil> true 0 0
}

// Sweep offered loads and print the comparison table.
func ExampleSweep() {
	point := func(_ context.Context, offered float64) (bench.Result, error) {
		// a stand-in for bench.Run against a server that saturates at 40k rps
		r := bench.Result{OfferedRPS: offered, AchievedRPS: min(offered, 40000), Received: 1, P50: 20 * time.Microsecond, P99: 80 * time.Microsecond}
		if offered > 40000 {
			r.P99 = 5 * time.Millisecond
		}
		return r, nil
	}
	sr, _ := bench.Sweep(context.Background(), bench.SweepConfig{SLO: 100 * time.Microsecond, Start: 10000, Refine: -1}, point)
	s := bench.NewSeries(bench.RunInfo{Experiment: "demo", Workload: "google", Serializer: "cornflakes", Mode: "hybrid", Datapath: "udp"}, sr)
	_ = bench.WriteTable(os.Stdout, []bench.Series{s})
	// Output:
	// demo google (SLO p99 100 µs)
	//   serializer         max rps at SLO  p50 µs  p99 µs  vs best baseline
	//   cornflakes/hybrid  40.0k           20.0    80.0    -
}

// Print a comparison as Markdown (as recorded in docs/PERFORMANCE.md).
func ExampleWriteMarkdown() {
	series := []bench.Series{
		{Experiment: "demo", Workload: "twitter", Serializer: "cornflakes", Mode: "hybrid", SLOP99us: 500, MaxRPSAtSLO: 12000,
			Points: []bench.Point{{OfferedRPS: 12000, AchievedRPS: 12000, P50us: 80, P99us: 310, MeetsSLO: true}}},
		{Experiment: "demo", Workload: "twitter", Serializer: "protobuf", SLOP99us: 500, MaxRPSAtSLO: 10000,
			Points: []bench.Point{{OfferedRPS: 10000, AchievedRPS: 10000, P50us: 85, P99us: 330, MeetsSLO: true}}},
	}
	_ = bench.WriteMarkdown(os.Stdout, series)
	// Output:
	// #### demo twitter (SLO p99 500 µs)
	//
	// | serializer | max rps at SLO | p50 µs | p99 µs | vs best baseline |
	// |---|---|---|---|---|
	// | cornflakes/hybrid | 12.0k | 80.0 | 310.0 | 1.20x |
	// | protobuf | 10.0k | 85.0 | 330.0 | - |
	//
}

// A group of Cornflakes modes only (table4, table5, fig12) is compared
// with its first series.
func ExampleWriteMarkdown_modes() {
	series := []bench.Series{
		{Experiment: "table4", Label: "1-4 vals", Workload: "google", Serializer: "cornflakes", Mode: "hybrid", SLOP99us: 500, MaxRPSAtSLO: 10000},
		{Experiment: "table4", Label: "1-4 vals", Workload: "google", Serializer: "cornflakes", Mode: "copy", SLOP99us: 500, MaxRPSAtSLO: 9000},
	}
	_ = bench.WriteMarkdown(os.Stdout, series)
	// Output:
	// #### table4 1-4 vals (SLO p99 500 µs)
	//
	// | serializer | max rps at SLO | p50 µs | p99 µs | vs cornflakes/hybrid |
	// |---|---|---|---|---|
	// | cornflakes/hybrid | 10.0k | - | - | - |
	// | cornflakes/copy | 9.0k | - | - | 0.90x |
	//
}

// MeasureStalls tells how low a p99 can go on this machine before any
// benchmark runs: every CPU spins for the window and the gaps in which the
// operating system (or hypervisor) ran something else are summed up.
func ExampleMeasureStalls() {
	r := bench.MeasureStalls(context.Background(), 0, 100*time.Millisecond)
	fmt.Println(r.Threads > 0, r.LostFraction() < 1)
	// Output: true true
}

// MeasureSyscall tells what one kernel entry costs on this machine (a
// microsecond in a VM with page-table isolation and no PCID, tens of ns
// on bare metal), and why when it can tell.
func ExampleMeasureSyscall() {
	c := bench.MeasureSyscall(0)
	fmt.Println(c.Median > 0)
	// Output: true
}

// Tell a stall of the machine from an overloaded server: both miss a
// 500 µs p99, but only overload raises the median. Sweep re-runs a
// tail-only failure (SweepConfig.Retries) before it counts.
func ExampleTailOnly() {
	const slo = 500 * time.Microsecond
	stalled := bench.Result{OfferedRPS: 10000, AchievedRPS: 10000, Received: 20000, P50: 18 * time.Microsecond, P99: 3 * time.Millisecond}
	overloaded := bench.Result{OfferedRPS: 200000, AchievedRPS: 195000, Received: 390000, P50: 900 * time.Microsecond, P99: 4 * time.Millisecond}
	fmt.Println(bench.TailOnly(stalled, slo, bench.DefaultMinAchieved), bench.TailOnly(overloaded, slo, bench.DefaultMinAchieved))
	// Output: true false
}

// Compare puts the table's comparisons into the series themselves, for the
// JSON output: each Cornflakes series against the best baseline of its group.
func ExampleCompare() {
	series := []bench.Series{
		{Experiment: "demo", Workload: "twitter", Serializer: "cornflakes", Mode: "hybrid", MaxRPSAtSLO: 12000, MaxRPSSaturated: 90000, SaturatedServerCPUus: 5},
		{Experiment: "demo", Workload: "twitter", Serializer: "protobuf", MaxRPSAtSLO: 10000, MaxRPSSaturated: 100000, SaturatedServerCPUus: 6},
	}
	bench.Compare(series)
	s := series[0]
	fmt.Printf("%s vs %s: %.2fx at the SLO, %.2fx saturated, %.2fx in server CPU\n",
		s.Name(), s.VsReference, *s.VsReferenceAtSLO, *s.VsReferenceSaturated, *s.VsReferenceServerCPU)
	fmt.Println(series[1].VsReference == "") // the reference itself is not compared
	// Output:
	// cornflakes/hybrid vs best baseline: 1.20x at the SLO, 0.90x saturated, 1.20x in server CPU
	// true
}
