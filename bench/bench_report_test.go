package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

// TestPipelineEndToEnd runs an experiment against two fake servers of
// different speeds through sweep, JSON, CSV, table and PNG.
func TestPipelineEndToEnd(t *testing.T) {
	exp := Experiment{Name: "e2e", Runs: []RunSpec{
		{Label: "google", Workload: "google:keys=300,values=1-3", Serializer: SerCornflakes, Mode: ModeHybrid, SerializeAndSend: true},
		{Label: "google", Workload: "google:keys=300,values=1-3", Serializer: SerProtobuf},
	}}
	var progress bytes.Buffer
	var maxClient atomic.Int32
	series, err := RunExperiment(context.Background(), exp, ExperimentConfig{
		Datapath:          "fake",
		SaturationRounds:  3,
		SaturationClients: 3,
		Load:              Config{Clients: 2, Duration: 120 * time.Millisecond, Check: true, Drain: 50 * time.Millisecond},
		Sweep:             SweepConfig{SLO: 5 * time.Millisecond, Start: 2000, Factor: 4, MaxRPS: 200_000, Refine: 1, Progress: &progress},
		Setup: func(ctx context.Context, run RunSpec, w workload.Workload) (Target, func() error, error) {
			service := 20 * time.Microsecond
			if run.Serializer != SerCornflakes {
				service = 40 * time.Microsecond
			}
			srv := newFakeServer(0)
			conn, _ := srv.Dial(0)
			if _, err := Preload(ctx, w, conn, 32, time.Second); err != nil {
				return nil, nil, err
			}
			conn.Close()
			srv.service = service
			target := meteredFake{srv}
			return dialRecorder{target, target, &maxClient}, func() error { return nil }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d series", len(series))
	}
	for _, s := range series {
		if len(s.Points) == 0 {
			t.Fatalf("%s: no points", s.Name())
		}
		if s.MaxRPSSaturated <= 0 || s.CPUs <= 0 {
			t.Fatalf("%s: saturated %v rps, %d cpus", s.Name(), s.MaxRPSSaturated, s.CPUs)
		}
		if want := map[string]float64{SerCornflakes: 20, SerProtobuf: 40}[s.Serializer]; s.SaturatedServerCPUus != want {
			t.Fatalf("%s: server CPU %v µs per request at saturation, want %v", s.Name(), s.SaturatedServerCPUus, want)
		}
		for _, p := range s.Points {
			if p.Mismatches != 0 {
				t.Fatalf("%s: mismatches", s.Name())
			}
		}
	}
	if !strings.Contains(progress.String(), "rps") {
		t.Errorf("no progress output: %q", progress.String())
	}
	// JSON in the schema
	var js bytes.Buffer
	if err := WriteJSON(&js, series); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"experiment", "workload", "serializer", "mode", "datapath", "max_rps_at_slo", "slo_p99_us", "points"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	pt := raw[0]["points"].([]any)[0].(map[string]any)
	for _, k := range []string{"offered_rps", "achieved_rps", "p50_us", "p99_us"} {
		if _, ok := pt[k]; !ok {
			t.Errorf("JSON point lacks %q", k)
		}
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil || len(back) != 2 || back[0].Serializer != SerCornflakes || back[1].Mode != "" {
		t.Fatalf("ReadJSON: %v %+v", err, back)
	}
	// CSV: header + one row per point
	var cb bytes.Buffer
	if err := WriteCSV(&cb, series); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + len(series[0].Points) + len(series[1].Points); len(rows) != want {
		t.Fatalf("%d CSV rows, want %d", len(rows), want)
	}
	if got := maxClient.Load(); got != 2 {
		t.Fatalf("highest client index dialed %d, want 2 (SaturationClients 3)", got)
	}
	// table
	var tb bytes.Buffer
	if err := WriteTable(&tb, series); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "cornflakes/hybrid") || !strings.Contains(tb.String(), "protobuf") {
		t.Fatalf("table:\n%s", tb.String())
	}
	// PNG plots
	dir := t.TempDir()
	if d := os.Getenv("BENCH_PLOT_DIR"); d != "" {
		dir = d
	}
	paths, err := WriteFiles(dir, "", series)
	if err != nil || len(paths) != 3 {
		t.Fatalf("files %v %v", paths, err)
	}
	for _, p := range paths[:2] {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	paths = paths[2:]
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("plot %v", b)
	}
	if filepath.Base(paths[0]) != "e2e_google.png" {
		t.Errorf("plot name %s", paths[0])
	}
}

func TestPreloadFailure(t *testing.T) {
	w := mustParse(t, "ycsb:records=50")
	srv := newFakeServer(0)
	srv.failPuts = true
	conn, _ := srv.Dial(0)
	if _, err := Preload(context.Background(), w, conn, 8, time.Second); !errors.Is(err, ErrPreload) {
		t.Fatalf("err = %v, want ErrPreload", err)
	}
	srv.failPuts, srv.silent = false, true
	conn, _ = srv.Dial(0)
	if _, err := Preload(context.Background(), w, conn, 8, 30*time.Millisecond); !errors.Is(err, ErrPreload) {
		t.Fatalf("silent: err = %v, want ErrPreload", err)
	}
}

func TestTableObjectsAndRatio(t *testing.T) {
	sas := true
	mk := func(ser, mode string, rps, objs float64) Series {
		return Series{Experiment: "table2", Label: "cdn", Serializer: ser, Mode: mode, SerializeAndSend: &sas, Unit: "objects",
			MaxRPSAtSLO: rps, MaxUnitsAtSLO: objs, SLOP99us: 500,
			Points: []Point{{OfferedRPS: rps, AchievedRPS: rps, P50us: 10, P99us: 100, MeetsSLO: true}}}
	}
	pb := mk(SerProtobuf, "", 40000, 10000)
	pb.SerializeAndSend = nil
	var b bytes.Buffer
	if err := WriteTable(&b, []Series{mk(SerCornflakes, ModeHybrid, 80000, 20000), pb}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"max objects/s at SLO", "20.0k", "10.0k", "2.00x", "table2 cdn"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestPreloadReordered preloads list workloads (PutList followed by
// AppendToList) through a connection that reorders everything in flight:
// Preload must wait before each AppendToList, or list segments are lost and
// the checked load run below sees mismatches.
func TestPreloadReordered(t *testing.T) {
	for _, spec := range []string{"cdn:objects=50", "google:keys=200,values=1-15"} {
		t.Run(spec, func(t *testing.T) {
			w := mustParse(t, spec)
			srv := newFakeServer(0)
			if _, err := Preload(context.Background(), w, &reorderConn{store: srv.store}, 16, time.Second); err != nil {
				t.Fatal(err)
			}
			r, err := Run(context.Background(), Config{Workload: w, Target: srv, Outstanding: 4, Duration: 300 * time.Millisecond, Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Received == 0 || r.Mismatches != 0 {
				t.Fatalf("received %d, %d mismatches (first: %s)", r.Received, r.Mismatches, r.FirstMismatch)
			}
		})
	}
}

// TestTableSaturated: when no series meets the SLO, MeetsNone says so and
// the table still ranks the serializers by their saturated throughput.
func TestTableSaturated(t *testing.T) {
	mk := func(ser string, sat float64) Series {
		return Series{Experiment: "default", Label: "twitter", Serializer: ser, SLOP99us: 500, MaxRPSSaturated: sat,
			Points: []Point{{OfferedRPS: 1000, AchievedRPS: 1000, P50us: 300, P99us: 9000}}}
	}
	series := []Series{mk(SerCornflakes, 30000), mk(SerProtobuf, 20000), mk(SerCapnp, 0)}
	if !MeetsNone(series) {
		t.Fatal("MeetsNone = false with no passing series")
	}
	var b bytes.Buffer
	if err := WriteTable(&b, series); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max rps saturated", "30.0k", "20.0k", "1.50x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	series[1].MaxRPSAtSLO = 1000
	if MeetsNone(series) || MeetsNone(nil) {
		t.Fatal("MeetsNone = true with a passing series / no series")
	}
}

// Compare puts the table's comparisons into every compared series (for
// the JSON output): against the best baseline of its group, or against the
// group's first series when the group has only Cornflakes modes; the
// reference itself and values missing on either side get none.
func TestCompare(t *testing.T) {
	mk := func(exp, label, ser, mode string, atSLO, sat, cpu float64) Series {
		return Series{Experiment: exp, Label: label, Serializer: ser, Mode: mode, MaxRPSAtSLO: atSLO, MaxRPSSaturated: sat, SaturatedServerCPUus: cpu}
	}
	series := []Series{
		mk("default", "twitter", SerCornflakes, ModeHybrid, 30000, 180000, 5),
		mk("default", "twitter", SerProtobuf, "", 20000, 120000, 8),
		mk("default", "twitter", SerFlatBuffers, "", 10000, 200000, 4),
		mk("table4", "ycsb", SerCornflakes, ModeHybrid, 1000, 0, 2),
		mk("table4", "ycsb", SerCornflakes, ModeCopy, 2000, 0, 4),
	}
	Compare(series)
	f := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%.2f", *p)
	}
	var got []string
	for _, s := range series {
		got = append(got, fmt.Sprintf("%s %s: %q %s %s %s", s.group(false), s.Name(), s.VsReference,
			f(s.VsReferenceAtSLO), f(s.VsReferenceSaturated), f(s.VsReferenceServerCPU)))
	}
	want := []string{
		`default twitter cornflakes/hybrid: "best baseline" 1.50 0.90 0.80`,
		`default twitter protobuf: "" nil nil nil`,
		`default twitter flatbuffers: "" nil nil nil`,
		`table4 ycsb cornflakes/hybrid: "" nil nil nil`,
		`table4 ycsb cornflakes/copy: "cornflakes/hybrid" 2.00 nil 0.50`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Compare:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, series[:1]); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"vs_reference": "best baseline"`, `"vs_reference_at_slo": 1.5`, `"vs_reference_saturated": 0.9`, `"vs_reference_server_cpu": 0.8`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("JSON lacks %s:\n%s", w, b.String())
		}
	}
}

// TestServerCPUPerRequest: a Target that is a ServerMeter gets its server's
// CPU time per request reported with each point (and plain Targets none).
func TestServerCPUPerRequest(t *testing.T) {
	w := mustParse(t, "ycsb:records=500,shape=1x64")
	srv := newFakeServer(7 * time.Microsecond)
	for _, c := range []struct {
		target Target
		want   time.Duration
	}{{meteredFake{srv}, 7 * time.Microsecond}, {srv, 0}} {
		r, err := Run(context.Background(), Config{Workload: w, Target: c.target, Rate: 2000, Duration: 300 * time.Millisecond, Check: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.ServerCPU != c.want || r.Received == 0 {
			t.Fatalf("%T: server CPU %v per request, want %v (%+v)", c.target, r.ServerCPU, c.want, r)
		}
		if r.ServerSleeps != 0 {
			t.Fatalf("%T: %v sleeps per request from a target that does not count them", c.target, r.ServerSleeps)
		}
	}
}

// TestServerSleepsPerRequest: a ServerMeter that is also a SleepMeter gets
// its server's sleeps per request reported with each point.
func TestServerSleepsPerRequest(t *testing.T) {
	w := mustParse(t, "ycsb:records=500,shape=1x64")
	srv := newFakeServer(7 * time.Microsecond)
	r, err := Run(context.Background(), Config{Workload: w, Target: sleepingFake{meteredFake{srv}}, Rate: 2000, Duration: 300 * time.Millisecond, Check: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// served/4 sampled before and after: within one sleep of a quarter.
	n := float64(r.Received)
	if r.Received < 100 || r.ServerSleeps < 0.2 || r.ServerSleeps > 0.3 || r.ServerCPU != 7*time.Microsecond {
		t.Fatalf("%v sleeps per request over ~%v requests, want ~0.25 (%+v)", r.ServerSleeps, n, r)
	}
}

func TestMedianSaturation(t *testing.T) {
	for _, c := range []struct {
		rps           []float64
		want, wantCPU float64
	}{{nil, 0, 0}, {[]float64{5}, 5, 95}, {[]float64{9, 1, 5}, 5, 95}, {[]float64{4, 1}, 4, 99}} {
		var rs []Result
		for _, r := range c.rps {
			// the server CPU falls as the rate rises: its median is taken on its own
			rs = append(rs, Result{AchievedRPS: r, P99: time.Duration(r) * time.Microsecond, ServerCPU: time.Duration(100-r) * time.Microsecond})
		}
		got, p99, cpu := medianSaturation(rs)
		if got != c.want || (got > 0 && p99 != got) || cpu != c.wantCPU {
			t.Errorf("%v: median %v p99 %v cpu %v, want %v", c.rps, got, p99, cpu, c.want)
		}
	}
}
