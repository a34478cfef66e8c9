package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cornflakes-go/cornflakes/calibrate"
	"github.com/cornflakes-go/cornflakes/internal/report"
)

func init() {
	register(&command{
		name:    "calibrate",
		summary: "measure the copy/scatter-gather threshold of this machine and datapath (Cornflakes §5)",
		run:     runCalibrate,
	})
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func runCalibrate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dp := fs.String("datapath", "udp", "datapath: udp, shm (shared memory: its own threshold), memnet or xdp (AF_XDP in network namespaces; needs root)")
	quick := fs.Bool("quick", false, "fewer sizes and shorter phases (under 2 minutes)")
	asJSON := fs.Bool("json", false, "print the result (grid and recommended_threshold) as JSON")
	out := fs.String("out", "", "directory for calibrate-<datapath>.png, .txt, .csv and .json (default ./out/calibrate-<timestamp>)")
	entries := fs.String("entries", "", "comma-separated entry counts (default 1,2,4,8,16,32)")
	sizes := fs.String("sizes", "", "comma-separated total response sizes in bytes (default 64..16384)")
	ws := fs.Int("working-set", 0, "working set in bytes (default 4x the last-level cache)")
	rounds := fs.Int("rounds", 0, "copy/scatter-gather phase pairs per cell (default 10, 7 with --quick)")
	phase := fs.Duration("phase", 0, "length of one phase (default 100ms, 40ms with --quick)")
	verify := fs.Bool("verify", false, "decode every response and compare its values byte for byte (default: sizes)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "calibrate: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	cfg := calibrate.Config{Datapath: *dp, Quick: *quick, WorkingSet: *ws, Rounds: *rounds, Phase: *phase, Verify: *verify, Progress: stderr}
	var err error
	if cfg.Entries, err = parseInts(*entries); err != nil {
		fmt.Fprintf(stderr, "calibrate: --entries: %v\n", err)
		return errUsage
	}
	if cfg.TotalSizes, err = parseInts(*sizes); err != nil {
		fmt.Fprintf(stderr, "calibrate: --sizes: %v\n", err)
		return errUsage
	}
	start := time.Now()
	res, err := calibrate.Run(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "calibrate: %d cells in %v\n", len(res.Cells), time.Since(start).Round(time.Millisecond))
	dir := outDir(*out, "calibrate")
	// The result reaches stdout even when the files cannot be written: a
	// full sweep is not lost to a bad --out.
	base, werr := writeCalibrateFiles(dir, res)
	if werr == nil {
		fmt.Fprintf(stderr, "calibrate: wrote %s.{png,txt,csv,json}\n", base)
	}
	var err2 error
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err2 = enc.Encode(res)
	} else {
		err2 = res.WriteTable(stdout)
	}
	if werr != nil {
		return werr
	}
	return err2
}

// writeCalibrateFiles writes res to dir as calibrate-<datapath>.png (the
// gain grid), .txt (the table), .csv (one row per cell) and .json, and
// returns their common path without the extension.
func writeCalibrateFiles(dir string, res *calibrate.Result) (string, error) {
	d, err := report.Create(dir, "calibrate")
	if err != nil {
		return "", err
	}
	name := "calibrate-" + res.Datapath
	if err := d.Write(name+".png", res.WritePNG); err != nil {
		return "", err
	}
	if err := d.Stream(name+".txt", res.WriteTable); err != nil {
		return "", err
	}
	if err := d.Stream(name+".csv", res.WriteCSV); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), d.JSON(name+".json", res)
}
