package respbench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	recs := []Record{
		{"get", "d64/P1", Cornflakes, 100, "rps"}, {"get", "d64/P1", Redis, 50, "rps"}, {"get", "d64/P1", Ratio, 2, "ratio"},
		{"get", "d64/P1", Cornflakes, 1.5, UnitServerCPU}, {"get", "d64/P1", Redis, 3, UnitServerCPU}, {"get", "d64/P1", Ratio, 2, UnitCPURatio},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, recs); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(b.String()); strings.Join(f[len(f)-7:], " ") != "get d64/P1 100 50 2.00 1.50 3.00" {
		t.Fatalf("table:\n%s", b.String())
	}
	paths, err := WriteFiles(t.TempDir(), recs)
	if err != nil || len(paths) != 3 {
		t.Fatalf("WriteFiles: %v %v", paths, err)
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
