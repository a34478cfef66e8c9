package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/kvbench"
)

// TestBenchJSON runs a tiny `cornflakes bench --json` over memnet (kernel
// UDP is the default; memnet keeps the test independent of the network)
// and over shm (server and load generator in this process), and checks
// the documented JSON fields and the files written.
func TestBenchJSON(t *testing.T) {
	for _, dp := range []string{"memnet", "shm"} {
		t.Run(dp, func(t *testing.T) { testBenchJSON(t, dp) })
	}
}

func testBenchJSON(t *testing.T, dp string) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"bench", "--json", "--quick", "--datapath", dp, "--workload", "ycsb:records=200,shape=2x2048,layout=multi",
		"--duration", "100ms", "--budget", "3s", "--serializers", "cornflakes,capnp", "--busy-poll=false", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("stdout is not one JSON array: %v\n%s", err, out.String())
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 (cornflakes, capnp)", len(recs))
	}
	for _, r := range recs {
		for _, k := range []string{"experiment", "workload", "serializer", "mode", "datapath", "max_rps_at_slo", "slo_p99_us", "points"} {
			if _, ok := r[k]; !ok {
				t.Errorf("record lacks %q: %v", k, r)
			}
		}
		if r["datapath"] != dp {
			t.Errorf("datapath %v, want %s", r["datapath"], dp)
		}
		pts, _ := r["points"].([]any)
		if len(pts) == 0 {
			t.Fatalf("no points: %v", r)
		}
		for _, k := range []string{"offered_rps", "achieved_rps", "p50_us", "p99_us"} {
			if _, ok := pts[0].(map[string]any)[k]; !ok {
				t.Errorf("point lacks %q", k)
			}
		}
	}
	for _, f := range []string{"results.json", "results.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if pngs, _ := filepath.Glob(filepath.Join(dir, "*.png")); len(pngs) == 0 {
		t.Error("no plot written")
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--bogus"},
		{"bench", "--busy-poll=sometimes"},
		{"bench", "extra"},
		{"bench", "--experiment", "table1", "--workload", "cdn"},
		{"bench", "--anchor", "1.5"},
		{"bench", "--anchor", "-0.5"},
		{"bench", "--sessions", "-1"},
		{"bench", "--sessions", "65"},
		{"kv"},
		{"kv", "serve", "--addr", "nonsense"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
	for _, args := range [][]string{
		{"bench", "--experiment", "nope", "--out", t.TempDir()},
		{"bench", "--serializers", "json", "--out", t.TempDir()},
		{"kv", "serve", "--serializer", "json"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "unknown") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestKVServe(t *testing.T) {
	for _, extra := range [][]string{nil, {"--busy-poll"}, {"--datapath", "shm"}} {
		var out, errb bytes.Buffer
		code := run(append([]string{"kv", "serve", "--duration", "200ms", "--workload", "ycsb:records=50"}, extra...), &out, &errb)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr:\n%s", extra, code, errb.String())
		}
		if !strings.Contains(out.String(), "listening on 127.0.0.1:") || !strings.Contains(errb.String(), "50 keys") {
			t.Errorf("%v: stdout %q stderr %q", extra, out.String(), errb.String())
		}
	}
}

// TestBenchMarkdown checks that --markdown prints one Markdown table per group.
func TestBenchMarkdown(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "--markdown", "--quick", "--datapath", "memnet", "--workload", "ycsb:records=200,shape=2x2048,layout=multi",
		"--duration", "100ms", "--budget", "2s", "--serializers", "cornflakes,protobuf", "--out", t.TempDir()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	s := out.String()
	if !strings.HasPrefix(s, "#### ") || !strings.Contains(s, "| serializer | max rps at SLO |") || !strings.Contains(s, "| cornflakes/hybrid | ") || !strings.Contains(s, "| protobuf | ") {
		t.Fatalf("markdown:\n%s", s)
	}
}

// TestBusyPollFlag: --busy-poll takes auto, a boolean, or nothing (true).
func TestBusyPollFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want kvbench.BusyPollMode
	}{
		{nil, kvbench.BusyPollAuto},
		{[]string{"--busy-poll"}, kvbench.BusyPollOn},
		{[]string{"--busy-poll=false"}, kvbench.BusyPollOff},
		{[]string{"--busy-poll=auto"}, kvbench.BusyPollAuto},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var f busyPollFlag
		fs.Var(&f, "busy-poll", "")
		if err := fs.Parse(tc.args); err != nil || f.mode != tc.want {
			t.Errorf("%v: mode %v, err %v; want %v", tc.args, f.mode, err, tc.want)
		}
	}
}

// `cornflakes bench --server` drives a server started on its own, as
// `cornflakes kv serve` runs one (here in-process, on loopback).
func TestBenchRemoteServer(t *testing.T) {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var out, errb bytes.Buffer
	code := run([]string{"bench", "--json", "--quick", "--server", srv.Addr().String(), "--local", "127.0.0.1",
		"--workload", "ycsb:records=200,shape=2x2048,layout=multi", "--duration", "100ms", "--budget", "2s",
		"--serializers", "vtprotobuf", "--busy-poll=false", "--out", t.TempDir()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("%d records (%v):\n%s", len(recs), err, out.String())
	}
	if srv.Store().Len() == 0 {
		t.Fatal("nothing preloaded into the server")
	}
	for _, bad := range [][]string{{"--server", "localhost"}, {"--local", "nowhere"}} {
		var e bytes.Buffer
		if code := run(append([]string{"bench"}, bad...), &bytes.Buffer{}, &e); code != 2 || !strings.Contains(e.String(), bad[0]) {
			t.Errorf("%v: exit %d, stderr %q", bad, code, e.String())
		}
	}
}

// runBenchOn runs the same comparison on several datapaths (the main job:
// shm next to udp) and the table shows one group per datapath.
func TestBenchOnDatapaths(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if len(mainJobDatapaths) != 2 || mainJobDatapaths[0] != kv.DatapathShm || mainJobDatapaths[1] != kv.DatapathUDP {
		t.Fatalf("main job datapaths %v, want shm then udp", mainJobDatapaths)
	}
	var errb bytes.Buffer
	cfg := kvbench.BenchConfig{Workload: "ycsb:records=200,shape=2x2048,layout=multi", Quick: true, Duration: 100 * time.Millisecond,
		Budget: 2 * time.Second, Serializers: []string{"cornflakes", "flatbuffers"}, BusyPoll: kvbench.BusyPollOff}
	dps := []string{kv.DatapathMemnet, kv.DatapathUDP}
	if slices.Contains(datapath.Kinds(), kv.DatapathShm) {
		dps = []string{kv.DatapathShm, kv.DatapathUDP}
	}
	series, err := runBenchOn(context.Background(), cfg, append(dps, "carrier-pigeon"), &errb)
	if err == nil || !strings.Contains(err.Error(), "carrier-pigeon") || !strings.Contains(errb.String(), "carrier-pigeon") {
		t.Fatalf("a failing datapath: err %v, stderr:\n%s", err, errb.String())
	}
	if len(series) != 4 || series[0].Datapath != dps[0] || series[3].Datapath != dps[1] {
		t.Fatalf("%d series, want 2 on %s then 2 on %s", len(series), dps[0], dps[1])
	}
	bench.Compare(series)
	var tb bytes.Buffer
	if err := bench.WriteTable(&tb, series); err != nil {
		t.Fatal(err)
	}
	for _, dp := range dps {
		if !strings.Contains(tb.String(), "workload ycsb "+dp+" (SLO") {
			t.Errorf("table lacks the %s group:\n%s", dp, tb.String())
		}
	}
}
