package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Series is one sweep of one configuration, the unit of every report. The
// JSON form is the schema
// {"experiment","workload","serializer","mode","datapath","max_rps_at_slo","slo_p99_us","points":[{"offered_rps","achieved_rps","p50_us","p99_us"}]}
// plus the fields marked as additions.
type Series struct {
	Experiment  string  `json:"experiment"`
	Workload    string  `json:"workload"`
	Serializer  string  `json:"serializer"`
	Mode        string  `json:"mode"`
	Datapath    string  `json:"datapath"`
	MaxRPSAtSLO float64 `json:"max_rps_at_slo"`
	SLOP99us    float64 `json:"slo_p99_us"`
	Points      []Point `json:"points"`

	// Additions.
	Label            string  `json:"label,omitempty"`                    // row/group label within the experiment, e.g. "1-8 vals"
	SerializeAndSend *bool   `json:"serialize_and_send,omitempty"`       // cornflakes only
	Unit             string  `json:"unit,omitempty"`                     // "requests" or "objects"
	MaxUnitsAtSLO    float64 `json:"max_units_per_sec_at_slo,omitempty"` // objects/s for cdn
	MaxAchievedRPS   float64 `json:"max_achieved_rps"`                   // highest achieved rate at any point
	Truncated        bool    `json:"truncated,omitempty"`                // the time budget cut the sweep short
	Reruns           int     `json:"reruns,omitempty"`                   // points re-run after a tail-only failure (SweepConfig.Retries)
	// MaxRPSSaturated is the throughput of one closed-loop point at
	// saturation (SaturationOutstanding requests in flight per client),
	// whatever its latency: the ranking when no load meets the SLO.
	MaxRPSSaturated float64 `json:"max_rps_saturated"`
	// SaturatedP99us is the p99 of that closed-loop point.
	SaturatedP99us float64 `json:"saturated_p99_us,omitempty"`
	// SaturatedServerCPUus is the server's CPU time per request at
	// saturation (µs, median over the rounds; see ServerMeter): the cost
	// one server core pays per request, robust to a shared machine.
	SaturatedServerCPUus float64 `json:"saturated_server_cpu_us,omitempty"`
	// SaturatedServerSleeps is how often the server's serving threads
	// went to sleep per request at saturation (the median round's; see
	// SleepMeter): each sleep is a system call and a later wake-up.
	SaturatedServerSleeps float64 `json:"saturated_server_sleeps_per_req,omitempty"`
	// SaturatedServerTransport and SaturatedClientTransport are the
	// transport's counters (TransportStats) on the server and on the load
	// generator during that saturation point (the median round's), when
	// the target reports them (TransportMeter).
	SaturatedServerTransport *TransportStats `json:"saturated_server_transport,omitempty"`
	SaturatedClientTransport *TransportStats `json:"saturated_client_transport,omitempty"`
	// LoadAvg is the machine's 1-minute load average (/proc/loadavg) when
	// the run started, and CPUs the processors the OS reports: a load well
	// above CPUs means other work shared the cores and inflated latencies.
	LoadAvg float64 `json:"loadavg"`
	CPUs    int     `json:"cpus"`
	// The machine check before the experiment (ExperimentConfig.Stalls,
	// MeasureStalls): the share of time spinning threads lost to stalls,
	// the longest stall, and the p99 latency stalls alone cause.
	StallLostFraction float64 `json:"stall_lost_fraction,omitempty"`
	StallMaxus        float64 `json:"stall_max_us,omitempty"`
	StallP99Floorus   float64 `json:"stall_p99_floor_us,omitempty"`
	// SyscallNs is the machine check's cost of one trivial system call
	// (ExperimentConfig.Syscall, MeasureSyscall): the unit kernel-datapath
	// results scale with.
	SyscallNs float64 `json:"syscall_ns,omitempty"`
	// BusyPoll: the server and the load generator polled without sleeping.
	BusyPoll bool `json:"busy_poll"`
	// The comparison with the group's reference (Compare): VsReference
	// names it ("best baseline", or in a group of Cornflakes modes only,
	// the group's first series); the ratios are this series' max rate at
	// the SLO and saturated over the reference's, and the reference's
	// server CPU per request over this one's (above 1: this one is
	// cheaper). Nil where there is nothing to compare (the reference
	// itself, a value missing on either side).
	VsReference          string   `json:"vs_reference,omitempty"`
	VsReferenceAtSLO     *float64 `json:"vs_reference_at_slo,omitempty"`
	VsReferenceSaturated *float64 `json:"vs_reference_saturated,omitempty"`
	VsReferenceServerCPU *float64 `json:"vs_reference_server_cpu,omitempty"`
	// AtSLONote says, for a series without a max load at the SLO
	// (MaxRPSAtSLO 0), why not (SLONote): the SLO was unmeasurable on this
	// machine (its stalls alone exceed it, or every load failed only in its
	// tail), no load met it, or the sweep measured nothing. Filled in by
	// Compare; empty when the series met the SLO.
	AtSLONote string `json:"at_slo_note,omitempty"`
}

// Point is one load point of a Series.
type Point struct {
	OfferedRPS  float64 `json:"offered_rps"`
	AchievedRPS float64 `json:"achieved_rps"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`

	// Additions.
	P999us        float64 `json:"p999_us"`
	AchievedUnits float64 `json:"achieved_units_per_sec,omitempty"`
	Errors        uint64  `json:"errors,omitempty"`
	Lost          uint64  `json:"lost,omitempty"`
	Mismatches    uint64  `json:"mismatches,omitempty"`
	MeetsSLO      bool    `json:"meets_slo"`
	// ServerCPUus is the server's CPU time per request at this point (µs;
	// omitted when the target cannot measure it, see ServerMeter).
	ServerCPUus float64 `json:"server_cpu_us,omitempty"`
}

// RunInfo names what a sweep measured.
type RunInfo struct {
	Experiment, Label, Workload, Serializer, Mode, Datapath string
	SerializeAndSend                                        *bool
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// NewSeries builds a Series from a sweep.
func NewSeries(info RunInfo, sr SweepResult) Series {
	s := Series{
		Experiment: info.Experiment, Workload: info.Workload, Serializer: info.Serializer,
		Mode: info.Mode, Datapath: info.Datapath, Label: info.Label, SerializeAndSend: info.SerializeAndSend,
		MaxRPSAtSLO: sr.MaxRPSAtSLO, SLOP99us: us(sr.SLO), MaxUnitsAtSLO: sr.MaxUnitsAtSLO,
		Truncated: sr.Truncated, Reruns: sr.Reruns, Points: []Point{},
	}
	for _, r := range sr.Points {
		if s.Unit == "" {
			s.Unit = r.Unit
		}
		s.MaxAchievedRPS = max(s.MaxAchievedRPS, r.AchievedRPS)
		s.Points = append(s.Points, Point{
			OfferedRPS: r.OfferedRPS, AchievedRPS: r.AchievedRPS,
			P50us: us(r.P50), P99us: us(r.P99), P999us: us(r.P999),
			AchievedUnits: r.AchievedUnitsPS, Errors: r.Errors, Lost: r.Lost, Mismatches: r.Mismatches,
			MeetsSLO: Passes(r, sr.SLO, sr.MinAchieved), ServerCPUus: us(r.ServerCPU),
		})
	}
	if s.Unit == "requests" {
		s.MaxUnitsAtSLO = 0 // same as MaxRPSAtSLO; omit
	}
	return s
}

// Name returns "serializer/mode" (and the serialize-and-send switch when off),
// the line and row name of the series.
func (s Series) Name() string {
	n := s.Serializer
	if s.Mode != "" {
		n += "/" + s.Mode
	}
	if s.SerializeAndSend != nil && !*s.SerializeAndSend {
		n += " (no serialize-and-send)"
	}
	return n
}

// group returns the key series are grouped by in tables and plots: the
// experiment and the label (or workload), and the datapath when the series
// reported together ran on more than one (byDatapath): the main job
// compares the serializers on shm and on kernel UDP, each datapath in its
// own table.
func (s Series) group(byDatapath bool) string {
	g := s.Experiment
	if s.Label != "" {
		g += " " + s.Label
	} else {
		g += " " + s.Workload
	}
	if byDatapath && s.Datapath != "" {
		g += " " + s.Datapath
	}
	return strings.TrimSpace(g)
}

// mixedDatapaths reports whether series ran on more than one datapath
// (series that name none do not count).
func mixedDatapaths(series []Series) bool {
	first := ""
	for _, s := range series {
		switch {
		case s.Datapath == "":
		case first == "":
			first = s.Datapath
		case s.Datapath != first:
			return true
		}
	}
	return false
}

// WriteJSON writes series as one indented JSON array.
func WriteJSON(w io.Writer, series []Series) error {
	if series == nil {
		series = []Series{}
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(series)
}

// ReadJSON parses what WriteJSON wrote.
func ReadJSON(r io.Reader) ([]Series, error) {
	var s []Series
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("bench: reading results: %w", err)
	}
	return s, nil
}

// CSVHeader is the header row WriteCSV writes: one row per point.
var CSVHeader = []string{"experiment", "label", "workload", "serializer", "mode", "serialize_and_send", "datapath",
	"slo_p99_us", "max_rps_at_slo", "offered_rps", "achieved_rps", "achieved_units_per_sec", "p50_us", "p99_us", "p999_us",
	"errors", "lost", "mismatches", "meets_slo", "server_cpu_us"}

// WriteCSV writes one row per point of every series.
func WriteCSV(w io.Writer, series []Series) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, s := range series {
		sas := ""
		if s.SerializeAndSend != nil {
			sas = strconv.FormatBool(*s.SerializeAndSend)
		}
		for _, p := range s.Points {
			rec := []string{s.Experiment, s.Label, s.Workload, s.Serializer, s.Mode, sas, s.Datapath,
				f(s.SLOP99us), f(s.MaxRPSAtSLO), f(p.OfferedRPS), f(p.AchievedRPS), f(p.AchievedUnits),
				f(p.P50us), f(p.P99us), f(p.P999us),
				strconv.FormatUint(p.Errors, 10), strconv.FormatUint(p.Lost, 10), strconv.FormatUint(p.Mismatches, 10),
				strconv.FormatBool(p.MeetsSLO), f(p.ServerCPUus)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable writes the comparison table: per group (experiment and label or
// workload), one row per series with its max load at the SLO, the p50/p99 of
// that point, the saturated closed-loop rate and the server's CPU time per
// request at saturation (columns shown when measured or when a series has
// no max load at the SLO; "-" where not measured), each with its ratio to
// the best non-cornflakes series of the group. A series without a max load at
// the SLO says why in its cell (SLONote: "unmeasurable (stalls)", "none
// met", ...) and in one line under the table.
func WriteTable(w io.Writer, series []Series) error {
	names, members := Groups(series)
	for gi, g := range names {
		if gi > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		ss := members[gi]
		if _, err := fmt.Fprintf(w, "%s (SLO p99 %s µs)\n", g, strconv.FormatFloat(ss[0].SLOP99us, 'f', -1, 64)); err != nil {
			return err
		}
		head, rows := tableRows(ss)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\n", strings.Join(head, "\t"))
		for _, r := range rows {
			fmt.Fprintf(tw, "  %s\n", strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range tableNotes(ss) {
			if _, err := fmt.Fprintf(w, "  at SLO, %s\n", n); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteMarkdown prints the tables of WriteTable as Markdown (for
// docs/PERFORMANCE.md and reports), one "#### group" heading per group.
func WriteMarkdown(w io.Writer, series []Series) error {
	names, members := Groups(series)
	for gi, g := range names {
		ss := members[gi]
		head, rows := tableRows(ss)
		fmt.Fprintf(w, "#### %s (SLO p99 %s µs)\n\n| %s |\n|", g, strconv.FormatFloat(ss[0].SLOP99us, 'f', -1, 64), strings.Join(head, " | "))
		for range head {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintln(w)
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		if notes := tableNotes(ss); len(notes) > 0 {
			fmt.Fprintln(w)
			for _, n := range notes {
				fmt.Fprintf(w, "* at SLO, %s\n", n)
			}
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	return nil
}

// tableRows returns the comparison table of one group: per series the max
// load at the SLO with that point's p50/p99, and (when measured) the
// saturated closed-loop rate, each with Cornflakes' ratio to the best
// baseline.
func tableRows(ss []Series) (head []string, rows [][]string) {
	unit := "rps"
	if ss[0].Unit == "objects" {
		unit = "objects/s"
	}
	// The saturated columns appear when measured, and always next to a
	// series without a max load at the SLO: they are its ranking then.
	showSat, showCPU := false, false
	for _, s := range ss {
		short, _ := s.SLONote()
		showSat = showSat || s.MaxRPSSaturated > 0 || short != ""
		showCPU = showCPU || s.SaturatedServerCPUus > 0 || short != ""
	}
	ref := referenceOf(ss)
	vs, cpuVs := "vs "+ref.name, ref.name+" / this"
	head = []string{"serializer", "max " + unit + " at SLO", "p50 µs", "p99 µs", vs}
	if showSat {
		head = append(head, "max rps saturated (closed loop)", vs)
	}
	if showCPU {
		head = append(head, "server CPU µs/req (saturated)", cpuVs)
	}
	x := func(r float64) string {
		if math.IsNaN(r) {
			return "-"
		}
		return fmt.Sprintf("%.2fx", r)
	}
	for _, s := range ss {
		atSLO, sat, cpu := ref.ratios(s)
		p50, p99 := "-", "-"
		if p := s.bestPoint(); p != nil {
			p50, p99 = fmt.Sprintf("%.1f", p.P50us), fmt.Sprintf("%.1f", p.P99us)
		}
		atSLOCell := formatRate(s.value())
		if short, _ := s.SLONote(); short != "" {
			atSLOCell = short
		} else if s.Truncated {
			atSLOCell += " (cut short)"
		}
		row := []string{s.Name(), atSLOCell, p50, p99, x(atSLO)}
		if showSat {
			v := "-"
			if s.MaxRPSSaturated > 0 {
				v = formatRate(s.MaxRPSSaturated)
			}
			row = append(row, v, x(sat))
		}
		if showCPU {
			v := "-"
			if s.SaturatedServerCPUus > 0 {
				v = fmt.Sprintf("%.2f", s.SaturatedServerCPUus)
			}
			row = append(row, v, x(cpu))
		}
		rows = append(rows, row)
	}
	return head, rows
}

// tableNotes returns one line per series of a group that has no max load
// at the SLO, saying why (SLONote), for under the table.
func tableNotes(ss []Series) []string {
	var notes []string
	for _, s := range ss {
		if short, why := s.SLONote(); short != "" {
			notes = append(notes, s.Name()+": "+why)
		}
	}
	return notes
}

// SLONote explains a series without a max load at the SLO: short is the
// table cell ("unmeasurable (stalls)", "none met", ...) and why the whole
// reason with the numbers behind it. Both are empty when the series met
// the SLO at some load. The SLO is unmeasurable when the machine check's
// stalls alone put the p99 above it (StallP99Floorus), or when every load
// point failed in its tail alone (p99 above the SLO while the median stayed
// at most a quarter of it, with no errors and the offered load achieved:
// TailOnly), which is what stalls of the OS or hypervisor do and an
// overloaded server does not.
func (s Series) SLONote() (short, why string) {
	if s.MaxRPSAtSLO > 0 || s.value() > 0 {
		return "", ""
	}
	slo := s.SLOP99us
	if len(s.Points) == 0 {
		if s.Truncated {
			return "not measured", "the sweep's time budget ran out before its first load point"
		}
		return "not measured", "the sweep measured no load point"
	}
	var tailOnly, failed, bad int
	lowest := s.Points[0]
	for _, p := range s.Points {
		if p.OfferedRPS > 0 && (lowest.OfferedRPS == 0 || p.OfferedRPS < lowest.OfferedRPS) {
			lowest = p
		}
		if p.MeetsSLO {
			continue
		}
		failed++
		clean := p.Errors == 0 && p.Lost == 0 && p.Mismatches == 0 && p.AchievedRPS > 0 &&
			(p.OfferedRPS == 0 || p.AchievedRPS >= DefaultMinAchieved*p.OfferedRPS)
		if !clean {
			bad++
		} else if p.P99us > slo && p.P50us <= slo/TailOnlyMedianDivisor {
			tailOnly++
		}
	}
	cut := ""
	if s.Truncated {
		cut = fmt.Sprintf("; the time budget cut the sweep short after %d points", len(s.Points))
	}
	switch {
	case slo > 0 && s.StallP99Floorus > slo:
		return "unmeasurable (stalls)", fmt.Sprintf("the machine's stalls alone put the p99 at >= %.0f µs, above the SLO of %.0f µs "+
			"(the machine check's spinning threads lost %.1f%% of their time, longest stall %.0f µs); "+
			"lowest load %s rps: p50 %.1f µs, p99 %.1f µs%s", s.StallP99Floorus, slo, 100*s.StallLostFraction, s.StallMaxus,
			formatRate(lowest.OfferedRPS), lowest.P50us, lowest.P99us, cut)
	case failed > 0 && tailOnly == failed:
		return "unmeasurable (tail)", fmt.Sprintf("every one of the %d load points failed in its tail alone (p99 above the SLO of %.0f µs, median at most %.0f µs, "+
			"offered load achieved): stalls of the machine, not the server's queue; lowest load %s rps: p50 %.1f µs, p99 %.1f µs%s",
			failed, slo, slo/TailOnlyMedianDivisor, formatRate(lowest.OfferedRPS), lowest.P50us, lowest.P99us, cut)
	case failed > 0 && bad == failed:
		return "none met", fmt.Sprintf("every load point had errors, lost requests or fell short of %.0f%% of its offered load; lowest load %s rps achieved %s rps%s",
			100*DefaultMinAchieved, formatRate(lowest.OfferedRPS), formatRate(lowest.AchievedRPS), cut)
	}
	return "none met", fmt.Sprintf("no load met the p99 SLO of %.0f µs, not even the lowest (%s rps: p50 %.1f µs, p99 %.1f µs)%s",
		slo, formatRate(lowest.OfferedRPS), lowest.P50us, lowest.P99us, cut)
}

// reference is what the series of one group are compared with: the best
// baseline (the highest rates, the lowest server CPU per request among the
// non-Cornflakes series) or, in a group of Cornflakes modes only (table4,
// table5, fig12), the group's first series.
type reference struct {
	name            string
	isRef           func(Series) bool
	atSLO, sat, cpu float64
}

func referenceOf(ss []Series) reference {
	r := reference{name: "best baseline", isRef: func(s Series) bool { return s.Serializer != "cornflakes" }}
	if !slices.ContainsFunc(ss, r.isRef) && len(ss) > 1 {
		first := ss[0].Name()
		r.name, r.isRef = first, func(s Series) bool { return s.Name() == first }
	}
	for _, s := range ss {
		if r.isRef(s) {
			r.atSLO = max(r.atSLO, s.value())
			r.sat = max(r.sat, s.MaxRPSSaturated)
			if s.SaturatedServerCPUus > 0 && (r.cpu == 0 || s.SaturatedServerCPUus < r.cpu) {
				r.cpu = s.SaturatedServerCPUus
			}
		}
	}
	return r
}

// ratios compares s with the reference: rate at the SLO and saturated rate
// over the reference's, reference server CPU over s's; NaN where there is
// nothing to compare (s is a reference, or a value is missing).
func (r reference) ratios(s Series) (atSLO, sat, cpu float64) {
	atSLO, sat, cpu = math.NaN(), math.NaN(), math.NaN()
	if r.isRef(s) {
		return atSLO, sat, cpu
	}
	if r.atSLO > 0 {
		atSLO = s.value() / r.atSLO
	}
	if r.sat > 0 && s.MaxRPSSaturated > 0 {
		sat = s.MaxRPSSaturated / r.sat
	}
	if r.cpu > 0 && s.SaturatedServerCPUus > 0 {
		cpu = r.cpu / s.SaturatedServerCPUus
	}
	return atSLO, sat, cpu
}

func ptrUnlessNaN(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// Compare fills every series' VsReference fields from its group (the
// comparisons of the text table, for the JSON and CSV outputs) and its
// AtSLONote.
func Compare(series []Series) {
	idx := map[string][]int{} // group → its series' indexes
	mixed := mixedDatapaths(series)
	for i := range series {
		g := series[i].group(mixed)
		idx[g] = append(idx[g], i)
	}
	for _, members := range idx {
		ss := make([]Series, len(members))
		for k, i := range members {
			ss[k] = series[i]
		}
		ref := referenceOf(ss)
		for _, i := range members {
			s := &series[i]
			_, s.AtSLONote = s.SLONote()
			s.VsReference, s.VsReferenceAtSLO, s.VsReferenceSaturated, s.VsReferenceServerCPU = "", nil, nil, nil
			if ref.isRef(*s) {
				continue
			}
			s.VsReference = ref.name
			atSLO, sat, cpu := ref.ratios(*s)
			s.VsReferenceAtSLO, s.VsReferenceSaturated, s.VsReferenceServerCPU = ptrUnlessNaN(atSLO), ptrUnlessNaN(sat), ptrUnlessNaN(cpu)
		}
	}
}

// MeetsNone reports whether no series met the SLO at any load point.
func MeetsNone(series []Series) bool {
	for _, s := range series {
		if s.MaxRPSAtSLO > 0 {
			return false
		}
	}
	return len(series) > 0
}

// value is what the table compares: objects/s for object workloads, else requests/s.
func (s Series) value() float64 {
	if s.Unit == "objects" {
		return s.MaxUnitsAtSLO
	}
	return s.MaxRPSAtSLO
}

// bestPoint returns the passing point with the highest achieved rate.
func (s Series) bestPoint() *Point {
	var best *Point
	for i := range s.Points {
		p := &s.Points[i]
		if p.MeetsSLO && (best == nil || p.AchievedRPS > best.AchievedRPS) {
			best = p
		}
	}
	return best
}

// Groups returns the distinct groups of series in order, with their series.
// A group is an experiment's label (or workload), and its datapath when the
// series ran on more than one.
func Groups(series []Series) (names []string, members [][]Series) {
	idx := map[string]int{}
	mixed := mixedDatapaths(series)
	for _, s := range series {
		g := s.group(mixed)
		i, ok := idx[g]
		if !ok {
			i = len(names)
			idx[g] = i
			names = append(names, g)
			members = append(members, nil)
		}
		members[i] = append(members[i], s)
	}
	return names, members
}

// fileSafe turns a group name into a file name stem.
func fileSafe(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	if len(out) > 80 {
		out = out[:80]
	}
	if out == "" {
		out = "plot"
	}
	return out
}
