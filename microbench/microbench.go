// Package microbench is the in-process serialization microbenchmark the Cornflakes papers run
// (`cornflakes microbench`): for every library, mode, message shape and operation it measures
// the time, allocations and allocated bytes per operation.
//
// Operations (Op):
//   - serialize: build a message from the shape's values and serialize it into the library's
//     reused output buffer(s);
//   - decode: decode a serialized message and read every field (length plus first and last
//     byte of every bytes value, the same for every library);
//   - echo: decode, build a new message from the decoded fields and serialize it, as the
//     papers' echo server does.
//
// Libraries plug in through the Library and Case interfaces; Libraries returns the built-in
// ones (Cornflakes in three modes and the protobuf-go, vtprotobuf, FlatBuffers and Cap'n Proto
// baselines, each used through its fastest documented API, see docs/BASELINES.md).
package microbench

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

// Op is one measured operation.
type Op string

// The operations, in the order they are measured.
const (
	// OpSerialize builds a message from the shape's values and serializes it.
	OpSerialize Op = "serialize"
	// OpDecode decodes a prepared message and reads every value.
	OpDecode Op = "decode"
	// OpEcho decodes, builds a new message from the decoded values and serializes it.
	OpEcho Op = "echo"
)

// Ops returns every operation.
func Ops() []Op { return []Op{OpSerialize, OpDecode, OpEcho} }

// ParseOp returns the Op named s.
func ParseOp(s string) (Op, error) {
	for _, o := range Ops() {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("%w %q (known: serialize, decode, echo)", ErrUnknownOp, s)
}

// Errors returned (wrapped) by this package.
var (
	// ErrUnknownOp: an op name that is not one of Ops.
	ErrUnknownOp = errors.New("microbench: unknown op")
	// ErrUnknownLibrary: a --libraries filter that names no library or mode.
	ErrUnknownLibrary = errors.New("microbench: unknown library")
	// ErrUnknownMode: a mode that the library does not have.
	ErrUnknownMode = errors.New("microbench: unknown mode")
	// ErrMismatch: decoded values that differ from the shape's (or a message with the
	// wrong number of values to echo).
	ErrMismatch = errors.New("microbench: decoded values differ")
)

// Library is one serialization library under test.
type Library interface {
	// Name is the library's name in records: cornflakes, protobuf, vtprotobuf, flatbuffers, capnp.
	Name() string
	// Modes lists the library's modes; a library with a single way of working returns {""}.
	Modes() []string
	// Prepare builds the reusable state of one (shape, mode) case: buffers, builders and the
	// serialized input messages that Decode and Echo read. Prepare is not timed.
	Prepare(shape Shape, mode string) (Case, error)
}

// Case is a prepared (library, mode, shape). Each timed method handles one message and moves on
// to the shape's next variant, cycling. A Case is used by one goroutine; it allocates its
// buffers in Prepare and reuses them, so each method measures the library rather than the
// harness.
type Case interface {
	// Serialize builds a message from the shape's values and serializes it into reused buffers.
	Serialize() error
	// Decode decodes a serialized message and reads every field.
	Decode() error
	// Echo decodes a serialized message, builds a new message from the decoded fields and
	// serializes it.
	Echo() error
	// Output returns a contiguous copy of the message produced by the latest Serialize or Echo
	// (for tests; not timed).
	Output() ([]byte, error)
	// Values decodes msg, a message in this library's format, and returns copies of its values
	// in schema order (for tests; not timed).
	Values(msg []byte) ([][]byte, error)
	// Close releases everything the case holds (registered memory, pools).
	Close() error
}

// Run runs op once on c.
func (o Op) Run(c Case) error {
	switch o {
	case OpSerialize:
		return c.Serialize()
	case OpDecode:
		return c.Decode()
	case OpEcho:
		return c.Echo()
	}
	return fmt.Errorf("%w %q", ErrUnknownOp, string(o))
}

// Result is the measurement of one function.
type Result struct {
	N           int     // iterations of the final timed loop
	NsPerOp     float64 // wall-clock nanoseconds per call
	AllocsPerOp float64 // heap allocations per call (runtime.MemStats.Mallocs)
	BytesPerOp  float64 // heap bytes allocated per call (runtime.MemStats.TotalAlloc)
}

// Measure calls fn once to warm up, then in loops of growing length until about a fifth of
// budget has passed, and finally in one loop sized to fill the rest of the budget, which is the
// one reported, with allocations counted from runtime.ReadMemStats around it (as
// testing.AllocsPerRun does). The first error of fn stops the measurement.
func Measure(fn func() error, budget time.Duration) (Result, error) {
	if budget <= 0 {
		budget = time.Millisecond
	}
	if err := fn(); err != nil {
		return Result{}, err
	}
	loop := func(n int) (time.Duration, error) {
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	const maxN = 1 << 30
	n := 1
	calib := budget / 5
	var d time.Duration
	for {
		var err error
		if d, err = loop(n); err != nil {
			return Result{}, err
		}
		if d >= calib || n >= maxN {
			break
		}
		n = predict(n, d, calib, true)
	}
	n = predict(n, d, budget-calib, false)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	d, err := loop(n)
	runtime.ReadMemStats(&m1)
	if err != nil {
		return Result{}, err
	}
	return Result{
		N:           n,
		NsPerOp:     float64(d.Nanoseconds()) / float64(n),
		AllocsPerOp: float64(m1.Mallocs-m0.Mallocs) / float64(n),
		BytesPerOp:  float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
	}, nil
}

// predict returns the iteration count that should take about target (20% more when
// calibrating, so calibration ends sooner), given that n took d, growing by at most 100× and at
// least by one.
func predict(n int, d, target time.Duration, calibrating bool) int {
	per := d.Nanoseconds() / int64(n)
	if per < 1 {
		per = 1
	}
	want := target.Nanoseconds() / per
	if calibrating {
		want += want / 5
	}
	if want > int64(100*n) {
		want = int64(100 * n)
	}
	if want < int64(n+1) {
		want = int64(n + 1)
	}
	if want > 1<<30 {
		want = 1 << 30
	}
	return int(want)
}

// Record is one measured (library, mode, shape, op); its JSON form is the output of
// `cornflakes microbench --json`.
type Record struct {
	Library     string  `json:"library"`
	Mode        string  `json:"mode"`
	Shape       string  `json:"shape"`
	Op          string  `json:"op"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// VsBestBaseline is NsPerOp over the fastest baseline's of the same
	// shape and op (below 1: faster than every baseline); set by WriteJSON,
	// 0 when the run measured no baseline.
	VsBestBaseline float64 `json:"vs_best_baseline,omitempty"`
}

// Config selects what Run measures.
type Config struct {
	Libraries []Library     // nil: Libraries()
	Modes     []string      // optional "library/mode" or "library" filters; nil: every mode
	Shapes    []Shape       // nil: Shapes()
	Ops       []Op          // nil: Ops()
	Budget    time.Duration // time per record; 0: DefaultBudget
	Progress  io.Writer     // one line per case; nil: silent
}

// Budgets per record: DefaultBudget for a full run, QuickBudget for --quick (462 records: about
// 12 s of CPU time including preparation, about a minute of wall time on a 2-core machine
// shared with a load of 15).
const (
	// DefaultBudget is the measuring time of one record.
	DefaultBudget = 500 * time.Millisecond
	// QuickBudget is the measuring time of one record with --quick.
	QuickBudget = 20 * time.Millisecond
)

// Run measures every selected (library, mode, shape, op) and returns the records in that order.
// A failing case stops the run with an error naming it.
func Run(cfg Config) ([]Record, error) {
	libs := cfg.Libraries
	if libs == nil {
		libs = Libraries()
	}
	shapes := cfg.Shapes
	if shapes == nil {
		shapes = Shapes()
	}
	ops := cfg.Ops
	if ops == nil {
		ops = Ops()
	}
	budget := cfg.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	var recs []Record
	for _, shape := range shapes {
		for _, lib := range libs {
			for _, mode := range lib.Modes() {
				if !selected(cfg.Modes, lib.Name(), mode) {
					continue
				}
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "microbench: %-11s %-12s %s\n", shape.Name, label(lib.Name(), mode), opsString(ops))
				}
				rs, err := runCase(lib, mode, shape, ops, budget)
				if err != nil {
					return recs, fmt.Errorf("%s %s: %w", label(lib.Name(), mode), shape.Name, err)
				}
				recs = append(recs, rs...)
			}
		}
	}
	return recs, nil
}

func runCase(lib Library, mode string, shape Shape, ops []Op, budget time.Duration) (recs []Record, err error) {
	c, err := lib.Prepare(shape, mode)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	for _, op := range ops {
		runtime.GC()
		res, err := Measure(func() error { return op.Run(c) }, budget)
		if err != nil {
			return recs, fmt.Errorf("%s: %w", op, err)
		}
		recs = append(recs, Record{
			Library: lib.Name(), Mode: mode, Shape: shape.Name, Op: string(op),
			NsPerOp: res.NsPerOp, AllocsPerOp: res.AllocsPerOp, BytesPerOp: res.BytesPerOp,
		})
	}
	return recs, nil
}

// selected reports whether filters (each "library" or "library/mode") admit (lib, mode).
func selected(filters []string, lib, mode string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		name, m, hasMode := strings.Cut(f, "/")
		if name == lib && (!hasMode || m == mode) {
			return true
		}
	}
	return false
}

// label is "library" or "library/mode".
func label(lib, mode string) string {
	if mode == "" {
		return lib
	}
	return lib + "/" + mode
}

func opsString(ops []Op) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = string(o)
	}
	return strings.Join(s, ",")
}

// Libraries returns the built-in libraries: Cornflakes first, then the baselines.
func Libraries() []Library {
	return append(cornflakesLibraries(), Baselines()...)
}

// Baselines returns the baseline libraries: protobuf, vtprotobuf, flatbuffers, capnp.
func Baselines() []Library {
	return []Library{Protobuf(), VTProtobuf(), FlatBuffers(), Capnp()}
}

// LibraryNames returns the names of Libraries, in order.
func LibraryNames() []string {
	libs := Libraries()
	out := make([]string, len(libs))
	for i, l := range libs {
		out[i] = l.Name()
	}
	return out
}

// CheckFilters returns an error naming the first filter ("library" or "library/mode") that
// matches none of libs.
func CheckFilters(libs []Library, filters []string) error {
	for _, f := range filters {
		name, m, hasMode := strings.Cut(f, "/")
		found := false
		for _, l := range libs {
			if l.Name() != name {
				continue
			}
			if !hasMode {
				found = true
				break
			}
			for _, mm := range l.Modes() {
				if mm == m {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("%w %q for library %s (modes: %s)", ErrUnknownMode, m, name, strings.Join(l.Modes(), ", "))
			}
		}
		if !found {
			names := make([]string, len(libs))
			for i, l := range libs {
				names[i] = l.Name()
			}
			return fmt.Errorf("%w %q (known: %s)", ErrUnknownLibrary, name, strings.Join(names, ", "))
		}
	}
	return nil
}
