package echo

import (
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sampleResults is a small run as Run and Compare return it: three
// approaches over two shapes (values from a quick memnet run), one
// without a raw baseline.
func sampleResults() []Result {
	res := []Result{
		{Approach: "raw", Datapath: "memnet", Shape: "1x1024", Clients: 16, ThroughputRPS: 412000, P50us: 36.5, P99us: 61.2, ServerNsPerReq: 820},
		{Approach: "raw", Datapath: "memnet", Shape: "tree5", Clients: 16, ThroughputRPS: 398000, P50us: 38.1, P99us: 66.0, ServerNsPerReq: 905},
		{Approach: "cornflakes-hybrid", Datapath: "memnet", Shape: "1x1024", Clients: 16, ThroughputRPS: 371000, P50us: 40.2, P99us: 70.9, ServerNsPerReq: 1210},
		{Approach: "cornflakes-hybrid", Datapath: "memnet", Shape: "tree5", Clients: 16, ThroughputRPS: 301000, P50us: 49.7, P99us: 88.4, ServerNsPerReq: 1730},
		{Approach: "protobuf", Datapath: "memnet", Shape: "1x1024", Clients: 16, ThroughputRPS: 289000, P50us: 51.3, P99us: 97.5, ServerNsPerReq: 2050},
		{Approach: "protobuf", Datapath: "memnet", Shape: "tree5", Clients: 16, ThroughputRPS: 197000, P50us: 77.0, P99us: 140.25, ServerNsPerReq: 3480},
	}
	Compare(res)
	res[5].VsRawThroughput, res[5].VsRawServerCPU = 0, 0 // as if tree5 had no raw run
	return res
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	res := sampleResults()
	paths, err := WriteFiles(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"echo.json", "echo.csv", "echo.png", "echo-latency.png"}
	if len(paths) != len(want) {
		t.Fatalf("wrote %v, want %v", paths, want)
	}
	for i, p := range paths {
		if p != filepath.Join(dir, want[i]) {
			t.Fatalf("wrote %v, want %v in %s", paths, want, dir)
		}
	}

	// echo.json: the results, round-tripping through the JSON fields
	// (diagnostics are not part of it; the sample has none).
	var back []Result
	if b, err := os.ReadFile(paths[0]); err != nil || json.Unmarshal(b, &back) != nil || !reflect.DeepEqual(back, res) {
		t.Fatalf("echo.json does not round-trip (err %v):\n%+v\nwant\n%+v", err, back, res)
	}

	// echo.csv: the JSON field names as header, one row per result, an
	// omitted (omitempty) field as an empty cell.
	f, err := os.Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	header := []string{"approach", "datapath", "shape", "clients", "throughput_rps", "p50_us", "p99_us", "server_cpu_ns_per_req", "xdp_mode", "vs_raw_throughput", "vs_raw_server_cpu"}
	if len(rows) != len(res)+1 || !reflect.DeepEqual(rows[0], header) {
		t.Fatalf("echo.csv: %d rows, header %q; want %d rows, header %q", len(rows), rows[0], len(res)+1, header)
	}
	col := func(row int, name string) string {
		for i, h := range header {
			if h == name {
				return rows[row][i]
			}
		}
		t.Fatalf("no column %q", name)
		return ""
	}
	if col(3, "approach") != "cornflakes-hybrid" || col(3, "clients") != "16" || col(3, "throughput_rps") != "371000" ||
		col(6, "p99_us") != "140.25" || col(1, "vs_raw_throughput") != "1" || col(1, "xdp_mode") != "" || col(6, "vs_raw_throughput") != "" {
		t.Fatalf("echo.csv rows wrong:\n%q", rows)
	}
	// Every JSON field of a result is a column.
	var keys map[string]any
	full := res[0]
	full.XDPMode = "copy"
	b, _ := json.Marshal(full)
	_ = json.Unmarshal(b, &keys)
	if len(keys) != len(header) {
		t.Fatalf("JSON has fields %v, CSV header %v", keys, header)
	}

	for _, p := range paths[2:] {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
			t.Fatalf("%s: %v, too small for a plot", p, b)
		}
	}
}

// A run without results (every approach skipped) writes the data files
// only, the JSON as [] as --json prints it.
func TestWriteFilesEmpty(t *testing.T) {
	dir := t.TempDir()
	paths, err := WriteFiles(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 {
		t.Fatalf("wrote %v, want echo.json and echo.csv only", paths)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "echo.json")); err != nil || string(b) != "[]\n" {
		t.Fatalf("echo.json = %q, %v", b, err)
	}
}

// Results mixing datapaths still plot, one bar per approach and datapath.
func TestWriteFilesMixedDatapaths(t *testing.T) {
	res := sampleResults()
	for _, r := range sampleResults() {
		r.Datapath = "udp"
		res = append(res, r)
	}
	paths, err := WriteFiles(t.TempDir(), res)
	if err != nil || len(paths) != 4 {
		t.Fatalf("wrote %v, %v", paths, err)
	}
}
