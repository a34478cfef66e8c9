package rpcbench_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cornflakes-go/cornflakes/rpc/rpcbench"
)

// Run measures the transport next to the raw datapath and gRPC-Go and
// returns one record per result (plus "machine" records: the load average
// and the cost of a system call, to read the others against), then the
// comparisons with the baselines (Ratios: here the latency difference to
// raw). Here only the latency test, over the in-memory network, with short
// measurements.
func ExampleRun() {
	recs, err := rpcbench.Run(context.Background(), rpcbench.Options{Datapath: "memnet", Quick: true, Only: []string{"latency"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		if r.Test != "machine" {
			fmt.Println(r.Test, r.Variant, r.Datapath, r.Unit)
		}
	}
	// Output:
	// latency_p50 rpc memnet us
	// latency_p99 rpc memnet us
	// latency_p50 raw memnet us
	// latency_p99 raw memnet us
	// latency_p50 typed memnet us
	// latency_p99 typed memnet us
	// latency_p50 typed-sync memnet us
	// latency_p99 typed-sync memnet us
	// latency_p50 grpc tcp us
	// latency_p99 grpc tcp us
	// latency_p50 grpc-uds uds us
	// latency_p99 grpc-uds uds us
	// latency_p50 rpc-raw memnet us
	// latency_p99 rpc-raw memnet us
	// latency_p50 typed-rpc memnet us
}

// Ratios derives the comparisons with the run's own baselines, and
// CheckTargets checks them against the transport's targets.
func ExampleRatios() {
	recs := []rpcbench.Record{
		{Test: "small_rate", Variant: "rpc", Datapath: "udp", Value: 1.2e6, Unit: "rps"},
		{Test: "small_rate", Variant: "raw", Datapath: "udp", Value: 1.6e6, Unit: "rps"},
		{Test: "small_rate", Variant: "grpc", Datapath: "tcp", Value: 2e4, Unit: "rps"},
	}
	derived := rpcbench.Ratios(recs)
	for _, r := range derived {
		fmt.Printf("%s %s %.2f %s\n", r.Test, r.Variant, r.Value, r.Unit)
	}
	for _, l := range rpcbench.CheckTargets(derived) {
		fmt.Println(l)
	}
	// Output:
	// small_rate rpc/raw 0.75 ratio
	// small_rate rpc/grpc 60.00 ratio
	// small_rate   rpc/raw                0.75 ratio  small-RPC rate ≥ 90 % of the raw datapath's: MISSED
	// small_rate   rpc/grpc              60.00 ratio  small-RPC rate ≥ 5x gRPC-Go's: met
}

// WriteTable prints the records, then the targets they cover.
func ExampleWriteTable() {
	recs := []rpcbench.Record{
		{Test: "large_bw", Variant: "rpc", Datapath: "udp", Value: 22, Unit: "Gbit/s"},
		{Test: "large_bw", Variant: "raw", Datapath: "udp", Value: 20, Unit: "Gbit/s"},
	}
	_ = rpcbench.WriteTable(os.Stdout, append(recs, rpcbench.Ratios(recs)...))
	// Output:
	// test         variant                    datapath          value unit
	// large_bw     rpc                        udp              22.000 Gbit/s
	// large_bw     raw                        udp              20.000 Gbit/s
	// large_bw     rpc/raw                    udp               1.100 ratio
	//
	// targets (docs/PERFORMANCE.md §4):
	//   large_bw     rpc/raw                1.10 ratio  8 MB bandwidth ≥ 80 % of raw: met
}
