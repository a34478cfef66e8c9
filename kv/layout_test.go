package kv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestLayoutLatency measures the round trip at a low open-loop load for
// each thread layout of RunBench (server polling policy x client waiting
// policy). It is a measurement, not a check: it only runs with
// CF_LAYOUT=1 and logs the percentiles (see docs/KV.md).
func TestLayoutLatency(t *testing.T) {
	if os.Getenv("CF_LAYOUT") == "" {
		t.Skip("measurement; set CF_LAYOUT=1 to run")
	}
	w, err := workload.Parse("ycsb:records=2000,shape=1x4096,layout=single")
	if err != nil {
		t.Fatal(err)
	}
	layouts := []struct {
		name   string
		spin   time.Duration
		lock   bool
		client bool
		poll   bool // ServerConfig.BusyPoll
	}{
		{"server-sleeps client-waits", -1, false, false, false},
		{"server-spins-50us client-waits", 50 * time.Microsecond, false, false, false},
		{"server-busypolls-locked client-waits", time.Hour, true, false, false},
		{"server-sleeps client-spins", -1, false, true, false},
		{"server-spins-50us client-spins", 50 * time.Microsecond, false, true, false},
		{"server-busypolls client-spins", 0, false, true, true}, // RunBench's BusyPoll
	}
	for _, l := range layouts {
		sc := ServerConfig{Datapath: DatapathUDP, LockThread: l.lock, BusyPoll: l.poll}
		sc.RPC.IdleSpin = l.spin
		srv, err := NewServer(sc)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := NewClient(ClientConfig{Server: srv.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		if err := preload(context.Background(), cl, w); err != nil {
			t.Fatal(err)
		}
		for _, rate := range []float64{1000, 5000, 20000} {
			r, err := bench.Run(context.Background(), bench.Config{Workload: w, Target: cl.Target(CodecCFHybrid), Rate: rate, Duration: 2 * time.Second, Check: true, Spin: l.client})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%-38s %5.0f rps: p50 %v p99 %v mean %v (achieved %.0f)", l.name, rate, r.P50, r.P99, r.Mean, r.AchievedRPS)
		}
		_ = cl.Close()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
