package respbench

import (
	"testing"
)

// FuzzProcParse feeds arbitrary bytes to the parsers of /proc lines and
// redis-benchmark's CSV: an error or a non-negative value, never a panic.
func FuzzProcParse(f *testing.F) {
	f.Add([]byte("2211799 0 1\n"))
	f.Add([]byte("1234 (redis-server *:6) x) S 1 1234 1234 0 -1 4194560 500 0 0 0 150 25 0 0 20 0 4 0 100 0 0\n"))
	f.Add([]byte(csvOut))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := parseSchedstat(b); err == nil && d < 0 {
			t.Fatalf("parseSchedstat(%q) = %v", b, d)
		}
		if d, err := parseStatCPU(b); err == nil && d < 0 {
			t.Fatalf("parseStatCPU(%q) = %v", b, d)
		}
		if v, err := ParseCSV(b, "lrange_100"); err == nil && !(v > 0) {
			t.Fatalf("ParseCSV(%q) = %v", b, v)
		}
	})
}
