package naosbench_test

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/naos/naosbench"
)

// One structure, one size, two libraries over loopback TCP: a latency, a
// throughput and a CPU record each.
func ExampleRun() {
	recs, err := naosbench.Run(naosbench.Config{
		Structures: []string{"point-val"}, Sizes: []int{64}, Libraries: []string{"naos", "msgp"},
		Transports: []string{"tcp"}, Budget: time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		// CPU time is counted in clock ticks: it may round to 0 for tiny arrays.
		fmt.Println(r.Structure, r.Size, r.Library, r.Transport, r.Op, r.Unit, r.Value > 0 || r.Op == "cpu" && r.Value == 0)
	}
	// Output:
	// point-val 64 naos tcp latency µs true
	// point-val 64 naos tcp throughput objects/s true
	// point-val 64 naos tcp cpu µs true
	// point-val 64 msgp tcp latency µs true
	// point-val 64 msgp tcp throughput objects/s true
	// point-val 64 msgp tcp cpu µs true
}
