package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCurve: the plot's line goes through one point per offered load in
// order of offered load, whatever order the sweep ran them in; of the
// attempts at one load it keeps the one the sweep counted (the passing one,
// else the last), and the others come back separately.
func TestCurve(t *testing.T) {
	s := Series{Points: []Point{
		{OfferedRPS: 40000, AchievedRPS: 39900, P99us: 900},                  // failed in its tail...
		{OfferedRPS: 40000, AchievedRPS: 39950, P99us: 300, MeetsSLO: true},  // ...passed on re-run
		{OfferedRPS: 40000, AchievedRPS: 39000, P99us: 950},                  // a later failure does not replace a pass
		{OfferedRPS: 20000, AchievedRPS: 20000, P99us: 200, MeetsSLO: true},  // lower load run later (step down)
		{OfferedRPS: 80000, AchievedRPS: 70000, P99us: 5000},                 // failed...
		{OfferedRPS: 80000, AchievedRPS: 71000, P99us: 6000},                 // ...and failed again: the last counts
		{OfferedRPS: 56000, AchievedRPS: 55000, P99us: 400, MeetsSLO: true},  // bisection
		{OfferedRPS: 30000, AchievedRPS: 30000, P99us: 0},                    // no p99: left out
		{OfferedRPS: 0, AchievedRPS: 90000, P99us: 8000},                     // closed loop: last
		{OfferedRPS: 10000, AchievedRPS: 10000, P99us: 100, MeetsSLO: false}, // a lone failure stays on the line
	}}
	curve, others := s.Curve()
	var got []float64
	for _, p := range curve {
		got = append(got, p.OfferedRPS)
	}
	want := []float64{10000, 20000, 40000, 56000, 80000, 0}
	if len(got) != len(want) {
		t.Fatalf("curve offered loads %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("curve offered loads %v, want %v", got, want)
		}
	}
	if curve[2].P99us != 300 || !curve[2].MeetsSLO {
		t.Errorf("40k: kept %+v, want the passing re-run", curve[2])
	}
	if curve[4].P99us != 6000 {
		t.Errorf("80k: kept %+v, want the last attempt", curve[4])
	}
	if len(others) != 3 {
		t.Fatalf("others %+v, want the 3 attempts off the line", others)
	}
	for _, o := range others {
		if o.OfferedRPS != 40000 && o.OfferedRPS != 80000 {
			t.Errorf("unexpected other point %+v", o)
		}
	}
	// The line's x (achieved load) may fall at overload, but the points are
	// in order of offered load, never re-visited.
	for i := 1; i < len(curve)-1; i++ {
		if curve[i].OfferedRPS <= curve[i-1].OfferedRPS {
			t.Fatalf("curve not sorted: %v", got)
		}
	}
	if c, o := (Series{}).Curve(); len(c) != 0 || len(o) != 0 {
		t.Fatal("empty series has a curve")
	}
}

// TestSLONote: a series without a max load at the SLO never reads "0" or
// "0 (cut short)" in the table: it says why, and the saturated throughput
// and server CPU columns are there next to it.
func TestSLONote(t *testing.T) {
	base := func() Series {
		return Series{Experiment: "default", Label: "twitter", Serializer: SerProtobuf, SLOP99us: 500,
			MaxRPSSaturated: 150000, SaturatedServerCPUus: 4.5, StallLostFraction: 0.06, StallMaxus: 3900}
	}
	tail := Point{OfferedRPS: 50000, AchievedRPS: 50000, P50us: 40, P99us: 2500}
	tail2 := Point{OfferedRPS: 40000, AchievedRPS: 40000, P50us: 35, P99us: 1800}
	queue := Point{OfferedRPS: 50000, AchievedRPS: 49000, P50us: 400, P99us: 2500}
	lossy := Point{OfferedRPS: 50000, AchievedRPS: 20000, P50us: 40, P99us: 200, Lost: 10}
	for _, c := range []struct {
		name      string
		edit      func(*Series)
		short     string
		whyHas    []string
		wantNoteS bool
	}{
		{"met", func(s *Series) {
			s.MaxRPSAtSLO = 40000
			s.Points = []Point{{OfferedRPS: 40000, AchievedRPS: 40000, P50us: 30, P99us: 300, MeetsSLO: true}}
		}, "", nil, false},
		{"stall floor above the SLO", func(s *Series) {
			s.StallP99Floorus, s.Truncated = 900, true
			s.Points = []Point{tail, queue}
		}, "unmeasurable (stalls)", []string{">= 900 µs", "above the SLO of 500 µs", "6.0%", "cut the sweep short after 2 points", "lowest load 50.0k rps"}, true},
		{"tail-only failures", func(s *Series) {
			s.StallP99Floorus, s.Truncated = 99, true
			s.Points = []Point{tail, tail2, tail}
		}, "unmeasurable (tail)", []string{"every one of the 3 load points failed in its tail", "median at most 125 µs", "lowest load 40.0k rps", "cut the sweep short"}, true},
		{"overloaded", func(s *Series) { s.Points = []Point{queue} }, "none met", []string{"not even the lowest", "p50 400.0 µs"}, true},
		{"errors", func(s *Series) { s.Points = []Point{lossy} }, "none met", []string{"errors, lost requests"}, true},
		{"no point within the budget", func(s *Series) { s.Truncated = true }, "not measured", []string{"budget ran out"}, true},
		{"no point", func(s *Series) {}, "not measured", []string{"no load point"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.edit(&s)
			short, why := s.SLONote()
			if short != c.short {
				t.Fatalf("short %q, want %q (why: %s)", short, c.short, why)
			}
			for _, w := range c.whyHas {
				if !strings.Contains(why, w) {
					t.Errorf("why lacks %q: %s", w, why)
				}
			}
			pb := s
			cf := base()
			cf.Serializer, cf.Mode, cf.MaxRPSSaturated, cf.SaturatedServerCPUus = SerCornflakes, ModeHybrid, 300000, 2.25
			cf.MaxRPSAtSLO = 100000
			cf.Points = []Point{{OfferedRPS: 100000, AchievedRPS: 100000, P50us: 20, P99us: 200, MeetsSLO: true}}
			series := []Series{cf, pb}
			var tb bytes.Buffer
			if err := WriteTable(&tb, series); err != nil {
				t.Fatal(err)
			}
			out := tb.String()
			if strings.Contains(out, " 0 (cut short)") || strings.Contains(out, "  0  ") {
				t.Fatalf("table prints a zero at the SLO:\n%s", out)
			}
			for _, w := range []string{"max rps saturated", "150.0k", "2.00x", "server CPU", "4.50"} {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			if c.wantNoteS != strings.Contains(out, "at SLO, protobuf: ") {
				t.Errorf("note under the table: want %v:\n%s", c.wantNoteS, out)
			}
			if c.short != "" && !strings.Contains(out, c.short) {
				t.Errorf("table lacks %q:\n%s", c.short, out)
			}
			var md bytes.Buffer
			if err := WriteMarkdown(&md, series); err != nil {
				t.Fatal(err)
			}
			if c.wantNoteS != strings.Contains(md.String(), "* at SLO, protobuf: ") {
				t.Errorf("markdown note: want %v:\n%s", c.wantNoteS, md.String())
			}
			Compare(series)
			if (series[1].AtSLONote != "") != c.wantNoteS || series[0].AtSLONote != "" {
				t.Errorf("AtSLONote %q / %q", series[0].AtSLONote, series[1].AtSLONote)
			}
			js, _ := json.Marshal(series[1])
			if c.wantNoteS != strings.Contains(string(js), `"at_slo_note"`) {
				t.Errorf("JSON: %s", js)
			}
		})
	}
}

// TestGroupsByDatapath: series of one experiment on two datapaths (the main
// job: shm next to kernel UDP) form one group per datapath, each compared
// with its own best baseline; on one datapath the group names do not change.
func TestGroupsByDatapath(t *testing.T) {
	mk := func(dp, ser string, sat float64) Series {
		return Series{Experiment: "default", Label: "twitter", Serializer: ser, Datapath: dp, SLOP99us: 500, MaxRPSSaturated: sat}
	}
	series := []Series{mk("shm", SerCornflakes, 400), mk("shm", SerProtobuf, 200), mk("udp", SerCornflakes, 100), mk("udp", SerProtobuf, 100)}
	names, members := Groups(series)
	if len(names) != 2 || names[0] != "default twitter shm" || names[1] != "default twitter udp" || len(members[0]) != 2 {
		t.Fatalf("groups %v", names)
	}
	Compare(series)
	if r := series[0].VsReferenceSaturated; r == nil || *r != 2 {
		t.Fatalf("shm ratio %v, want 2 (against shm's protobuf only)", r)
	}
	if r := series[2].VsReferenceSaturated; r == nil || *r != 1 {
		t.Fatalf("udp ratio %v, want 1", r)
	}
	if names, _ := Groups(series[:2]); len(names) != 1 || names[0] != "default twitter" {
		t.Fatalf("one datapath: groups %v", names)
	}
}
