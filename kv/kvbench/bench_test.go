package kvbench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestBusyPollDecide: BusyPollAuto polls only with a core per endpoint
// plus one, off memnet, on a machine whose check lost little time; On and
// Off are obeyed.
func TestBusyPollDecide(t *testing.T) {
	quiet := bench.StallReport{Threads: 2, Window: time.Second, Lost: 20 * time.Millisecond}
	busy := bench.StallReport{Threads: 2, Window: time.Second, Lost: time.Second}
	enough := runtime.NumCPU() >= 2
	for _, tc := range []struct {
		mode      BusyPollMode
		endpoints int
		dp        string
		r         bench.StallReport
		want      bool
	}{
		{BusyPollOn, 1, kv.DatapathMemnet, busy, true},
		{BusyPollOff, 1, kv.DatapathUDP, quiet, false},
		{BusyPollAuto, 1, kv.DatapathUDP, quiet, enough},
		{BusyPollAuto, 1, kv.DatapathUDP, busy, false},
		{BusyPollAuto, 1, kv.DatapathMemnet, quiet, false},
		{BusyPollAuto, runtime.NumCPU(), kv.DatapathUDP, quiet, false},
	} {
		if got, why := tc.mode.decide(tc.endpoints, tc.dp, tc.r); got != tc.want || why == "" {
			t.Errorf("%v, %d endpoints, %s, lost %.0f%%: %v (%s), want %v", tc.mode, tc.endpoints, tc.dp, 100*tc.r.LostFraction(), got, why, tc.want)
		}
	}
}

// TestMeteredTarget: the load generator's target reports the server's CPU
// time and requests (bench.ServerMeter) as the server does, and the
// transport counters of both sides (bench.TransportMeter).
func TestMeteredTarget(t *testing.T) {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20, LockThread: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
	}()
	w, err := workload.Parse("ycsb:records=20,shape=1x64")
	if err != nil {
		t.Fatal(err)
	}
	if err := preload(context.Background(), cl, w); err != nil {
		t.Fatal(err)
	}
	var target bench.Target = meteredTarget{cl.Target(kv.CodecCFHybrid), srv, cl}
	var n uint64
	for deadline := time.Now().Add(5 * time.Second); ; { // the endpoint goroutines record their threads when they start
		if _, n, err = target.(bench.ServerMeter).ServerUsage(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, want, _ := srv.Usage(); err != nil || n != want || n < 20 {
		t.Fatalf("ServerUsage: %d requests (%v), server %d, want >= 20", n, err, want)
	}
	sv, cli, err := target.(bench.TransportMeter).TransportUsage()
	if err != nil || sv.RxPackets < 20 || cli.TxPackets < 20 {
		t.Fatalf("TransportUsage: server rx %d, client tx %d, %v", sv.RxPackets, cli.TxPackets, err)
	}
}

// TestRunBenchSessions: with BenchConfig.Sessions = 1 (not the default)
// the load generator's connections carry one session each and the
// saturation points run on four of them; every response is checked, the
// saturated rate and the server's CPU per request are measured, and an
// out-of-range session count is refused.
func TestRunBenchSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	series, err := RunBench(context.Background(), BenchConfig{
		Workload: "twitter:keys=300", Datapath: kv.DatapathShm, Serializers: []string{"cornflakes"},
		Quick: true, Duration: 100 * time.Millisecond, Budget: 2 * time.Second, BusyPoll: BusyPollOff, Sessions: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || series[0].MaxRPSSaturated <= 0 || series[0].SaturatedServerCPUus <= 0 {
		t.Fatalf("series %+v", series)
	}
	if _, err := RunBench(context.Background(), BenchConfig{Workload: "twitter:keys=300", Datapath: kv.DatapathShm, Serializers: []string{"cornflakes"},
		Quick: true, Duration: 100 * time.Millisecond, Budget: time.Second, BusyPoll: BusyPollOff, Sessions: kv.MaxSessions + 1}); err == nil {
		t.Fatal("Sessions > kv.MaxSessions accepted")
	}
}
