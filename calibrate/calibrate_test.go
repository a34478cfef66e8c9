package calibrate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"32768K", 32 << 20, true},
		{"1024 KB", 1 << 20, true},
		{"32M", 32 << 20, true},
		{"512", 512, true},
		{"", 0, false},
		{"-4K", 0, false},
		{"abc", 0, false},
		{"99999999999999G", 0, false},
	} {
		got, ok := parseSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseSize(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLLCFrom(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct{ typ, level, size string }{{"Data", "1", "32K"}, {"Instruction", "1", "32K"}, {"Unified", "2", "512K"}, {"Unified", "3", "16384K"}} {
		d := filepath.Join(dir, "cache", "index"+string(rune('0'+i)))
		write(filepath.Join(d, "type"), c.typ)
		write(filepath.Join(d, "level"), c.level)
		write(filepath.Join(d, "size"), c.size)
	}
	if n, src := llcFrom(filepath.Join(dir, "cache"), "/nonexistent"); n != 16<<20 || src != "sysfs L3" {
		t.Fatalf("sysfs: %d %s", n, src)
	}
	write(filepath.Join(dir, "cpuinfo"), "model name\t: X\ncache size\t: 1024 KB\n")
	if n, _ := llcFrom(filepath.Join(dir, "none"), filepath.Join(dir, "cpuinfo")); n != DefaultLLC {
		t.Fatalf("a 1 MiB cpuinfo cache (per-core L2) must not be taken as the LLC: %d", n)
	}
	write(filepath.Join(dir, "cpuinfo2"), "cache size\t: 36608 KB\n")
	if n, src := llcFrom(filepath.Join(dir, "none"), filepath.Join(dir, "cpuinfo2")); n != 36608<<10 || src != "/proc/cpuinfo" {
		t.Fatalf("cpuinfo: %d %s", n, src)
	}
}

func TestRecommend(t *testing.T) {
	c := func(size int, gain float64) Cell { return Cell{EntryBytes: size, GainPct: gain} }
	for _, tc := range []struct {
		name  string
		cells []Cell
		want  int
	}{
		{"crossover", []Cell{c(64, -20), c(256, -3), c(512, 4), c(1024, 10), c(4096, 30)}, 512},
		{"noisy below", []Cell{c(64, 5), c(128, -2), c(512, 4), c(1024, 1)}, 512},
		{"all win", []Cell{c(64, 1), c(128, 2)}, 64},
		{"never", []Cell{c(64, -1), c(4096, -0.5)}, -1},
		{"one of two cells at a size loses", []Cell{c(512, 3), c(512, -1), c(1024, 2)}, 1024},
		{"empty", nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Recommend(tc.cells); got != tc.want {
				t.Fatalf("Recommend = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Datapath: "tcp"},
		{Entries: []int{0}},
		{Entries: []int{MaxEntries + 1}},
		{TotalSizes: []int{MaxTotal + 1}},
		{WorkingSet: -1},
		{Phase: time.Nanosecond},
	} {
		if _, err := Run(c); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

// TestRunSmall runs a tiny sweep over both datapaths and writes the
// reports.
func TestRunSmall(t *testing.T) {
	for _, dp := range []string{"memnet", "udp"} {
		t.Run(dp, func(t *testing.T) {
			res, err := Run(Config{Datapath: dp, Entries: []int{1, 4}, TotalSizes: []int{256, 4096}, WorkingSet: 4 << 20, Rounds: 1, Phase: 30 * time.Millisecond, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Cells) != 4 {
				t.Fatalf("%d cells", len(res.Cells))
			}
			for _, c := range res.Cells {
				if c.CopyNsPerResp <= 0 || c.SGNsPerResp <= 0 || c.CopyResponses == 0 || c.SGResponses == 0 || c.EntryBytes != c.TotalBytes/c.Entries {
					t.Fatalf("bad cell %+v", c)
				}
			}
			dir := t.TempDir()
			png := filepath.Join(dir, "h.png")
			if err := res.WritePNG(png); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Fatalf("PNG not written: %v", err)
			}
			var tb strings.Builder
			if err := res.WriteTable(&tb); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(tb.String(), "recommended threshold") {
				t.Fatalf("table:\n%s", tb.String())
			}
			j, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(j, &m); err != nil {
				t.Fatal(err)
			}
			if _, ok := m["recommended_threshold"]; !ok {
				t.Fatalf("JSON without recommended_threshold: %s", j)
			}
		})
	}
}

// TestSkipTooLarge: memnet carries at most a jumbo frame; cells with larger
// responses are left out instead of failing the sweep.
func TestSkipTooLarge(t *testing.T) {
	res, err := Run(Config{Datapath: "memnet", Entries: []int{2}, TotalSizes: []int{1024, 16384}, WorkingSet: 2 << 20, Rounds: 1, Phase: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 1 || res.Cells[0].TotalBytes != 1024 {
		t.Fatalf("cells %+v", res.Cells)
	}
	var tb strings.Builder
	if err := res.WriteTable(&tb); err != nil || !strings.Contains(tb.String(), "-") {
		t.Fatalf("table %q, %v", tb.String(), err)
	}
}

// TestRunXDP runs a tiny sweep over AF_XDP (one pair of endpoints in two
// namespaces for the whole sweep, the working set in their UMEM): every
// response checked, scatter-gather entries sent zero-copy, a cell too
// large for one packet skipped, no namespace left behind. It needs root.
func TestRunXDP(t *testing.T) {
	if err := xdp.Available(); err != nil {
		t.Skipf("xdp datapath unavailable: %v", err)
	}
	res, err := Run(Config{Datapath: "xdp", Entries: []int{1, 4}, TotalSizes: []int{256, 4096, 16384}, WorkingSet: 4 << 20, Rounds: 1, Phase: 30 * time.Millisecond, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 {
		t.Fatalf("%d cells, want 4 (16384-byte responses do not fit one xdp packet): %+v", len(res.Cells), res.Cells)
	}
	for _, c := range res.Cells {
		if c.CopyNsPerResp <= 0 || c.SGNsPerResp <= 0 || c.CopyResponses == 0 || c.SGResponses == 0 || c.TotalBytes > 4096 {
			t.Fatalf("bad cell %+v", c)
		}
		if c.ZeroCopyEntries == 0 {
			t.Fatalf("no zero-copy entries: the working set is not in the UMEM: %+v", c)
		}
	}
	if !strings.Contains(res.WorkingSetNote, "UMEM") {
		t.Fatalf("working_set_note %q", res.WorkingSetNote)
	}
	if left, err := netns.List(fmt.Sprintf("%s-%d", xdp.AutoPrefix, os.Getpid())); err != nil || len(left) != 0 {
		t.Fatalf("namespaces left behind: %v (%v)", left, err)
	}
}

// TestRunXDPUnavailable: without root, xdp fails up front with the
// datapath's explanation.
func TestRunXDPUnavailable(t *testing.T) {
	if xdp.Available() == nil {
		t.Skip("xdp is available here (running as root)")
	}
	_, err := Run(Config{Datapath: "xdp", Entries: []int{1}, TotalSizes: []int{64}, Rounds: 1, Phase: time.Millisecond})
	if !errors.Is(err, xdp.ErrUnavailable) || !strings.Contains(err.Error(), "root") {
		t.Fatalf("Run on xdp without root: %v", err)
	}
}

// WriteCSV writes a header of Cell's JSON field names and one row per
// cell, in the JSON's order.
func TestWriteCSV(t *testing.T) {
	r := &Result{Cells: []Cell{
		{Entries: 1, TotalBytes: 64, EntryBytes: 64, CopyNsPerResp: 900.5, SGNsPerResp: 1000, CopyRPS: 1e5, SGRPS: 9e4, GainPct: -10, CopyResponses: 7, SGResponses: 8, ZeroCopyEntries: 0},
		{Entries: 2, TotalBytes: 16384, EntryBytes: 8192, GainPct: 12.5, ZeroCopyEntries: 3},
	}}
	var b strings.Builder
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v:\n%s", len(rows), err, b.String())
	}
	var keys []string
	typ := reflect.TypeOf(Cell{})
	for i := 0; i < typ.NumField(); i++ {
		keys = append(keys, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	if !reflect.DeepEqual(rows[0], keys) {
		t.Fatalf("header %v, want Cell's JSON fields %v", rows[0], keys)
	}
	if want := []string{"1", "64", "64", "900.5", "1000", "100000", "90000", "-10", "7", "8", "0"}; !reflect.DeepEqual(rows[1], want) {
		t.Fatalf("row %v, want %v", rows[1], want)
	}
	if rows[2][7] != "12.5" || rows[2][10] != "3" {
		t.Fatalf("row %v", rows[2])
	}
}
