package kvbench_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/kvbench"
)

// The load generator drives a server it did not start (`cornflakes bench
// --server`, the paper's two-machine setup): it preloads the workload
// through its client, every response is checked during the warm-up, and
// the series come back without the server's CPU time.
func TestRunBenchRemoteServer(t *testing.T) {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20, LockThread: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	var log strings.Builder
	series, err := kvbench.RunBench(context.Background(), kvbench.BenchConfig{
		Workload: "ycsb:records=200,shape=2x2048,layout=multi", Serializers: []string{"cornflakes", "flatbuffers"},
		Quick: true, Duration: 100 * time.Millisecond, Budget: 2 * time.Second, BusyPoll: kvbench.BusyPollOff,
		Server: srv.Addr(), Local: netip.MustParseAddr("127.0.0.1"), Log: &log,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(series) != 2 {
		t.Fatalf("%d series", len(series))
	}
	for _, s := range series {
		if len(s.Points) == 0 || s.MaxRPSSaturated <= 0 {
			t.Errorf("%s/%s: %d points, saturated %v", s.Serializer, s.Mode, len(s.Points), s.MaxRPSSaturated)
		}
		if s.SaturatedServerCPUus != 0 {
			t.Errorf("%s: server CPU %v measured on a remote server", s.Serializer, s.SaturatedServerCPUus)
		}
	}
	if srv.Store().Len() == 0 {
		t.Fatal("the workload was not preloaded into the server")
	}
	if _, reqs, err := srv.Usage(); err != nil || reqs == 0 {
		t.Fatalf("the server served %d requests (%v)", reqs, err)
	}
}

// A remote server is reached over kernel UDP only.
func TestRunBenchRemoteServerNeedsUDP(t *testing.T) {
	_, err := kvbench.RunBench(context.Background(), kvbench.BenchConfig{
		Workload: "ycsb:records=10", Datapath: kv.DatapathMemnet, Server: netip.MustParseAddrPort("127.0.0.1:1"),
		Quick: true, Budget: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "udp") {
		t.Fatalf("got %v", err)
	}
}
