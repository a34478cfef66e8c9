package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/kvbench"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "key-value store benchmark: max load at the p99 SLO per serializer (the paper's §6)",
		run:     runBench,
	})
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exp := fs.String("experiment", "", "preset: "+strings.Join(bench.ExperimentNames(), "|")+" (default: \"default\", every serializer on twitter)")
	wl := fs.String("workload", "", "compare every serializer on one workload instead of a preset: ycsb|google|twitter|cdn or a full spec (e.g. ycsb:shape=2x2048,layout=multi)")
	dp := fs.String("datapath", "", "datapath: shm (shared memory between processes: zero-copy on both sides), udp (kernel UDP on loopback), memnet, or xdp (AF_XDP between two network namespaces; root); "+
		"default: shm next to udp for the main job (no --experiment, --workload or --server), udp otherwise")
	quick := fs.Bool("quick", false, "short points and sweeps")
	asJSON := fs.Bool("json", false, "print the results as a JSON array on stdout")
	asMarkdown := fs.Bool("markdown", false, "print the comparison tables as Markdown on stdout")
	out := fs.String("out", "", "directory for results.json, results.csv and the PNG plots (default ./out/bench-<timestamp>)")
	sloUS := fs.Float64("slo-us", 0, "p99 latency SLO in µs (default 500)")
	dur := fs.Duration("duration", 0, "length of each load point (default 2s, 1s with no --experiment/--workload, 500ms with --quick)")
	budget := fs.Duration("budget", 0, "wall-time budget of the whole sweep (default 150s, 40s with no --experiment/--workload, 90s with --quick)")
	anchor := fs.Float64("anchor", bench.DefaultAnchor, "start each sweep at this fraction of the serializer's saturated rate, measured first (0: start at 5000 req/s and double)")
	sers := fs.String("serializers", "", "comma-separated subset of: "+strings.Join(kv.Serializers, ","))
	endpoints := fs.Int("endpoints", 1, "server endpoints (cores); keys are sharded across them")
	threshold := fs.Int("threshold", 0, "copy threshold of cornflakes/hybrid in bytes (default: the datapath's calibrated one: udp 16384, shm and memnet 512, xdp copy mode 2048)")
	serverSpin := fs.Duration("server-spin", 0, "without busy polling: how long a server endpoint keeps polling after its last request before it sleeps, e.g. 20us (default: sleep at once; the saturation point's server_sleeps_per_req counts the sleeps)")
	sessions := fs.Int("sessions", kvbench.DefaultSessions, fmt.Sprintf("RPC sessions per server endpoint of each load-generator connection (1..%d; one holds 8 requests; 0: the default); the saturation point uses 4/k connections of k sessions, its 32 requests in flight through 4/k event loops (1: four single-session connections, as before session 23)", kv.MaxSessions))
	var busyPoll busyPollFlag
	fs.Var(&busyPoll, "busy-poll", "auto|true|false: server endpoints and load generator poll without sleeping, as the paper's servers do (auto, the default: when there are endpoints+1 CPUs, the datapath is not memnet and the machine check finds the CPUs free)")
	server := fs.String("server", "", "host:port of a running `cornflakes kv serve` to drive instead of an in-process server (the paper's two-machine setup over udp, or another process on this host over shm; give --datapath and --endpoints as the server's)")
	local := fs.String("local", "", "IP the load generator binds (default 127.0.0.1; with --server on another machine, an address of this one it can reach)")
	cc := fs.Bool("cc", false, "congestion control (Timely + rate limiter) in the load generator's RPC sessions (off, as in the paper)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (server and load generator) to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	if *anchor == 0 {
		*anchor = -1 // kvbench.BenchConfig: negative for the fixed start
	} else if !(*anchor > 0 && *anchor <= 1) {
		fmt.Fprintf(stderr, "bench: --anchor %v: want a fraction in (0, 1], or 0\n", *anchor)
		return errUsage
	}
	if *exp != "" && *wl != "" {
		fmt.Fprintln(stderr, "bench: --experiment and --workload are exclusive")
		return errUsage
	}
	if *dp == kv.DatapathXDP {
		if err := xdp.Available(); err != nil {
			return fmt.Errorf("bench: --datapath xdp: %w", err)
		}
	}
	datapaths := []string{*dp}
	if *dp == "" {
		datapaths = []string{kv.DatapathUDP}
		if *exp == "" && *wl == "" && *server == "" {
			datapaths = mainJobDatapaths
		}
	}

	cfg := kvbench.BenchConfig{
		Experiment: *exp, Workload: benchWorkloadSpec(*wl), Quick: *quick,
		SLO: time.Duration(*sloUS * float64(time.Microsecond)), Duration: *dur, Budget: *budget, Anchor: *anchor,
		Endpoints: *endpoints, Threshold: *threshold, BusyPoll: busyPoll.mode, CC: *cc, Progress: stderr, Log: stderr,
		ServerSpin: *serverSpin, Sessions: *sessions,
	}
	if *sessions < 0 || *sessions > kv.MaxSessions {
		fmt.Fprintf(stderr, "bench: --sessions %d: want 0..%d\n", *sessions, kv.MaxSessions)
		return errUsage
	}
	if *serverSpin < 0 {
		fmt.Fprintf(stderr, "bench: --server-spin %v: want >= 0\n", *serverSpin)
		return errUsage
	}

	var err error
	if cfg.Server, cfg.Local, err = parseServerFlags("bench", *server, *local, stderr); err != nil {
		return err
	}
	if *sers != "" {
		cfg.Serializers = strings.Split(*sers, ",")
	}
	dir := outDir(*out, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile("bench", *cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	t0 := time.Now()
	series, err := runBenchOn(ctx, cfg, datapaths, stderr)
	bench.Compare(series) // the table's "vs" columns, for results.json and --json
	if len(series) > 0 {
		paths, werr := bench.WriteFiles(dir, "", series)
		if werr != nil && err == nil {
			err = werr
		}
		if *asJSON {
			if jerr := bench.WriteJSON(stdout, series); jerr != nil && err == nil {
				err = jerr
			}
		} else if *asMarkdown {
			if merr := bench.WriteMarkdown(stdout, series); merr != nil && err == nil {
				err = merr
			}
		} else if terr := bench.WriteTable(stdout, series); terr != nil && err == nil {
			err = terr
		}
		fmt.Fprintf(stderr, "bench: %d runs in %v; wrote %s\n", len(series), time.Since(t0).Round(time.Second), strings.Join(paths, ", "))
		if s := series[0]; s.StallP99Floorus > s.SLOP99us && !bench.MeetsNone(series) {
			fmt.Fprintf(stderr, "bench: note: the machine check found stalls that alone put the p99 at >= %.0f µs, above the SLO of %.0f µs: "+
				"whether a load point met the SLO depended on when the stalls fell, more than on the serializer, so the \"at SLO\" columns are a draw here. "+
				"Compare the saturated throughput and server CPU columns, or rerun on a quieter machine or with --slo-us above %.0f\n",
				s.StallP99Floorus, s.SLOP99us, s.StallP99Floorus)
		}
		if bench.MeetsNone(series) {
			fmt.Fprintf(stderr, "bench: NO serializer met the p99 SLO of %v µs at any offered load, not even the lowest: the round trip itself exceeds it here "+
				"(a loaded or oversubscribed machine: load average %.2f on %d CPUs; scheduling stalls alone put the p99 at >= %.0f µs; see the p50/p99 columns of %s). "+
				"The ranking is in the \"max rps saturated\" column (closed loop, latency unbounded); rerun on an idle machine or with a larger --slo-us\n",
				series[0].SLOP99us, series[0].LoadAvg, series[0].CPUs, series[0].StallP99Floorus, filepath.Join(dir, "results.csv"))
		}
	}
	return err
}

// mainJobDatapaths are the datapaths `cornflakes bench` compares the
// serializers on when run without arguments: shared memory, where no
// kernel copies the values and serialization shows, next to kernel UDP.
var mainJobDatapaths = []string{kv.DatapathShm, kv.DatapathUDP}

// runBenchOn runs cfg on each datapath in turn and returns every series.
// With more than one datapath they share half of the experiment's default
// sweep budget (each datapath repeats the machine check, the preload and
// the saturation points, 9 s of them on the main job: so the main job
// stays within three minutes from a fresh clone), and a datapath that
// fails does not stop the others: its error is reported on stderr and
// returned, joined with the others', after the last.
func runBenchOn(ctx context.Context, cfg kvbench.BenchConfig, datapaths []string, stderr io.Writer) ([]bench.Series, error) {
	if len(datapaths) > 1 && cfg.Budget == 0 {
		_, sweep := bench.PresetDefaults(cfg.Quick)
		if cfg.Experiment == "" && cfg.Workload == "" && !cfg.Quick {
			_, sweep = bench.MainJobDefaults()
		}
		cfg.Budget = sweep.Budget / 2 / time.Duration(len(datapaths))
	}
	var all []bench.Series
	var errs []error
	for _, dp := range datapaths {
		if ctx.Err() != nil {
			break
		}
		c := cfg
		c.Datapath = dp
		if len(datapaths) > 1 {
			fmt.Fprintf(stderr, "bench: datapath %s\n", dp)
		}
		series, err := kvbench.RunBench(ctx, c)
		all = append(all, series...)
		if err != nil {
			err = fmt.Errorf("datapath %s: %w", dp, err)
			if len(datapaths) > 1 {
				fmt.Fprintf(stderr, "bench: %v\n", err)
			}
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}

// benchWorkloadSpec maps the short --workload names to the preset specs
// (sized for a laptop); full specs pass through.
func benchWorkloadSpec(w string) string {
	switch w {
	case "twitter":
		return bench.WorkloadTwitterSmall
	case "cdn":
		return bench.WorkloadCDN
	case "ycsb":
		return bench.WorkloadYCSB + ",shape=2x2048,layout=multi"
	case "google":
		return bench.GoogleSpec(8)
	}
	return w
}

// busyPollFlag is --busy-poll: auto (default), or a boolean (a bare
// --busy-poll means true).
type busyPollFlag struct{ mode kvbench.BusyPollMode }

func (f *busyPollFlag) String() string {
	switch f.mode {
	case kvbench.BusyPollOn:
		return "true"
	case kvbench.BusyPollOff:
		return "false"
	}
	return "auto"
}

func (f *busyPollFlag) Set(s string) error {
	switch s {
	case "auto":
		f.mode = kvbench.BusyPollAuto
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want auto, true or false")
	}
	f.mode = kvbench.BusyPollOff
	if b {
		f.mode = kvbench.BusyPollOn
	}
	return nil
}

func (f *busyPollFlag) IsBoolFlag() bool { return true }
