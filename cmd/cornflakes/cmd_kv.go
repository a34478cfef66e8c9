package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/kvbench" // the baseline serializers kv serve answers and bench drives; the AF_XDP topology
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/workload"
)

func init() {
	register(&command{
		name:    "kv",
		summary: "key-value store: kv serve [--addr host:port] [--workload spec]; kv get|put|del|getlist|append --server host:port ...",
		run:     runKV,
	})
}

const kvUsage = `usage: cornflakes kv serve [flags]                       a server (cornflakes kv serve -h for the flags)
       cornflakes kv get --server host:port key [key...]   one value per key (GetM for several)
       cornflakes kv put --server host:port key value
       cornflakes kv del --server host:port key
       cornflakes kv getlist --server host:port key        every value of a list
       cornflakes kv append --server host:port key value   append to a list`

func runKV(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && kvClientOps[args[0]] != 0 {
		return runKVClient(args[0], args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(stderr, kvUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("kv serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dp := fs.String("datapath", kv.DatapathUDP, "datapath: udp (kernel UDP), shm (shared memory with clients on this host: `cornflakes bench --server ADDR --datapath shm`), memnet (in-process, for testing) or xdp (AF_XDP, root; with a loopback --addr the endpoints run in network namespaces reachable only in-process, give the IP of an interface to serve on it)")
	addr := fs.String("addr", "127.0.0.1:0", "session-management (Nexus) address clients connect to; data sockets bind the same IP")
	wl := fs.String("workload", "", "preload this workload's data set before serving (e.g. twitter, ycsb:shape=2x2048)")
	ser := fs.String("serializer", "", "serve only this serializer (cornflakes[/hybrid|/copy|/zerocopy], protobuf, vtprotobuf, flatbuffers, capnp); default all")
	endpoints := fs.Int("endpoints", 1, "endpoints (one goroutine/core each); keys are sharded across them")
	poolMB := fs.Int64("pool-mb", kv.DefaultPoolBytes>>20, "registered memory for values, MiB")
	dur := fs.Duration("duration", 0, "stop after this long (default: until interrupted)")
	busyPoll := fs.Bool("busy-poll", false, "endpoints poll without ever sleeping (one core each, lowest latency); default: sleep when idle")
	statsEvery := fs.Duration("stats", 0, "print requests/s, errors and keys to stderr at this interval (0: only at exit)")
	credFile := fs.String("credentials", "", "admit only clients holding a credential of this file (lines \"name read|readwrite hex-secret\"; read-only credentials cannot write); SIGHUP reloads it (docs/SECURITY.md)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9090; default: none)")
	allowRemote := fs.Bool("allow-remote", false, "without --credentials, serve on a non-loopback --addr anyway (anyone who can reach it may read and write)")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kv serve: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "kv serve: --addr: %v\n", err)
		return errUsage
	}
	cfg := kv.ServerConfig{Datapath: *dp, Addr: ap, Endpoints: *endpoints, PoolBytes: *poolMB << 20, BusyPoll: *busyPoll}
	if *credFile != "" {
		keys, err := readCredentials(*credFile)
		if err != nil {
			return fmt.Errorf("kv serve: %w", err)
		}
		if cfg.Keys, err = rpc.NewKeyring(keys...); err != nil {
			return fmt.Errorf("kv serve: %s: %w", *credFile, err)
		}
	} else if !ap.Addr().IsLoopback() && !*allowRemote {
		// Protected mode (as Redis): without credentials, only this host.
		fmt.Fprintf(stderr, "kv serve: refusing to serve on %v without --credentials: anyone who can reach it could read and write every key; give --credentials FILE, or --allow-remote to accept that (docs/SECURITY.md)\n", ap.Addr())
		return errUsage
	}
	if *ser != "" {
		name, mode, _ := strings.Cut(*ser, "/")
		var codecs []kv.Codec
		for _, sas := range []bool{true, false} {
			c, err := kv.LookupCodec(name, mode, sas)
			if err != nil {
				return err
			}
			codecs = append(codecs, c)
			if name != kv.SerCornflakes {
				break
			}
		}
		cfg.Codecs = codecs
	}
	if *dp == kv.DatapathXDP {
		if err := xdp.Available(); err != nil {
			return fmt.Errorf("kv serve: --datapath xdp: %w", err)
		}
		// The automatic topology (namespaces) is removed on every return.
		defer func() { _ = xdp.CloseAutoTopology() }()
	}
	srv, err := kv.NewServer(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	if *wl != "" {
		w, err := workload.Parse(benchWorkloadSpec(*wl))
		if err != nil {
			return err
		}
		t0 := time.Now()
		n, err := kvbench.PreloadServer(context.Background(), srv, w)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "kv serve: preloaded %s: %d requests, %d keys in %v\n", w.Name(), n, srv.Store().Len(), time.Since(t0).Round(time.Millisecond))
	}
	stopMetrics, err := startMetrics("kv serve", *metricsAddr, stderr, []counterFunc{
		{"cornflakes_kv_requests_total", "Requests answered.", func() uint64 { return srv.Stats().Requests }},
		{"cornflakes_kv_errors_total", "Requests answered with an error.", func() uint64 { return srv.Stats().Errors }},
		{"cornflakes_kv_denied_total", "Requests refused for their credential's role.", func() uint64 { return srv.Stats().Denied }},
	})
	if err != nil {
		return err
	}
	defer stopMetrics()
	fmt.Fprintf(stdout, "kv serve: listening on %v (%s, %d endpoint(s), ids %d..%d)\n", srv.Addr(), *dp, srv.Endpoints(), kv.FirstEndpointID, kv.FirstEndpointID+srv.Endpoints()-1)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	if cfg.Keys != nil {
		go reloadCredentials(ctx, *credFile, cfg.Keys, stderr)
	}
	reported := make(chan struct{})
	if *statsEvery > 0 {
		go func() { reportServer(ctx, srv, *statsEvery, stderr); close(reported) }()
	} else {
		close(reported)
	}
	<-ctx.Done()
	<-reported
	st := srv.Stats()
	fmt.Fprintf(stderr, "kv serve: %d requests, %d errors, %s\n", st.Requests, st.Errors, srv.Security())
	if ts, err := srv.Transport(); err == nil {
		fmt.Fprintf(stderr, "kv serve: transport: %v\n", ts)
	}
	return srv.Close()
}

// readCredentials parses a credentials file (kv.ParseCredentials).
func readCredentials(path string) ([]rpc.Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	keys, err := kv.ParseCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// reloadCredentials replaces kr's keys with the file's on every SIGHUP
// until ctx is done: keys rotate without a restart. A file that does not
// parse leaves the keys as they were.
func reloadCredentials(ctx context.Context, path string, kr *rpc.Keyring, stderr io.Writer) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		keys, err := readCredentials(path)
		if err == nil {
			err = kr.Set(keys...)
		}
		if err != nil {
			fmt.Fprintf(stderr, "kv serve: credentials not reloaded: %v\n", err)
			continue
		}
		fmt.Fprintf(stderr, "kv serve: credentials reloaded: %d keys\n", len(keys))
	}
}

// reportServer prints one line of server counters every interval until
// ctx is done: the rate of requests and errors since the last line and the
// store's size.
func reportServer(ctx context.Context, srv *kv.Server, every time.Duration, w io.Writer) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastAt := srv.Stats(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st := srv.Stats()
			sec := now.Sub(lastAt).Seconds()
			fmt.Fprintf(w, "kv serve: %.0f req/s, %.0f errors/s, %d keys, %s\n",
				float64(st.Requests-last.Requests)/sec, float64(st.Errors-last.Errors)/sec, srv.Store().Len(), srv.Security())
			last, lastAt = st, now
		}
	}
}
