package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cornflakes-go/cornflakes/microbench"
)

func init() {
	register(&command{
		name:    "microbench",
		summary: "in-process serialization comparison: Cornflakes vs protobuf, vtprotobuf, FlatBuffers, Cap'n Proto",
		run:     runMicrobench,
	})
}

func runMicrobench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("microbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, fmt.Sprintf("short measurements (%v per record instead of %v)", microbench.QuickBudget, microbench.DefaultBudget))
	asJSON := fs.Bool("json", false, "print one JSON array of records {library,mode,shape,op,ns_per_op,allocs_per_op,bytes_per_op} instead of a table")
	shapes := fs.String("shapes", "", "comma-separated shapes (default all: "+strings.Join(microbench.ShapeNames(), ",")+")")
	libs := fs.String("libraries", "", "comma-separated libraries or library/mode (default all: "+strings.Join(microbench.LibraryNames(), ",")+")")
	ops := fs.String("ops", "", "comma-separated ops (default all: serialize,decode,echo)")
	budget := fs.Duration("benchtime", 0, "measurement time per record (overrides --quick)")
	out := fs.String("out", "", "directory for microbench.json, microbench.csv and the PNG plots (default ./out/microbench-<timestamp>)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cornflakes microbench [--quick] [--json] [--shapes a,b] [--libraries x,y/mode] [--ops serialize,decode,echo] [--out dir]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cornflakes microbench: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	cfg := microbench.Config{Progress: stderr, Budget: microbench.DefaultBudget}
	if *quick {
		cfg.Budget = microbench.QuickBudget
	}
	if *budget > 0 {
		cfg.Budget = *budget
	}
	for _, name := range microbenchList(*shapes) {
		s, err := microbench.ShapeByName(name)
		if err != nil {
			return err
		}
		cfg.Shapes = append(cfg.Shapes, s)
	}
	for _, name := range microbenchList(*ops) {
		o, err := microbench.ParseOp(name)
		if err != nil {
			return err
		}
		cfg.Ops = append(cfg.Ops, o)
	}
	cfg.Libraries = microbench.Libraries()
	cfg.Modes = microbenchList(*libs)
	if err := microbench.CheckFilters(cfg.Libraries, cfg.Modes); err != nil {
		return err
	}
	recs, err := microbench.Run(cfg)
	if err != nil {
		return err
	}
	dir := outDir(*out, "microbench")
	paths, werr := microbench.WriteFiles(dir, recs)
	if werr == nil {
		fmt.Fprintf(stderr, "microbench: wrote %s\n", strings.Join(paths, ", "))
	}
	// The records reach stdout even if the files could not be written: a full run is not lost.
	if *asJSON {
		err = microbench.WriteJSON(stdout, recs)
	} else {
		err = microbench.WriteTable(stdout, recs)
	}
	if werr != nil {
		return werr
	}
	return err
}

// microbenchList splits a comma-separated flag value, dropping empty items.
func microbenchList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
