package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cornflakes-go/cornflakes/naos/naosbench"
)

func init() {
	register(&command{
		name:    "naosbench",
		summary: "Naos' experiments: Go values sent from their own memory vs gob, protobuf, vtprotobuf, msgp, Cornflakes",
		run:     runNaosbench,
	})
}

func runNaosbench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("naosbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "fewer sizes ("+naosbenchSizes(naosbench.QuickSizes)+") and shorter measurements (under 2 minutes)")
	asJSON := fs.Bool("json", false, "print one JSON array of records {structure,size,library,transport,op,value,unit} instead of a table")
	structures := fs.String("structures", "", "comma-separated structures (default all: "+strings.Join(naosbench.Structures, ",")+")")
	libs := fs.String("libraries", "", "comma-separated libraries (default all: "+strings.Join(naosbench.Libraries, ",")+")")
	transports := fs.String("transports", "", "comma-separated transports (default all: "+strings.Join(naosbench.Transports, ",")+")")
	sizes := fs.String("sizes", "", "comma-separated array sizes (default "+naosbenchSizes(naosbench.FullSizes)+")")
	budget := fs.Duration("benchtime", 0, "measurement time per record (default 300ms, 150ms with --quick)")
	fresh := fs.Bool("fresh", false, "TCP receivers decode every array into a new value (default: into the previous one, as far as each library allows)")
	rounds := fs.Int("rounds", 3, "TCP: measure each library this many times, interleaved, and report the medians")
	out := fs.String("out", "", "directory for naosbench.json, naosbench.csv and the PNG plots (default ./out/naosbench-<timestamp>)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cornflakes naosbench: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	cfg := naosbench.Config{Quick: *quick, Budget: *budget, Progress: stderr, Fresh: *fresh, Rounds: *rounds,
		Structures: microbenchList(*structures), Libraries: microbenchList(*libs), Transports: microbenchList(*transports)}
	for _, s := range microbenchList(*sizes) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1<<24 {
			return fmt.Errorf("--sizes: %q is not a size in [1, 2^24]", s)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	recs, err := naosbench.Run(cfg)
	if err != nil {
		return err
	}
	paths, werr := naosbench.WriteFiles(outDir(*out, "naosbench"), recs)
	if werr == nil {
		fmt.Fprintf(stderr, "naosbench: wrote %s\n", strings.Join(paths, ", "))
	}
	// The records reach stdout even if the files could not be written.
	if *asJSON {
		err = naosbench.WriteJSON(stdout, recs)
	} else {
		err = naosbench.WriteTable(stdout, recs)
	}
	if werr != nil {
		return werr
	}
	return err
}

func naosbenchSizes(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
