package echo_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cornflakes-go/cornflakes/echo"
	"github.com/cornflakes-go/cornflakes/microbench"
)

// The default shapes are microbench shapes that fit in one datagram: a
// single value, lists of values, and a tree of 32 small leaves, each
// carrying 1 to 4 KiB of values.
func ExampleDefaultShapes() {
	for _, name := range echo.DefaultShapes() {
		s, err := microbench.ShapeByName(name)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-6s %-12s %2d values, %d bytes\n", s.Name, s.Kind, len(s.Variants[0]), s.TotalBytes(0))
	}
	// Output:
	// 1x1024 SingleBuffer  1 values, 1024 bytes
	// 2x2048 ListBuffers   2 values, 4096 bytes
	// 4x1024 ListBuffers   4 values, 4096 bytes
	// 1x4096 SingleBuffer  1 values, 4096 bytes
	// 8x512  ListBuffers   8 values, 4096 bytes
	// tree5  Tree5        32 values, 4096 bytes
}

// WriteFiles leaves a run behind: echo.json (what --json prints), echo.csv
// and the plots. Results as Run returns them, compared with raw.
func ExampleWriteFiles() {
	dir, err := os.MkdirTemp("", "echo-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	res := []echo.Result{
		{Approach: "raw", Datapath: "memnet", Shape: "2x2048", Clients: 16, ThroughputRPS: 400000, P50us: 36, P99us: 60, ServerNsPerReq: 800},
		{Approach: "cornflakes-hybrid", Datapath: "memnet", Shape: "2x2048", Clients: 16, ThroughputRPS: 300000, P50us: 48, P99us: 90, ServerNsPerReq: 1000},
	}
	echo.Compare(res)
	paths, err := echo.WriteFiles(filepath.Join(dir, "out"), res)
	if err != nil {
		panic(err)
	}
	for _, p := range paths {
		fmt.Println(filepath.Base(p))
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "echo.csv"))
	if err != nil {
		panic(err)
	}
	fmt.Print(string(csv))
	// Output:
	// echo.json
	// echo.csv
	// echo.png
	// echo-latency.png
	// approach,datapath,shape,clients,throughput_rps,p50_us,p99_us,server_cpu_ns_per_req,xdp_mode,vs_raw_throughput,vs_raw_server_cpu
	// raw,memnet,2x2048,16,400000,36,60,800,,1,1
	// cornflakes-hybrid,memnet,2x2048,16,300000,48,90,1000,,0.75,0.8
}

// Run and RunOne check the whole Config before they open anything: zero
// values take the defaults, and a bad value is an error naming it.
func ExampleConfig() {
	for _, cfg := range []echo.Config{
		{Datapath: "tcp"},
		{Approaches: []string{"json"}},
		{Shapes: []string{"1x65536"}},
		{Clients: 5000},
	} {
		_, err := echo.Run(cfg)
		switch {
		case errors.Is(err, echo.ErrConfig):
			fmt.Println("ErrConfig:", err)
		case errors.Is(err, echo.ErrUnknownApproach):
			fmt.Println("ErrUnknownApproach:", err)
		}
	}
	// Output:
	// ErrConfig: echo: invalid config: datapath "tcp" (want udp, shm, memnet or xdp)
	// ErrUnknownApproach: echo: unknown approach "json" (known: raw, onecopy, twocopy, cornflakes-hybrid, cornflakes-copy, cornflakes-zerocopy, protobuf, flatbuffers, capnp)
	// ErrConfig: echo: invalid config: shape 1x65536 has 65536 bytes, more than one datagram
	// ErrConfig: echo: invalid config: clients 5000 not in [1,4096]
}
