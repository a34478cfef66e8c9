package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cornflakes-go/cornflakes/rpc/rpcbench"
)

func init() {
	register(&command{
		name:    "rpcbench",
		summary: "measure the eRPC-style transport vs the raw datapath and gRPC-Go",
		run:     runRPCBench,
	})
}

func runRPCBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rpcbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dp := fs.String("datapath", "udp", "datapath: udp (loopback), udp-veth (kernel UDP between two network namespaces over a veth pair), shm (shared memory; gRPC-Go over a Unix domain socket, grpc-uds, is its neighbour), memnet or xdp")
	quick := fs.Bool("quick", false, "short measurements (whole run under 3 minutes)")
	asJSON := fs.Bool("json", false, "print an array of {test,variant,datapath,value,unit} records")
	cc := fs.Bool("cc", false, "congestion control (Timely + rate limiter) on in every test, not only in factor")
	only := fs.String("tests", "", "comma-separated subset of: "+strings.Join(rpcbench.Tests, ","))
	out := fs.String("out", "", "directory for rpcbench.json, rpcbench.csv and the PNG plots of the sweeps (default ./out/rpcbench-<timestamp>)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof); samples carry a role label (rpc-client, rpc-server, raw-client, raw-server, grpc): -tagfocus role=rpc-client shows one side")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rpcbench: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	o := rpcbench.Options{Datapath: *dp, Quick: *quick, CC: *cc, Progress: stderr}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	stopProfile, err := startCPUProfile("rpcbench", *cpuProfile)
	if err != nil {
		return err
	}
	recs, err := rpcbench.Run(context.Background(), o)
	stopProfile()
	if err != nil {
		return err
	}
	dir := outDir(*out, "rpcbench")
	// The results reach stdout even when the files cannot be written: a
	// full run is not lost to a bad --out.
	paths, werr := rpcbench.WriteFiles(dir, recs)
	if werr == nil {
		fmt.Fprintf(stderr, "rpcbench: wrote %s\n", strings.Join(paths, ", "))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(recs)
	} else {
		err = rpcbench.WriteTable(stdout, recs)
	}
	if werr != nil {
		return werr
	}
	return err
}
