package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cornflakes-go/cornflakes/calibrate"
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
	dp := fs.String("datapath", "udp", "datapath: udp, memnet or xdp (AF_XDP in network namespaces; needs root)")
	quick := fs.Bool("quick", false, "fewer sizes and shorter phases (under 2 minutes)")
	asJSON := fs.Bool("json", false, "print the result (grid and recommended_threshold) as JSON")
	out := fs.String("out", "", "directory for calibrate-<datapath>.png, .txt and .json (default: none)")
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
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		base := filepath.Join(*out, "calibrate-"+res.Datapath)
		if err := res.WritePNG(base + ".png"); err != nil {
			return err
		}
		f, err := os.Create(base + ".txt")
		if err != nil {
			return err
		}
		if err := res.WriteTable(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		j, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(base+".json", append(j, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "calibrate: wrote %s.{png,txt,json}\n", base)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteTable(stdout)
}
