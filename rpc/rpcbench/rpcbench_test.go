package rpcbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/internal/netns"
)

func TestRunQuickSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	recs, err := Run(context.Background(), Options{Datapath: "memnet", Quick: true, Only: []string{"small_rate", "latency"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"small_rate/rpc": true, "small_rate/raw": true, "small_rate/grpc": true,
		"latency_p50/rpc": true, "latency_p99/raw": true, "latency_p50/grpc": true,
		"small_rate/grpc-uds": true, "latency_p50/grpc-uds": true, "latency_p99/grpc-uds": true, "small_rate/rpc/grpc-uds": true}
	want["small_rate/rpc/raw"], want["latency_p50/rpc-raw"] = true, true                                 // derived (Ratios)
	want["small_rate/typed"], want["latency_p50/typed"], want["small_rate/typed/rpc"] = true, true, true // typed.go
	want["machine/loadavg_start"], want["machine/loadavg_end"], want["machine/syscall_ns"] = true, true, true
	for _, r := range recs {
		delete(want, r.Test+"/"+r.Variant)
		// A difference (rpc-raw, typed-rpc) may be negative, an idle machine's load 0.
		mayBeZero := r.Variant == "rpc-raw" || r.Variant == "typed-rpc" || r.Test == "machine"
		if (r.Value <= 0 && !mayBeZero) || r.Unit == "" || r.Datapath == "" {
			t.Errorf("bad record %+v", r)
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing records %v in %+v", want, recs)
	}
}

func TestOptionErrors(t *testing.T) {
	if _, err := Run(context.Background(), Options{Datapath: "carrier-pigeon"}); !errors.Is(err, ErrOptions) {
		t.Fatalf("got %v", err)
	}
	if _, err := Run(context.Background(), Options{Only: []string{"nope"}}); !errors.Is(err, ErrOptions) {
		t.Fatalf("got %v", err)
	}
}

// udp-veth runs the RPC and the raw baseline over kernel UDP between two
// network namespaces (a veth link), names the datapath in its records and
// removes its namespaces.
func TestRunUDPVeth(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if err := netns.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	recs, err := Run(context.Background(), Options{Datapath: "udp-veth", Quick: true, Only: []string{"latency"}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Test == "latency_p50" && (r.Variant == "rpc" || r.Variant == "raw") {
			if r.Datapath != "udp-veth" || r.Value <= 0 {
				t.Errorf("bad record %+v", r)
			}
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d latency_p50 records for rpc and raw in %+v", n, recs)
	}
	if left, err := netns.List(fmt.Sprintf("%s-%d", vethPrefix, os.Getpid())); err != nil || len(left) != 0 {
		t.Fatalf("namespaces left: %v %v", left, err)
	}
}

// grpc-uds is gRPC-Go over a Unix domain socket: real calls over a real
// socket, whose directory is removed afterwards.
func TestGRPCUDS(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "cfrpcb-grpc*"))
	var lat []time.Duration
	r, err := grpcRate(grpcUDS, smallSize, 1, 100*time.Millisecond, &lat)
	if err != nil {
		t.Fatal(err)
	}
	if r <= 0 || len(lat) == 0 {
		t.Fatalf("rate %v, %d latencies", r, len(lat))
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "cfrpcb-grpc*"))
	if len(after) > len(before) {
		t.Fatalf("socket directories left: %v (before %v)", after, before)
	}
	if _, err := grpcRate("carrier-pigeon", smallSize, 1, time.Millisecond, nil); err == nil {
		t.Fatal("unknown network accepted")
	}
	// Every variant names its transport in its records.
	seen := map[string]string{}
	for _, g := range grpcVariants {
		seen[g.variant] = g.datapath
	}
	if seen["grpc-uds"] != "uds" || seen["grpc"] != "tcp" {
		t.Fatalf("variants %v", seen)
	}
}

// zc_resp measures the server's busy time per call for a 4 KiB and a
// 1 MiB response sent from registered memory, and their ratio.
func TestZCResp(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	recs, err := Run(context.Background(), Options{Datapath: "memnet", Quick: true, Only: []string{"zc_resp"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"4096": "server_ns", "1048576": "server_ns", "4096_rate": "rps", "1048576_rate": "rps", "1048576/4096": "ratio"}
	for _, r := range recs {
		if r.Test != "zc_resp" {
			continue
		}
		if u, ok := want[r.Variant]; ok && u == r.Unit && r.Value > 0 && r.Datapath == "memnet" {
			delete(want, r.Variant)
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing or bad records %v in %+v", want, recs)
	}
}

// Over shm every test but loss_bw (memnet's) runs between two endpoints
// that send from a shared space; grpc-uds is the IPC baseline next to it.
func TestRunShm(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	recs, err := Run(context.Background(), Options{Datapath: "shm", Quick: true, Only: []string{"latency", "zc_resp"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"latency_p50/rpc": "shm", "latency_p50/raw": "shm", "latency_p50/grpc-uds": "uds",
		"zc_resp/4096": "shm", "zc_resp/1048576": "shm", "zc_resp/1048576/4096": "shm"}
	for _, r := range recs {
		k := r.Test + "/" + r.Variant
		if dp, ok := want[k]; ok && dp == r.Datapath && (r.Value > 0 || r.Variant == "rpc-raw") {
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing records %v in %+v", want, recs)
	}
}
