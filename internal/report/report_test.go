package report

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	d, err := Create(filepath.Join(t.TempDir(), "a", "b"), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.JSON("x.json", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(d.Paths()[0]); err != nil || string(b) != "{\n  \"n\": 1\n}\n" {
		t.Fatalf("x.json = %q, %v", b, err)
	}
	err = d.Write("y.png", func(string) error { return errors.New("boom") })
	if err == nil || !strings.Contains(err.Error(), "demo: ") || !strings.Contains(err.Error(), "y.png: boom") {
		t.Fatalf("error %v does not name the command and the file", err)
	}
	if len(d.Paths()) != 1 {
		t.Fatalf("paths %v: a failed file is not recorded", d.Paths())
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(file, "sub"), "demo"); err == nil {
		t.Fatal("Create under a regular file succeeded")
	}
}

func TestLogTicks125(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (LogTicks125{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got, want := labels(10, 1000), []string{"10", "20", "50", "100", "200", "500", "1000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("10..1000: %v, want %v", got, want)
	}
	if got, want := labels(300, 450), []string{"300", "400"}; !reflect.DeepEqual(got, want) {
		t.Errorf("300..450 (narrow: every tick labelled): %v, want %v", got, want)
	}
	if got := labels(1e5, 2e6); got[len(got)-1] != "2000000" {
		t.Errorf("1e5..2e6: %v, want no exponent", got)
	}
	if ticks := (LogTicks125{}).Ticks(0, 10); ticks != nil {
		t.Errorf("a range from 0 has no log ticks: %v", ticks)
	}
}

func TestRound125(t *testing.T) {
	for _, c := range []struct {
		v    float64
		up   bool
		want float64
	}{{37, false, 20}, {37, true, 50}, {50, true, 50}, {50, false, 50}, {6, true, 10}, {0.03, false, 0.02}, {999, true, 1000}} {
		if got := Round125(c.v, c.up); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Round125(%v, %v) = %v, want %v", c.v, c.up, got, c.want)
		}
	}
}

func TestCSVAndStream(t *testing.T) {
	d, err := Create(t.TempDir(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CSV("a.csv", []string{"x", "y"}, [][]string{{"1", "a,b"}, {"2", ""}}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(d.Paths()[0]); err != nil || string(b) != "x,y\n1,\"a,b\"\n2,\n" {
		t.Fatalf("a.csv = %q, %v", b, err)
	}
	err = d.Stream("b.txt", func(w io.Writer) error {
		_, _ = io.WriteString(w, "partial")
		return errors.New("boom")
	})
	if err == nil || !strings.Contains(err.Error(), "b.txt: boom") || len(d.Paths()) != 1 {
		t.Fatalf("a failing Stream: %v, paths %v", err, d.Paths())
	}
}

func TestDistinct(t *testing.T) {
	got := Distinct([]string{"b", "a", "b", "c", "a"}, func(s string) string { return s })
	if want := []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Distinct = %v, want %v", got, want)
	}
}
