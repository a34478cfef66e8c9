// Package naosbench runs the experiments of the Naos paper (§4.1) in Go:
// the latency and throughput of sending an array of float32, an array of
// points (held by pointer and by value) and an array of key/value pairs
// (held by pointer) with package naos, against encoding/gob, protobuf-go,
// vtprotobuf, tinylib/msgp and Cornflakes' generated messages, over
// loopback TCP and over the RPC transport (package rpc on kernel UDP).
// `cornflakes naosbench` is its command; docs/NAOS.md describes the
// method and the results.
package naosbench

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"time"
)

// Record is one measurement.
type Record struct {
	Structure string  `json:"structure"` // float32, point-ptr, point-val, pair-ptr
	Size      int     `json:"size"`      // elements in the array
	Library   string  `json:"library"`   // naos, naosit, gob, protobuf, vtprotobuf, msgp, cornflakes
	Transport string  `json:"transport"` // tcp, rpc
	Op        string  `json:"op"`        // latency, throughput, cpu (CPU time of both ends per array while streaming)
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"` // µs (latency, cpu), objects/s (throughput: whole arrays received per second)
}

// Transports are the transports measured.
var Transports = []string{"tcp", "rpc"}

// Config selects what Run measures. Zero fields take the defaults.
type Config struct {
	Quick      bool
	Structures []string
	Libraries  []string
	Transports []string
	Sizes      []int
	// Budget is the measurement time per record (default 300 ms, quick
	// 150 ms), split over its rounds.
	Budget time.Duration
	// Fresh makes every TCP receiver decode each array into a new value.
	// By default each receiver decodes into its previous value as far as
	// its library's API allows (naos.RecvInto, msgp and gob reuse arrays,
	// protobuf merges into a truncated list): the steady state of a
	// receiver that is done with one array when the next arrives. Over the
	// RPC transport every receiver decodes into a new value.
	Fresh bool
	// Rounds is how many times each library is measured over TCP, the
	// libraries interleaved, each round with Budget/Rounds (default 3;
	// the RPC transport measures once).
	Rounds int
	// SockBuf, if positive, is SO_RCVBUF and SO_SNDBUF of both ends of
	// every TCP connection, the same for every library; zero leaves the
	// kernel's defaults and its receive buffer autotuning.
	SockBuf  int
	Progress io.Writer
}

// Sizes of the full and the quick run (elements per array).
var (
	FullSizes  = []int{16, 256, 4096, 1 << 16, 1 << 18, 1 << 20}
	QuickSizes = []int{16, 4096, 1 << 16}
)

// rpcMaxSize caps the sizes measured over the RPC transport in a full run
// (a 2^20 pair array is 37 MB, which kernel UDP loopback takes seconds to
// carry several times).
const rpcMaxSize = 1 << 18

func (c *Config) defaults() {
	if len(c.Structures) == 0 {
		c.Structures = Structures
	}
	if len(c.Libraries) == 0 {
		c.Libraries = Libraries
	}
	if len(c.Transports) == 0 {
		c.Transports = Transports
	}
	if len(c.Sizes) == 0 {
		c.Sizes = FullSizes
		if c.Quick {
			c.Sizes = QuickSizes
		}
	}
	if c.Budget <= 0 {
		c.Budget = 300 * time.Millisecond
		if c.Quick {
			c.Budget = 150 * time.Millisecond
		}
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// Run measures every (structure, size, library, transport): latency (the
// median round trip of one array and a one-byte acknowledgement) and
// throughput (arrays received per second while the sender streams them).
func Run(cfg Config) ([]Record, error) {
	cfg.defaults()
	for _, s := range cfg.Structures {
		if !slices.Contains(Structures, s) {
			return nil, fmt.Errorf("naosbench: unknown structure %q (known: %v)", s, Structures)
		}
	}
	for _, l := range cfg.Libraries {
		if !slices.Contains(Libraries, l) {
			return nil, fmt.Errorf("naosbench: unknown library %q (known: %v)", l, Libraries)
		}
	}
	var recs []Record
	for _, tr := range cfg.Transports {
		var h harness
		switch tr {
		case "tcp":
			h = &tcpHarness{reuse: !cfg.Fresh, sockBuf: cfg.SockBuf}
		case "rpc":
			r, err := newRPCHarness()
			if err != nil {
				return recs, err
			}
			h = r
		default:
			return nil, fmt.Errorf("naosbench: unknown transport %q (known: %v)", tr, Transports)
		}
		for _, st := range cfg.Structures {
			for _, n := range cfg.Sizes {
				if tr == "rpc" && !cfg.Quick && n > rpcMaxSize && len(cfg.Sizes) > 1 {
					continue
				}
				d, err := newDataset(st, n)
				if err != nil {
					return recs, err
				}
				var libs []string
				for _, lib := range cfg.Libraries {
					if lib == "naosit" && st != "point-ptr" && st != "pair-ptr" {
						continue // identical to naos without pointer arrays
					}
					libs = append(libs, lib)
				}
				rounds := cfg.Rounds
				if tr == "rpc" {
					rounds = 1
				}
				// Rounds interleave the libraries (each round in a rotated
				// order), so that a change of the machine's load falls on
				// all of them; each record is the median of its rounds.
				got := make(map[string][]result, len(libs))
				for r := 0; r < rounds; r++ {
					for j := range libs {
						lib := libs[(j+r)%len(libs)]
						res, err := h.measure(lib, d, cfg.Budget/time.Duration(rounds))
						if err != nil {
							_ = h.close()
							return recs, fmt.Errorf("naosbench: %s %s %d %s: %w", tr, st, n, lib, err)
						}
						got[lib] = append(got[lib], res)
					}
				}
				for _, lib := range libs {
					res := medianResult(got[lib])
					fmt.Fprintf(cfg.Progress, "naosbench: %-4s %-9s %8d %-10s %10.1f µs %12.0f objects/s %10.1f µs cpu\n", tr, st, n, lib, res.lat, res.tput, res.cpu)
					recs = append(recs,
						Record{st, n, lib, tr, "latency", res.lat, "µs"},
						Record{st, n, lib, tr, "throughput", res.tput, "objects/s"},
						Record{st, n, lib, tr, "cpu", res.cpu, "µs"})
				}
			}
		}
		if err := h.close(); err != nil {
			return recs, err
		}
	}
	return recs, nil
}

// harness runs one transport's measurements.
type harness interface {
	// measure returns the median latency, the throughput and the CPU
	// time per array of library lib sending d.
	measure(lib string, d *dataset, budget time.Duration) (result, error)
	close() error
}

// result is one record's measurements: the median round trip (µs),
// arrays received per second while streaming, and the CPU time of the
// process (sender and receiver) per streamed array (µs).
type result struct{ lat, tput, cpu float64 }

// maxReps and maxStream bound the round trips and the streamed arrays
// of one measurement.
const (
	maxReps   = 2000
	maxStream = 20000
)

// plan returns how many round trips and streamed messages fit in budget,
// given one warm-up round trip of rtt (the RPC harness).

func plan(rtt, budget time.Duration) (reps, stream int) {
	rtt = max(rtt, time.Microsecond)
	reps = int(min(max(budget/2/rtt, 3), maxReps))
	stream = int(min(max(budget/2/rtt, 3), maxStream))
	return reps, stream
}

// medianResult is the median of each measurement over rounds.
func medianResult(rs []result) result {
	pick := func(f func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		sort.Float64s(xs)
		if len(xs)%2 == 0 {
			return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
		}
		return xs[len(xs)/2]
	}
	return result{
		lat:  pick(func(r result) float64 { return r.lat }),
		tput: pick(func(r result) float64 { return r.tput }),
		cpu:  pick(func(r result) float64 { return r.cpu }),
	}
}

func median(xs []time.Duration) time.Duration {
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	return xs[len(xs)/2]
}
