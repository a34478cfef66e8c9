package respbench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// loadChildEnv, when set, makes the test binary run LoadMain on its
// arguments instead of the tests: Run's native client in TestRunNative.
const loadChildEnv = "RESPBENCH_TEST_LOAD_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(loadChildEnv) == "1" {
		os.Exit(LoadMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// csvOut is what redis-benchmark 7.0 prints with --csv -t lrange_100.
const csvOut = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"LPUSH (needed to benchmark LRANGE)","142857.14","0.102","0.024","0.095","0.175","0.271","0.575"
"LRANGE_100 (first 100 elements)","65789.48","0.218","0.064","0.199","0.367","0.519","1.039"
`

func TestParseCSV(t *testing.T) {
	if v, err := ParseCSV([]byte(csvOut), "lrange_100"); err != nil || v != 65789.48 {
		t.Fatalf("lrange_100: %v %v", v, err)
	}
	if v, err := ParseCSV([]byte(csvOut), "lpush"); err != nil || v != 142857.14 {
		t.Fatalf("lpush: %v %v", v, err)
	}
	for _, bad := range []string{"", "x,y\n", `"test","rps"` + "\n" + `"GET","-nan"` + "\n", csvOut + `"GET","x"`} {
		if _, err := ParseCSV([]byte(bad), "get"); err == nil {
			t.Errorf("ParseCSV(%q) succeeded", bad)
		}
	}
}

func TestRequests(t *testing.T) {
	for _, c := range []struct {
		test          string
		budget        int64
		size, pipe, n int
	}{
		// -n given: as given (x4 pipelined), lrange_100 bounded to 400 MB of replies.
		{"get", 0, 4096, 1, 1000}, {"get", 0, 4096, 16, 4000}, {"lrange_100", 0, 64, 1, 1000},
		{"lrange_100", 0, 65536, 16, 500}, {"lrange_100", 0, 4096, 16, 1024},
		// A byte budget: at most budget/value bytes, at least the clients (50).
		{"set", 1 << 20, 64, 1, 1000}, {"set", 1 << 20, 4096, 1, 256}, {"set", 1 << 20, 4096, 16, 256},
		{"mset", 1 << 20, 4096, 16, 50}, {"mset", 10 << 20, 4096, 16, 256}, {"lrange_100", 100 << 20, 65536, 1, 50},
		{"lrange_100", 1 << 30, 64, 16, 4000},
	} {
		if n := requests(1000, c.budget, 50, c.test, c.size, c.pipe); n != c.n {
			t.Errorf("requests(%s, budget %d, %d, %d) = %d, want %d", c.test, c.budget, c.size, c.pipe, n, c.n)
		}
	}
}

func TestWriteTable(t *testing.T) {
	r := func(server string, v float64, unit string) Record {
		return Record{Test: "get", Variant: "d64/P1", Server: server, Value: v, Unit: unit, Min: v, Max: v, Rounds: 1}
	}
	recs := []Record{
		r(Cornflakes, 100, UnitRPS), r(Redis, 50, UnitRPS), r(Cornflakes, 1.5, UnitServerCPU), r(Redis, 3, UnitServerCPU),
		r(Cornflakes, 0.5, UnitServerCPUs), r(Cornflakes, 0.75, UnitClientCPUs), r(Redis, 0.25, UnitServerCPUs), r(Redis, 1, UnitClientCPUs),
		{Test: "get", Variant: "d64/P1", Server: Ratio, Value: 2, Unit: UnitRatio, Min: 1.5, Max: 2.5, Rounds: 3}, r(Ratio, 2, UnitCPURatio),
	}
	var b bytes.Buffer
	if err := WriteTable(&b, recs); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(b.String()); strings.Join(f[len(f)-10:], " ") != "get d64/P1 100 50 2.00 (1.50-2.50) 1.50 3.00 0.50/0.75 0.25/1.00" {
		t.Fatalf("table:\n%s", b.String())
	}
	dir := t.TempDir()
	paths, err := WriteFiles(dir, recs)
	if err != nil || len(paths) != 3 {
		t.Fatalf("WriteFiles: %v %v", paths, err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "resp-bench.csv"))
	if err != nil || !strings.Contains(string(csv), "get,d64/P1,cornflakes/redis,2,ratio,1.5,2.5,3") {
		t.Fatalf("resp-bench.csv: %v\n%s", err, csv)
	}
}

func TestNewRecord(t *testing.T) {
	for _, c := range []struct {
		xs            []float64
		med, min, max float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{1.2, 0.8, 1.0, 9, 1.1}, 1.1, 0.8, 9},
	} {
		in := slices.Clone(c.xs)
		r := newRecord("get", "d64/P1", Ratio, UnitRatio, in)
		if r.Value != c.med || r.Min != c.min || r.Max != c.max || r.Rounds != len(c.xs) || r.Test != "get" || r.Unit != UnitRatio {
			t.Errorf("newRecord(%v) = %+v", c.xs, r)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("newRecord sorted its argument: %v", in)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	if d, err := parseSchedstat([]byte("2211799 0 1\n")); err != nil || d != 2211799*time.Nanosecond {
		t.Fatalf("parseSchedstat = %v, %v", d, err)
	}
	for _, bad := range []string{"", "\n", "x 0 1", "-5 0 1"} {
		if _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q) succeeded", bad)
		}
	}
	// This process burns CPU between two readings: its run time grows.
	d0, err := processRuntime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for x, deadline := 0, time.Now().Add(time.Second); ; x++ {
		d1, err := processRuntime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if d1 > d0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run time stayed at %v for a second of spinning (%d loops)", d0, x)
		}
	}
	if _, err := processRuntime(1 << 30); err == nil {
		t.Error("processRuntime of no process succeeded")
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis; utime 150, stime 25 ticks.
	line := "1234 (redis-server *:6) x) S 1 1234 1234 0 -1 4194560 500 0 0 0 150 25 0 0 20 0 4 0 100 0 0\n"
	if d, err := parseStatCPU([]byte(line)); err != nil || d != 1750*time.Millisecond {
		t.Fatalf("parseStatCPU = %v, %v", d, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a 25 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded", bad)
		}
	}
	if d, err := processCPU(os.Getpid()); err != nil || d < 0 {
		t.Fatalf("processCPU(self) = %v, %v", d, err)
	}
}

func TestParseStatCPUOverflow(t *testing.T) {
	line := "1 (x) S 1 1 1 0 -1 0 0 0 0 0 9223372036854775807 9223372036854775807 0\n"
	if d, err := parseStatCPU([]byte(line)); err == nil {
		t.Fatalf("parseStatCPU of huge times = %v, want an error", d)
	}
}

func TestSelectTests(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string
		ok   bool
	}{
		{nil, Tests, true},
		{[]string{"mset", "set"}, []string{"set", "mset"}, true},
		{[]string{"lrange_100"}, []string{"lrange_100"}, true},
		{[]string{"get"}, nil, false},
		{[]string{"set", "sett"}, nil, false},
	} {
		got, err := selectTests(c.in)
		if (err == nil) != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("selectTests(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestDriverRun runs driver.run on shell scripts standing for
// redis-benchmark: the rates of its processes are summed from their
// output (stdout and stderr, read through one pipe each), and a failed
// process, an "error" in the output or a cancelled context fail the run.
func TestDriverRun(t *testing.T) {
	sh := func(script string) driver {
		// sh -c script sh <the flags>: the flags are the script's arguments.
		return driver{bin: "sh", prefix: []string{"-c", script, "sh"}, clients: 2, procs: 3}
	}
	ctx := context.Background()
	res, err := sh(`echo '"test","rps"'; echo '"SET","100.50"' >&2`).run(ctx, "1", "set", 64, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	if res.rps != 301.5 || res.requests != 9 {
		t.Errorf("rps %v requests %d, want 301.5 and 9", res.rps, res.requests)
	}
	if _, err := sh(`echo boom; exit 3`).run(ctx, "1", "set", 64, 1, 9); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failing process: %v, want an error with its output", err)
	}
	if _, err := sh(`echo '"test","rps"'; echo '"SET","1"'; echo 'Error: x'`).run(ctx, "1", "set", 64, 1, 9); err == nil || !strings.Contains(err.Error(), "reported errors") {
		t.Errorf("output with an error: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := sh(`exec sleep 600`).run(cctx, "1", "set", 64, 1, 9); err == nil { // killed, or the test times out
		t.Error("cancelled run: no error")
	}
}
