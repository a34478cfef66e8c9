package rpcbench

import (
	"math"
	"strings"
	"testing"
)

func TestRatios(t *testing.T) {
	recs := []Record{
		{"machine", "syscall_ns", "-", 1000, "ns"},
		{"small_rate", "rpc", "udp", 900, "rps"},
		{"small_rate", "raw", "udp", 1000, "rps"},
		{"small_rate", "grpc", "tcp", 20, "rps"},
		{"small_rate", "grpc-uds", "uds", 25, "rps"},
		{"latency_p50", "rpc", "udp", 10.5, "us"},
		{"latency_p50", "raw", "udp", 10, "us"},
		{"large_bw", "rpc", "udp", 8, "Gbit/s"},
		{"large_bw", "raw", "udp", 10, "Gbit/s"},
		{"loss_bw", "gobackn/0", "memnet", 6, "Gbit/s"},
		{"loss_bw", "sack/0", "memnet", 8, "Gbit/s"},
		{"loss_bw", "gobackn/0.001", "memnet", 3, "Gbit/s"},
		{"loss_bw", "sack/0.001", "memnet", 4, "Gbit/s"},
		{"factor", "all", "udp", 100, "rps"},
		{"factor", "no_cc", "udp", 110, "rps"},
		{"sessions", "1", "udp", 400, "rps"},
		{"sessions", "20000", "udp", 340, "rps"},
		{"zc_resp", "4096", "shm", 1000, "server_ns"},
		{"zc_resp", "1048576", "shm", 1100, "server_ns"},
	}
	got := map[string]float64{}
	for _, r := range Ratios(recs) {
		got[r.Test+" "+r.Variant+" "+r.Unit] = r.Value
	}
	want := map[string]float64{
		"small_rate rpc/raw ratio":              0.9,
		"small_rate rpc/grpc ratio":             45,
		"small_rate rpc/grpc-uds ratio":         36,
		"latency_p50 rpc-raw us":                0.5,
		"large_bw rpc/raw ratio":                0.8,
		"loss_bw gobackn/0.001/gobackn/0 ratio": 0.5,
		"loss_bw sack/0.001/sack/0 ratio":       0.5,
		"factor no_cc/all ratio":                1.1,
		"sessions 20000/1 ratio":                0.85,
		"zc_resp 1048576/4096 ratio":            1.1,
	}
	if len(got) != len(want) {
		t.Errorf("got %d derived records %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}

	lines := CheckTargets(append(recs, Ratios(recs)...))
	text := strings.Join(lines, "\n")
	for _, w := range []string{
		"small_rate   rpc/raw                0.90 ratio  small-RPC rate ≥ 90 % of the raw datapath's: met",
		"latency_p50  rpc-raw                0.50 us     median latency ≤ raw ping-pong + 1 µs: met",
		"small_rate   rpc/grpc-uds          36.00 ratio  small-RPC rate ≥ 10x gRPC-Go's over a Unix domain socket (issue 22, shm): met",
		"sessions     20000/1                0.85 ratio  20000 sessions within 10 % of one session's rate: MISSED",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("CheckTargets lacks %q:\n%s", w, text)
		}
	}
	if len(lines) != len(Targets) {
		t.Errorf("%d target lines, want %d:\n%s", len(lines), len(Targets), text)
	}
	// Nothing to compare: nothing derived, no target line.
	if d := Ratios(recs[:2]); len(d) != 0 {
		t.Errorf("Ratios of one side only: %v", d)
	}
	if l := CheckTargets(nil); len(l) != 0 {
		t.Errorf("CheckTargets(nil) = %v", l)
	}
}
