package rpcbench

import (
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sampleRecords is a run's records as Run returns them (values from a
// quick udp run), ratios included.
func sampleRecords() []Record {
	return []Record{
		{"machine", "syscall_ns", "-", 1148, "ns"},
		{"small_rate", "rpc", "udp", 969862, "rps"},
		{"small_rate", "raw", "udp", 1229495, "rps"},
		{"loss_bw", "gobackn/0", "memnet", 5.946, "Gbit/s"},
		{"loss_bw", "sack/0", "memnet", 5.234, "Gbit/s"},
		{"loss_bw", "gobackn/1e-06", "memnet", 4.647, "Gbit/s"},
		{"loss_bw", "sack/1e-06", "memnet", 4.876, "Gbit/s"},
		{"loss_bw", "gobackn/0.001", "memnet", 2.863, "Gbit/s"},
		{"loss_bw", "sack/0.001", "memnet", 5.667, "Gbit/s"},
		{"loss_bw", "gobackn/0.01", "memnet", 0.537, "Gbit/s"},
		{"loss_bw", "sack/0.01", "memnet", 2.504, "Gbit/s"},
		{"factor", "all", "udp", 875093, "rps"},
		{"factor", "no_cc", "udp", 917356, "rps"},
		{"sessions", "1", "udp", 368083, "rps"},
		{"sessions", "100", "udp", 373508, "rps"},
		{"sessions", "20000", "udp", 330406, "rps"},
		{"sessions", "20000/1", "udp", 0.898, "ratio"},
		{"loss_bw", "sack/0.001/sack/0", "memnet", 1.083, "ratio"},
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	recs := sampleRecords()
	paths, err := WriteFiles(dir, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rpcbench.json", "rpcbench.csv", "loss_bw.png", "sessions.png", "factor.png"}
	if len(paths) != len(want) {
		t.Fatalf("wrote %v, want %v", paths, want)
	}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Fatalf("wrote %v, want %v", paths, want)
		}
	}
	var back []Record
	if b, err := os.ReadFile(filepath.Join(dir, "rpcbench.json")); err != nil || json.Unmarshal(b, &back) != nil || !reflect.DeepEqual(back, recs) {
		t.Fatalf("rpcbench.json does not round-trip: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, "rpcbench.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	_ = f.Close()
	if err != nil || len(rows) != len(recs)+1 || rows[0][0] != "test" || rows[2][1] != "rpc" || rows[2][3] != "969862" {
		t.Fatalf("rpcbench.csv: %v rows, err %v", len(rows), err)
	}
	for _, name := range want[2:] {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		_ = f.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Fatalf("%s: not a plot: %v", name, err)
		}
	}
}

// A run that measured none of the sweeps writes the data files only.
func TestWriteFilesWithoutSweeps(t *testing.T) {
	paths, err := WriteFiles(t.TempDir(), sampleRecords()[:3])
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 {
		t.Fatalf("wrote %v, want the JSON and CSV files only", paths)
	}
}
