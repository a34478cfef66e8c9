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

// FuzzReplyScanner feeds arbitrary bytes, split at an arbitrary point, to
// a ReplyScanner of every shape: never a panic, and the same replies and
// failure as the bytes fed whole.
func FuzzReplyScanner(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c.in), uint16(len(c.in)/2), c.want.Kind, uint8(c.want.N), uint8(c.want.Elems))
	}
	f.Fuzz(func(t *testing.T, b []byte, split uint16, kind byte, n, elems uint8) {
		want := Shape{Kind: kind, N: int(n), Elems: int(elems)}
		whole, err := NewReplyScanner(want)
		if err != nil {
			return
		}
		parts, _ := NewReplyScanner(want)
		s := min(int(split), len(b))
		nw, errw := whole.Feed(b)
		n1, err1 := parts.Feed(b[:s])
		n2, err2 := 0, err1
		if err1 == nil {
			n2, err2 = parts.Feed(b[s:])
		}
		if (errw != nil) != (err2 != nil) || errw == nil && nw != n1+n2 {
			t.Fatalf("%q split at %d: whole %d %v, parts %d+%d %v", b, s, nw, errw, n1, n2, err2)
		}
	})
}
