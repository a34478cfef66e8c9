package rpcbench_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cornflakes-go/cornflakes/rpc/rpcbench"
)

// CheckTargets judges a run against the transport's goals (Targets): one
// line per goal whose derived record the run has. A goal with Min is met
// at or above it, one with Max (the latency overhead, in µs) at or below
// it; goals of tests that did not run are left out.
func ExampleCheckTargets() {
	recs := []rpcbench.Record{
		{Test: "latency_p50", Variant: "rpc", Datapath: "udp", Value: 14.2, Unit: "us"},
		{Test: "latency_p50", Variant: "raw", Datapath: "udp", Value: 13.5, Unit: "us"},
		{Test: "latency_p99", Variant: "rpc", Datapath: "udp", Value: 31.0, Unit: "us"},
		{Test: "latency_p99", Variant: "raw", Datapath: "udp", Value: 24.0, Unit: "us"},
		{Test: "loss_bw", Variant: "sack/0", Datapath: "memnet", Value: 5.2, Unit: "Gbit/s"},
		{Test: "loss_bw", Variant: "sack/0.001", Datapath: "memnet", Value: 2.1, Unit: "Gbit/s"},
	}
	recs = append(recs, rpcbench.Ratios(recs)...)
	for _, line := range rpcbench.CheckTargets(recs) {
		fmt.Println(line)
	}
	// Output:
	// latency_p50  rpc-raw                0.70 us     median latency ≤ raw ping-pong + 1 µs: met
	// loss_bw      sack/0.001/sack/0      0.40 ratio  at 1e-3 loss ≥ 50 % of lossless bandwidth (selective retransmission): MISSED
}

// The goals themselves, in the terms of Ratios' records.
func ExampleTargets() {
	for _, t := range rpcbench.Targets {
		bound := fmt.Sprintf(">= %g", t.Min)
		if t.Max != 0 {
			bound = fmt.Sprintf("<= %g", t.Max)
		}
		fmt.Printf("%-11s %-17s %-6s %s\n", t.Test, t.Variant, bound, t.Text)
	}
	// Output:
	// small_rate  rpc/raw           >= 0.9 small-RPC rate ≥ 90 % of the raw datapath's
	// small_rate  rpc/grpc          >= 5   small-RPC rate ≥ 5x gRPC-Go's
	// small_rate  rpc/grpc-uds      >= 10  small-RPC rate ≥ 10x gRPC-Go's over a Unix domain socket (issue 22, shm)
	// latency_p50 rpc-raw           <= 1   median latency ≤ raw ping-pong + 1 µs
	// large_bw    rpc/raw           >= 0.8 8 MB bandwidth ≥ 80 % of raw
	// loss_bw     sack/0.001/sack/0 >= 0.5 at 1e-3 loss ≥ 50 % of lossless bandwidth (selective retransmission)
	// sessions    20000/1           >= 0.9 20000 sessions within 10 % of one session's rate
	// zc_resp     1048576/4096      <= 1.2 a 1 MiB zero-copy response costs the server ≤ 1.2x a 4 KiB one (issue 22, shm)
}

// WriteFiles leaves a run's records behind as JSON and CSV, plus a PNG for
// each sweep the run measured (here the loss sweep only).
func ExampleWriteFiles() {
	dir, err := os.MkdirTemp("", "rpcbench-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	recs := []rpcbench.Record{
		{Test: "loss_bw", Variant: "sack/0", Datapath: "memnet", Value: 5, Unit: "Gbit/s"},
		{Test: "loss_bw", Variant: "sack/0.001", Datapath: "memnet", Value: 4.5, Unit: "Gbit/s"},
		{Test: "loss_bw", Variant: "sack/0.01", Datapath: "memnet", Value: 2.5, Unit: "Gbit/s"},
	}
	paths, err := rpcbench.WriteFiles(filepath.Join(dir, "out"), append(recs, rpcbench.Ratios(recs)...))
	if err != nil {
		panic(err)
	}
	for _, p := range paths {
		fmt.Println(filepath.Base(p))
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "rpcbench.csv"))
	if err != nil {
		panic(err)
	}
	fmt.Print(string(csv))
	// Output:
	// rpcbench.json
	// rpcbench.csv
	// loss_bw.png
	// test,variant,datapath,value,unit
	// loss_bw,sack/0,memnet,5,Gbit/s
	// loss_bw,sack/0.001,memnet,4.5,Gbit/s
	// loss_bw,sack/0.01,memnet,2.5,Gbit/s
	// loss_bw,sack/0.001/sack/0,memnet,0.9,ratio
	// loss_bw,sack/0.01/sack/0,memnet,0.5,ratio
}

// Run checks its options before it measures anything: Only takes names
// from Tests.
func ExampleOptions() {
	fmt.Println(rpcbench.Tests)
	_, err := rpcbench.Run(context.Background(), rpcbench.Options{Only: []string{"latency", "throughput"}})
	fmt.Println(err)
	fmt.Println(errors.Is(err, rpcbench.ErrOptions))
	// Output:
	// [small_rate latency large_bw loss_bw factor sessions zc_resp]
	// rpcbench: invalid options: unknown test "throughput"
	// true
}
