package rpcbench

import (
	"context"
	"errors"
	"testing"
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
	for _, r := range recs {
		delete(want, r.Test+"/"+r.Variant)
		if r.Value <= 0 || r.Unit == "" || r.Datapath == "" {
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
