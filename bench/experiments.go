package bench

import (
	"errors"
	"fmt"
	"strings"
)

// Serializer names, as the KV server and client know them.
const (
	SerCornflakes  = "cornflakes"
	SerProtobuf    = "protobuf"
	SerFlatBuffers = "flatbuffers"
	SerCapnp       = "capnp"
)

// Cornflakes modes (the paper's hybrid, only-copy and only-scatter-gather).
const (
	ModeHybrid   = "hybrid"
	ModeCopy     = "copy"
	ModeZeroCopy = "zerocopy"
)

// Serializers is every serializer the comparison experiments run, Cornflakes first.
var Serializers = []string{SerCornflakes, SerProtobuf, SerFlatBuffers, SerCapnp}

// RunSpec is one configuration an experiment measures with a sweep.
type RunSpec struct {
	Label      string // group label within the experiment, e.g. "1-8 vals" (table rows / plot titles)
	Workload   string // workload spec for workload.Parse
	Serializer string
	Mode       string // cornflakes: hybrid|copy|zerocopy; "" for the baselines
	// SerializeAndSend is Cornflakes' combined serialize-and-send (true
	// except in table5's "off" runs); ignored by the baselines.
	SerializeAndSend bool
}

// Info returns the report metadata of the run.
func (r RunSpec) Info(experiment, datapath string) RunInfo {
	info := RunInfo{Experiment: experiment, Label: r.Label, Workload: r.Workload, Serializer: r.Serializer, Mode: r.Mode, Datapath: datapath}
	if r.Serializer == SerCornflakes {
		sas := r.SerializeAndSend
		info.SerializeAndSend = &sas
	}
	return info
}

// Experiment is a preset reproducing one table or figure of the paper.
type Experiment struct {
	Name  string // --experiment value
	Title string
	Paper string // what the paper reports, for the comparison in docs/PERFORMANCE.md
	Runs  []RunSpec
}

// ErrUnknownExperiment is returned by LookupExperiment.
var ErrUnknownExperiment = errors.New("bench: unknown experiment")

// Preset workload specs, sized so a preload fits comfortably in memory on a
// laptop (the paper uses 1M-4M keys; pass larger specs for that).
const (
	WorkloadTwitter = "twitter:keys=100000"
	// WorkloadTwitterSmall keeps the default run's preload (~115 MB) quick.
	WorkloadTwitterSmall = "twitter:keys=50000"
	WorkloadCDN          = "cdn:objects=10000"
	WorkloadYCSB         = "ycsb:records=100000"
)

// GoogleSpec returns the Google workload spec for the paper's "1-N values"
// label: Cornflakes' UniformOverRange-1-N excludes N, so "1-8" is 1..7
// values (and "1" is exactly one).
func GoogleSpec(n int) string {
	hi := max(n-1, 1)
	return fmt.Sprintf("google:keys=100000,values=1-%d", hi)
}

func everySerializer(label, spec string) []RunSpec {
	var rs []RunSpec
	for _, s := range Serializers {
		r := RunSpec{Label: label, Workload: spec, Serializer: s}
		if s == SerCornflakes {
			r.Mode, r.SerializeAndSend = ModeHybrid, true
		}
		rs = append(rs, r)
	}
	return rs
}

func cornflakesModes(label, spec string) []RunSpec {
	var rs []RunSpec
	for _, m := range []string{ModeHybrid, ModeZeroCopy, ModeCopy} {
		rs = append(rs, RunSpec{Label: label, Workload: spec, Serializer: SerCornflakes, Mode: m, SerializeAndSend: true})
	}
	return rs
}

var googleLabels = []struct {
	label string
	n     int
}{{"1 val", 1}, {"1-4 vals", 4}, {"1-8 vals", 8}, {"1-16 vals", 16}}

// Experiments returns every preset: "default" (the README's main job) and
// the paper's table1, table2, fig7, table3, table4, table5 and fig12.
func Experiments() []Experiment {
	var t1, t4 []RunSpec
	for _, g := range googleLabels {
		t1 = append(t1, everySerializer(g.label, GoogleSpec(g.n))...)
		t4 = append(t4, cornflakesModes(g.label, GoogleSpec(g.n))...)
	}
	var t3 []RunSpec
	for _, x := range []struct{ label, spec string }{
		{"get", WorkloadYCSB + ",shape=1x4096,layout=single"},
		{"mget-2", WorkloadYCSB + ",shape=2x2048,layout=multi"},
		{"lrange-2", WorkloadYCSB + ",shape=2x2048,layout=list"},
	} {
		t3 = append(t3, everySerializer(x.label, x.spec)...)
	}
	var t5 []RunSpec
	for _, x := range []struct{ label, spec string }{
		{"google 1-4 vals", GoogleSpec(4)},
		{"twitter", WorkloadTwitter},
		{"ycsb 4x1024", WorkloadYCSB + ",shape=4x1024,layout=list"},
	} {
		for _, sas := range []bool{true, false} {
			t5 = append(t5, RunSpec{Label: x.label, Workload: x.spec, Serializer: SerCornflakes, Mode: ModeHybrid, SerializeAndSend: sas})
		}
	}
	return []Experiment{
		{Name: "default", Title: "Every serializer on the Twitter cache workload (cluster 4, synthetic)",
			Paper: "Fig. 7: Cornflakes 15.4% above Protobuf at ~53 µs p99", Runs: everySerializer("twitter", WorkloadTwitterSmall)},
		{Name: "table1", Title: "Google protobuf field sizes, lists of 1 / 1-4 / 1-8 / 1-16 values",
			Paper: "Table 1 (krps): Cornflakes 844.7/727.2/584.5/441.2, Protobuf 852.5/741.9/583.8/402.0, Cap'n Proto 678.9/612.9/507.1/412.0, FlatBuffers 778.1/646.4/516.8/388.9",
			Runs:  t1},
		{Name: "table2", Title: "CDN image trace (Tragen tc-1), objects/s",
			Paper: "Table 2 (k objects/s): Cap'n Proto 161.0, FlatBuffers 181.2, Protobuf 186.1, Cornflakes 366.5",
			Runs:  everySerializer("cdn", WorkloadCDN)},
		{Name: "fig7", Title: "Twitter cache trace cluster 4, throughput vs p99",
			Paper: "Fig. 7: Cornflakes +15.4% over Protobuf (p99 ~53 µs); ≈0.85 vs 0.73/0.68/0.58 Mpps",
			Runs:  everySerializer("twitter", WorkloadTwitter)},
		{Name: "table3", Title: "Redis-style get / mget-2 / lrange-2 over YCSB-C, 4096 B per request",
			Paper: "Table 3 (Gbps, inside Redis): Cornflakes 23.37/14.12/15.07 vs Redis 18.49/12.27/10.75",
			Runs:  t3},
		{Name: "table4", Title: "Cornflakes hybrid vs only zero-copy vs only copy, Google field sizes",
			Paper: "Table 4 (krps): hybrid 844.7/727.2/584.5/441.2, only SG 846.9/717.2/557.4/387.1, only copy 819.0/693.2/547.4/411.8",
			Runs:  t4},
		{Name: "table5", Title: "Cornflakes with and without combined serialize-and-send",
			Paper: "Table 5: with 727 krps / 899 krps / 18.9 Gbps, without 675 / 814 / 16.1",
			Runs:  t5},
		{Name: "fig12", Title: "Cornflakes hybrid vs only zero-copy vs only copy, Twitter",
			Paper: "Fig. 12: hybrid 2.3-3.9% above only-SG at ~50 µs; ≈0.85 vs 0.82 vs 0.75 Mpps",
			Runs:  cornflakesModes("twitter", WorkloadTwitter)},
	}
}

// ExperimentNames returns the preset names.
func ExperimentNames() []string {
	var n []string
	for _, e := range Experiments() {
		n = append(n, e.Name)
	}
	return n
}

// LookupExperiment returns the preset called name.
func LookupExperiment(name string) (Experiment, error) {
	for _, e := range Experiments() {
		if e.Name == name {
			return e, nil
		}
	}
	return Experiment{}, fmt.Errorf("%w %q (have %s)", ErrUnknownExperiment, name, strings.Join(ExperimentNames(), ", "))
}

// Filter returns the experiment restricted to the given serializers (all
// when empty).
func (e Experiment) Filter(serializers ...string) Experiment {
	if len(serializers) == 0 {
		return e
	}
	out := e
	out.Runs = nil
	for _, r := range e.Runs {
		for _, s := range serializers {
			if r.Serializer == s {
				out.Runs = append(out.Runs, r)
			}
		}
	}
	return out
}

// WorkloadOnly returns a single-workload experiment comparing every
// serializer on spec (for `cornflakes bench --workload`).
func WorkloadOnly(spec string) Experiment {
	name, _, _ := strings.Cut(spec, ":")
	return Experiment{Name: "workload", Title: "Every serializer on " + spec, Runs: everySerializer(name, spec)}
}
