package echo_test

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/echo"
)

// One short run of Cornflakes (hybrid) echoing two 2048-byte fields over
// kernel UDP on loopback, every response checked byte for byte.
func ExampleRunOne() {
	r, err := echo.RunOne(echo.Config{Datapath: "udp", Duration: 50 * time.Millisecond, Warmup: 10 * time.Millisecond, Verify: true, MinResponses: 10}, "cornflakes-hybrid", "2x2048")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Approach, r.Shape, r.Requests > 0, r.Bad)
	// Output: cornflakes-hybrid 2x2048 true 0
}

// Run measures several approaches and shapes (here two baselines on the
// in-process memnet datapath), one Result per (approach, shape): what
// `cornflakes echo --json` prints.
func ExampleRun() {
	rs, err := echo.Run(echo.Config{
		Datapath:     "memnet",
		Approaches:   []string{"protobuf", "capnp"},
		Shapes:       []string{"1x1024", "tree5"},
		Clients:      4,
		Duration:     30 * time.Millisecond,
		Warmup:       5 * time.Millisecond,
		Verify:       true,
		MinResponses: 10,
	})
	if err != nil {
		panic(err)
	}
	for _, r := range rs {
		fmt.Println(r.Approach, r.Shape, r.Datapath, r.Requests > 0, r.Bad)
	}
	// Output:
	// protobuf 1x1024 memnet true 0
	// protobuf tree5 memnet true 0
	// capnp 1x1024 memnet true 0
	// capnp tree5 memnet true 0
}

// The approach names of --approaches and the shapes run by default.
func ExampleApproaches() {
	fmt.Println(echo.Approaches())
	fmt.Println(echo.DefaultShapes())
	// Output:
	// [raw onecopy twocopy cornflakes-hybrid cornflakes-copy cornflakes-zerocopy protobuf flatbuffers capnp]
	// [1x1024 2x2048 4x1024 1x4096 8x512 tree5]
}

// Compare relates every result to the raw echo of its datapath and shape.
func ExampleCompare() {
	res := []echo.Result{
		{Approach: "raw", Datapath: "udp", Shape: "2x2048", ThroughputRPS: 400000, ServerNsPerReq: 1000},
		{Approach: "cornflakes-hybrid", Datapath: "udp", Shape: "2x2048", ThroughputRPS: 300000, ServerNsPerReq: 1600},
	}
	echo.Compare(res)
	fmt.Printf("%.2fx raw's throughput, %.3fx raw's CPU efficiency\n", res[1].VsRawThroughput, res[1].VsRawServerCPU)
	// Output:
	// 0.75x raw's throughput, 0.625x raw's CPU efficiency
}
