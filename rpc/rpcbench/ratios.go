package rpcbench

import (
	"fmt"
	"strings"
)

// Ratios derives from recs the comparisons the transport's targets are
// stated in, each as one more Record of the same test: variant "a/b" with
// unit "ratio" (a's value over b's), or "a-b" with a's unit for latency:
//
//	small_rate   rpc/raw, rpc/grpc, rpc/grpc-uds
//	latency_p50  rpc-raw (µs)
//	latency_p99  rpc-raw (µs)
//	large_bw     rpc/raw, sack/raw
//	loss_bw      sack/<p>/sack/0 and gobackn/<p>/gobackn/0 for every loss rate p
//	factor       <variant>/all
//	sessions     <n>/1
//	zc_resp      1048576/4096 (server busy time per call)
//
// A comparison whose records are missing (a test not run) is left out.
func Ratios(recs []Record) []Record {
	val := map[[2]string]Record{}
	var order [][2]string
	for _, r := range recs {
		k := [2]string{r.Test, r.Variant}
		if _, seen := val[k]; !seen {
			order = append(order, k)
		}
		val[k] = r
	}
	var out []Record
	ratio := func(test, a, b string) {
		x, ok1 := val[[2]string{test, a}]
		y, ok2 := val[[2]string{test, b}]
		if ok1 && ok2 && y.Value != 0 {
			out = append(out, Record{Test: test, Variant: a + "/" + b, Datapath: x.Datapath, Value: x.Value / y.Value, Unit: "ratio"})
		}
	}
	diff := func(test, a, b string) {
		x, ok1 := val[[2]string{test, a}]
		y, ok2 := val[[2]string{test, b}]
		if ok1 && ok2 {
			out = append(out, Record{Test: test, Variant: a + "-" + b, Datapath: x.Datapath, Value: x.Value - y.Value, Unit: x.Unit})
		}
	}
	ratio("small_rate", "rpc", "raw")
	ratio("small_rate", "rpc", "grpc")
	ratio("small_rate", "rpc", "grpc-uds")
	diff("latency_p50", "rpc", "raw")
	diff("latency_p99", "rpc", "raw")
	ratio("large_bw", "rpc", "raw")
	ratio("large_bw", "sack", "raw")
	ratio("zc_resp", "1048576", "4096")
	ratio("small_rate", "typed", "rpc") // typed.go
	ratio("small_rate", "typed", "grpc")
	diff("latency_p50", "typed", "rpc")
	for _, k := range order {
		switch test, v := k[0], k[1]; test {
		case "loss_bw":
			if mode, p, ok := strings.Cut(v, "/"); ok && p != "0" {
				ratio(test, v, mode+"/0")
			}
		case "factor":
			if v != "all" {
				ratio(test, v, "all")
			}
		case "sessions":
			if v != "1" {
				ratio(test, v, "1")
			}
		}
	}
	return out
}

// Target is one of the transport's performance targets (docs/PERFORMANCE.md
// §4) checked against a run's derived records.
type Target struct {
	Test, Variant string  // the Ratios record it reads
	Min, Max      float64 // a met target's value is ≥ Min, or ≤ Max when Max is set
	Text          string  // the target in words
}

// Targets are the transport's goals, in the terms of Ratios' records.
var Targets = []Target{
	{Test: "small_rate", Variant: "rpc/raw", Min: 0.90, Text: "small-RPC rate ≥ 90 % of the raw datapath's"},
	{Test: "small_rate", Variant: "rpc/grpc", Min: 5, Text: "small-RPC rate ≥ 5x gRPC-Go's"},
	{Test: "small_rate", Variant: "rpc/grpc-uds", Min: 10, Text: "small-RPC rate ≥ 10x gRPC-Go's over a Unix domain socket (issue 22, shm)"},
	{Test: "latency_p50", Variant: "rpc-raw", Max: 1, Text: "median latency ≤ raw ping-pong + 1 µs"},
	{Test: "large_bw", Variant: "rpc/raw", Min: 0.80, Text: "8 MB bandwidth ≥ 80 % of raw"},
	{Test: "loss_bw", Variant: "sack/0.001/sack/0", Min: 0.50, Text: "at 1e-3 loss ≥ 50 % of lossless bandwidth (selective retransmission)"},
	{Test: "sessions", Variant: "20000/1", Min: 0.90, Text: "20000 sessions within 10 % of one session's rate"},
	{Test: "zc_resp", Variant: "1048576/4096", Max: 1.2, Text: "a 1 MiB zero-copy response costs the server ≤ 1.2x a 4 KiB one (issue 22, shm)"},
}

// CheckTargets returns one line per target whose record is in recs (Run's
// records, which include Ratios'): the value, the target and whether it
// was met.
func CheckTargets(recs []Record) []string {
	var lines []string
	for _, t := range Targets {
		for _, r := range recs {
			if r.Test != t.Test || r.Variant != t.Variant {
				continue
			}
			met := r.Value >= t.Min
			if t.Max != 0 {
				met = r.Value <= t.Max
			}
			status := "met"
			if !met {
				status = "MISSED"
			}
			lines = append(lines, fmt.Sprintf("%-12s %-18s %8.2f %-6s %s: %s", r.Test, r.Variant, r.Value, r.Unit, t.Text, status))
		}
	}
	return lines
}
