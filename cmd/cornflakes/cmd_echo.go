package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cornflakes-go/cornflakes/echo"
)

func init() {
	register(&command{
		name:    "echo",
		summary: "echo-server experiment: raw, one/two-copy, Cornflakes, protobuf, flatbuffers, capnp over a datapath",
		run:     runEcho,
	})
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func runEcho(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dp := fs.String("datapath", "udp", "datapath: udp, shm (shared memory), memnet or xdp (AF_XDP in network namespaces; needs root)")
	quick := fs.Bool("quick", false, fmt.Sprintf("short runs (%v warmup + %v each)", echo.QuickWarmup, echo.QuickDuration))
	asJSON := fs.Bool("json", false, "print results as a JSON array")
	approaches := fs.String("approaches", strings.Join(echo.Approaches(), ","), "comma-separated approaches")
	shapes := fs.String("shapes", strings.Join(echo.DefaultShapes(), ","), "comma-separated shapes (as in microbench)")
	clients := fs.Int("clients", echo.DefaultClients, "outstanding requests (closed loop)")
	rate := fs.Float64("rate", 0, "open loop: requests per second (0 = closed loop)")
	duration := fs.Duration("duration", 0, "measured time per run (default 5s, 700ms with --quick)")
	warmup := fs.Duration("warmup", 0, "warmup per run (default 1s, 150ms with --quick)")
	verify := fs.Bool("verify", false, "compare every response byte for byte (default: sizes)")
	repeat := fs.Int("repeat", 1, "measure each run this many times (interleaved) and report the median")
	out := fs.String("out", "", "directory for echo.json, echo.csv and the PNG plots (default ./out/echo-<timestamp>)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "echo: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	cfg := echo.Config{
		Datapath: *dp, Approaches: splitList(*approaches), Shapes: splitList(*shapes),
		Clients: *clients, Rate: *rate, Duration: *duration, Warmup: *warmup,
		Verify: *verify, Repeat: *repeat, Progress: stderr, SkipUnavailable: true,
	}
	if *quick {
		if cfg.Duration == 0 {
			cfg.Duration = echo.QuickDuration
		}
		if cfg.Warmup == 0 {
			cfg.Warmup = echo.QuickWarmup
		}
	}
	start := time.Now()
	res, err := echo.Run(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "echo: %d runs in %v\n", len(res), time.Since(start).Round(time.Millisecond))
	echo.Compare(res)
	dir := outDir(*out, "echo")
	// The results reach stdout even when the files cannot be written: a
	// full run is not lost to a bad --out.
	paths, werr := echo.WriteFiles(dir, res)
	if werr == nil {
		fmt.Fprintf(stderr, "echo: wrote %s\n", strings.Join(paths, ", "))
	}
	if err := printEcho(stdout, res, *asJSON); err != nil {
		return err
	}
	return werr
}

// printEcho writes res to w as JSON or as a table.
func printEcho(w io.Writer, res []echo.Result, asJSON bool) error {
	if asJSON {
		if res == nil {
			res = []echo.Result{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "approach\tdatapath\tshape\tclients\tthroughput_rps\tp50_us\tp99_us\tserver_cpu_ns_per_req\tvs_raw_throughput\tvs_raw_server_cpu\t")
	ratio := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", x)
	}
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.0f\t%s\t%s\t\n", r.Approach, r.Datapath, r.Shape, r.Clients, r.ThroughputRPS, r.P50us, r.P99us, r.ServerNsPerReq,
			ratio(r.VsRawThroughput), ratio(r.VsRawServerCPU))
	}
	return tw.Flush()
}
