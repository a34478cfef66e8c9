package resp

import (
	"strings"
	"testing"
)

// TestLongDouble: strtold's syntax as string2ld keeps it, x87 rounding,
// %.17Lf formatting, and exponents that must not make big.Float work.
func TestLongDouble(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" invalid, "inf" infinite
	}{
		{"0.1", "0.1"}, {"-0", "0"}, {"0x10", "16"}, {"0x.8p1", "1"}, {"+1", "1"}, {".5", "0.5"},
		{"5.", "5"}, {"1e", ""}, {"1_0", ""}, {"nan", ""}, {" 1", ""}, {"1 ", ""}, {"0x", ""}, {"", ""}, {"-", ""},
		{"inf", "inf"}, {"-Infinity", "inf"}, {"1e5000", ""}, {"1e-5000", ""}, {"0e999999999", "0"},
		{"1e999999999", ""}, {"0x1p999999999", ""}, {"0x0p999999999", "0"}, {"1e0000000000003", "1000"},
		{strings.Repeat("1", maxLDChars), ""},
	} {
		x, ok := parseLD([]byte(c.in))
		got := ""
		switch {
		case !ok:
		case x.IsInf():
			got = "inf"
		default:
			got = formatLD(x)
		}
		if got != c.want {
			t.Errorf("%.30q: %q, want %q", c.in, got, c.want)
		}
	}
	a, _ := parseLD([]byte("0.1"))
	b, _ := parseLD([]byte("0.2"))
	if s, ok := addLD(a, b); !ok || formatLD(s) != "0.3" {
		t.Errorf("0.1+0.2 = %v %v, want 0.3 (float64 gives 0.30000000000000004)", s, ok)
	}
	m, _ := parseLD([]byte("1.18e4932"))
	if _, ok := addLD(m, m); ok {
		t.Error("overflow accepted")
	}
}
