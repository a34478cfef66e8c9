package bench_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/bench"
)

// Curve is what the plot's line goes through: one point per offered load,
// in order of offered load, whatever order the sweep ran them in; a point
// re-run after a tail-only failure keeps the attempt the sweep counted.
func ExampleSeries_Curve() {
	s := bench.Series{Points: []bench.Point{
		{OfferedRPS: 40000, AchievedRPS: 40000, P99us: 900},
		{OfferedRPS: 40000, AchievedRPS: 40000, P99us: 300, MeetsSLO: true}, // the re-run passed
		{OfferedRPS: 20000, AchievedRPS: 20000, P99us: 200, MeetsSLO: true},
	}}
	curve, others := s.Curve()
	for _, p := range curve {
		fmt.Println(p.OfferedRPS, p.P99us)
	}
	fmt.Println(len(others), "attempt off the line")
	// Output:
	// 20000 200
	// 40000 300
	// 1 attempt off the line
}

// SLONote says why a series has no max load at the SLO, instead of a 0.
func ExampleSeries_SLONote() {
	s := bench.Series{Serializer: "protobuf", SLOP99us: 500, StallP99Floorus: 900, MaxRPSSaturated: 150000,
		Points: []bench.Point{{OfferedRPS: 50000, AchievedRPS: 50000, P50us: 40, P99us: 2500}}}
	short, why := s.SLONote()
	fmt.Println(short)
	fmt.Println(why)
	// Output:
	// unmeasurable (stalls)
	// the machine's stalls alone put the p99 at >= 900 µs, above the SLO of 500 µs (the machine check's spinning threads lost 0.0% of their time, longest stall 0 µs); lowest load 50.0k rps: p50 40.0 µs, p99 2500.0 µs
}
