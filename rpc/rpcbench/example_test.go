package rpcbench_test

import (
	"context"
	"fmt"

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
	// latency_p50 grpc tcp us
	// latency_p99 grpc tcp us
	// latency_p50 rpc-raw memnet us
	// latency_p99 rpc-raw memnet us
}
