package rpcbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

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
		"latency_p50/rpc": true, "latency_p99/raw": true, "latency_p50/grpc": true}
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
