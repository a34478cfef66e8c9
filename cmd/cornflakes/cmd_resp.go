package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/cornflakes-go/cornflakes/resp"
	"github.com/cornflakes-go/cornflakes/resp/respbench"
)

func init() {
	register(&command{
		name:    "resp",
		summary: "Redis-compatible server: resp serve [--addr host:port]; resp bench [--quick] [--json] [--out dir] [--rounds n] [--threads n] [--procs n] [--pin] [--client native|redis-benchmark] (vs redis-server); resp load (the native load generator)",
		run:     runRESP,
	})
}

const respUsage = `usage: cornflakes resp serve [--addr 127.0.0.1:6380] [flags]   serve RESP2/RESP3 until interrupted
       cornflakes resp bench [--quick] [--json] [--out dir]        this server vs redis-server, the same load generator for both
                             [--client native|redis-benchmark]   (server and client CPU per request reported)
                             [--threads n] [--procs n] [--pin]
       cornflakes resp load -h host -p port -t test -d bytes -P depth -c conns -n requests
                                                                 the native load generator (redis-benchmark's flags; replies checked; CSV)`

func runRESP(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, respUsage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return runRESPServe(args[1:], stdout, stderr)
	case "bench":
		return runRESPBench(args[1:], stdout, stderr)
	case "load":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		switch respbench.LoadMain(ctx, args[1:], stdout, stderr) {
		case 0:
			return nil
		case 2:
			return errUsage
		}
		return errors.New("resp load failed")
	}
	fmt.Fprintln(stderr, respUsage)
	return errUsage
}

// respServeReady, when set (tests), gets the listener's address once the
// server accepts connections, and the server stops when the context
// returned by respServeContext is done.
var (
	respServeReady   func(addr string)
	respServeContext = func() (context.Context, context.CancelFunc) {
		return signal.NotifyContext(context.Background(), os.Interrupt)
	}
)

func runRESPServe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("resp serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6380", "TCP address to listen on")
	poolMB := fs.Int64("pool-mb", resp.DefaultPoolBytes>>20, "registered memory for values, MiB")
	threshold := fs.Int("threshold", resp.DefaultThreshold, "zero-copy threshold in bytes: values at least this large are written from registered memory (-1: copy everything)")
	maxConns := fs.Int("max-conns", resp.DefaultMaxConns, "most connections served at once (Redis's maxclients)")
	pass := fs.String("requirepass", "", "password of the default user (default: none, and protected mode serves loopback clients only)")
	var users []resp.User
	fs.Func("user", "an ACL user name:password[:ro] (ro: read-only); repeatable", func(v string) error {
		f := strings.Split(v, ":")
		if len(f) < 2 || len(f) > 3 || f[0] == "" || (len(f) == 3 && f[2] != "ro") {
			return errors.New("want name:password or name:password:ro")
		}
		users = append(users, resp.User{Name: f[0], Password: f[1], ReadOnly: len(f) == 3})
		return nil
	})
	protected := fs.Bool("protected-mode", true, "without a password, serve loopback clients only (as Redis's protected-mode)")
	maxMem := fs.String("maxmemory", "0", "dataset bound in bytes, or with k/kb/m/mb/g/gb (0: none)")
	policy := fs.String("maxmemory-policy", resp.PolicyNoEviction, "noeviction or allkeys-lru")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9090; default: none)")
	idle := fs.Duration("timeout", 0, "close clients idle this long (0: never)")
	cmdTimeout := fs.Duration("command-timeout", resp.DefaultCommandTimeout, "close clients that take longer to send one command (negative: never)")
	goroutines := fs.Bool("goroutines", false, "serve each connection on a goroutine of its own instead of the epoll event loops")
	loops := fs.Int("loops", 0, "event loops (default: GOMAXPROCS/2, at least 1)")
	busyPoll := fs.Duration("busy-poll", 0, "event loops poll without sleeping this long after their last event, e.g. 50us (0: always sleep in epoll_wait)")
	recvBuf := fs.Int("recv-buffer", 0, "receive buffer (SO_RCVBUF, bytes) an event loop sets on a connection that sends a large argument (0: 4 MiB; negative: never, the kernel's autotuning)")
	noRing := fs.Bool("no-io-uring", false, "event loops make one system call per read and per write instead of batching them with io_uring")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	mm, err := resp.ParseMemory(*maxMem)
	if err != nil {
		fmt.Fprintf(stderr, "resp serve: --maxmemory %q: %v\n", *maxMem, err)
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "resp serve: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	if *busyPoll < 0 {
		fmt.Fprintf(stderr, "resp serve: --busy-poll must be >= 0\n")
		return errUsage
	}
	if *threshold < -1 {
		fmt.Fprintf(stderr, "resp serve: --threshold must be >= -1\n")
		return errUsage
	}
	th := *threshold
	if th == 0 {
		th = 1 // every value (resp.Config's 0 means the default; an empty value has nothing to send)
	}
	cfg := resp.Config{PoolBytes: *poolMB << 20, Threshold: th, MaxConns: *maxConns, Password: *pass, Users: users,
		NoProtectedMode: !*protected, MaxMemory: mm, MaxMemoryPolicy: *policy, IdleTimeout: *idle, CommandTimeout: *cmdTimeout,
		GoroutinePerConn: *goroutines, EventLoops: *loops, BusyPoll: *busyPoll, RecvBuffer: *recvBuf, NoIOUring: *noRing}
	if *cmdTimeout == 0 {
		cfg.CommandTimeout = -1
	}
	srv, err := resp.NewServer(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "resp serve: %v\n", err)
		return errUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = srv.Close()
		return err
	}
	ctx, stop := respServeContext()
	defer stop()
	stopMetrics, err := startMetrics("resp serve", *metricsAddr, stderr, []counterFunc{
		{"cornflakes_resp_commands_total", "Commands answered.", func() uint64 { return srv.Stats().Commands }},
		{"cornflakes_resp_errors_total", "Error replies.", func() uint64 { return srv.Stats().Errors }},
		{"cornflakes_resp_zerocopy_values_total", "Values written from registered memory without a copy.", func() uint64 { return srv.Stats().ZeroCopy }},
		{"cornflakes_resp_zerocopy_bytes_total", "Bytes of those values.", func() uint64 { return srv.Stats().ZCBytes }},
	})
	if err != nil {
		_ = ln.Close()
		_ = srv.Close()
		return err
	}
	defer stopMetrics()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "resp serve: listening on %s (zero-copy threshold %s)\n", ln.Addr(), thresholdString(cfg.Threshold))
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() && *pass == "" && len(users) == 0 {
		if *protected {
			fmt.Fprintf(stderr, "resp serve: WARNING: no password set: protected mode serves loopback clients only; set --requirepass or --protected-mode=false\n")
		} else {
			fmt.Fprintf(stderr, "resp serve: WARNING: serving every interface with no password (--protected-mode=false)\n")
		}
	}
	if respServeReady != nil {
		respServeReady(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		_ = srv.Close()
		return err
	}
	cerr := srv.Close()
	if err := <-served; !errors.Is(err, resp.ErrServerClosed) {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "resp serve: %d connections, %d commands, %d errors, %d values (%d bytes) sent zero-copy\n",
		st.Conns, st.Commands, st.Errors, st.ZeroCopy, st.ZCBytes)
	return cerr
}

func thresholdString(t int) string {
	if t < 0 {
		return "off: every value is copied"
	}
	return strconv.Itoa(t) + " B"
}

func runRESPBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("resp bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "value sizes 64 and 4096 B only and fewer requests (under a minute)")
	asJSON := fs.Bool("json", false, "print an array of {test,variant,server,value,unit,min,max,rounds} records")
	out := fs.String("out", "", "directory for resp-bench.json, resp-bench.csv and resp-bench.png (default ./out/resp-bench-<timestamp>)")
	sizes := fs.String("sizes", "", "comma-separated value sizes in bytes (redis-benchmark -d); default 64,4096 and, without --quick, 65536")
	pipelines := fs.String("pipelines", "", "comma-separated pipeline depths (redis-benchmark -P); default 1,16")
	tests := fs.String("tests", "", "comma-separated tests to run, of "+strings.Join(respbench.Tests, ",")+" (get needs set); default all")
	requests := fs.Int("n", 0, "requests per test (redis-benchmark -n; 4x when pipelined, fewer for lrange_100 with large values); "+
		"default: 100000 (20000 with --quick), 4x when pipelined, bounded by --bytes")
	budget := fs.String("bytes", "", "without -n: the most value bytes one test moves (-n is at most this divided by the value bytes of one request: "+
		"the value for set and get, 10 values for mset, 100 for an lrange_100 reply; at least -c); with k/kb/m/mb/g/gb; default 512mb (128mb with --quick)")
	clients := fs.Int("c", 16, "connections (redis-benchmark -c)")
	goroutines := fs.Bool("goroutines", false, "serve each connection on a goroutine of its own instead of the epoll event loops")
	loops := fs.Int("loops", 0, "event loops (default: GOMAXPROCS/2, at least 1)")
	busyPoll := fs.Duration("busy-poll", 0, "event loops poll without sleeping this long after their last event, e.g. 50us (0: always sleep in epoll_wait)")
	recvBuf := fs.Int("recv-buffer", 0, "receive buffer (SO_RCVBUF, bytes) an event loop sets on a connection that sends a large argument (0: 4 MiB; negative: never, the kernel's autotuning)")
	threads := fs.Int("threads", 0, "redis-benchmark --threads: client threads per redis-benchmark process (0: its single thread)")
	procs := fs.Int("procs", 1, "redis-benchmark processes run at once per test, each with -c connections and its share of the requests; the rates are summed")
	rounds := fs.Int("rounds", 0, "rounds per test and variant, alternating the servers, the requests split across them; "+
		"the records are the median with the least and greatest round (default 5, 3 with --quick)")
	client := fs.String("client", respbench.DefaultClient, "load generator for both servers: native (resp load, replies checked) or redis-benchmark")
	pin := fs.Bool("pin", false, "pin the server under test to CPU 0 and redis-benchmark to the other CPUs (taskset), the same for both servers")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "resp bench: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	o := respbench.Options{Quick: *quick, Requests: *requests, Clients: *clients, Progress: stderr,
		Threads: *threads, Procs: *procs, Pin: *pin, Rounds: *rounds, Client: *client,
		Server: resp.Config{GoroutinePerConn: *goroutines, EventLoops: *loops, BusyPoll: *busyPoll, RecvBuffer: *recvBuf}}
	var err error
	if o.Sizes, err = intList(*sizes, 1, 1<<20); err != nil {
		fmt.Fprintf(stderr, "resp bench: --sizes: %v\n", err)
		return errUsage
	}
	if *tests != "" {
		o.Tests = strings.Split(*tests, ",")
		if err := respbench.CheckTests(o.Tests); err != nil {
			fmt.Fprintf(stderr, "resp bench: --tests: %v\n", err)
			return errUsage
		}
	}
	if o.Pipelines, err = intList(*pipelines, 1, 1024); err != nil {
		fmt.Fprintf(stderr, "resp bench: --pipelines: %v\n", err)
		return errUsage
	}
	if *budget != "" {
		b, err := resp.ParseMemory(*budget)
		if err != nil || b <= 0 {
			fmt.Fprintf(stderr, "resp bench: --bytes %q: want a positive size\n", *budget)
			return errUsage
		}
		o.Bytes = b
	}
	if *requests < 0 || *clients < 1 || *busyPoll < 0 || *threads < 0 || *threads > 64 || *procs < 1 || *procs > 64 || *rounds < 0 || *rounds > 100 {
		fmt.Fprintln(stderr, "resp bench: -n and --busy-poll must be >= 0, -c >= 1, --threads in [0, 64], --procs in [1, 64] and --rounds in [0, 100]")
		return errUsage
	}
	if *client != respbench.ClientNative && *client != respbench.ClientRedisBenchmark {
		fmt.Fprintf(stderr, "resp bench: --client %q: want native or redis-benchmark\n", *client)
		return errUsage
	}
	if _, _, err := respbench.Binaries(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	recs, err := respbench.Run(ctx, o)
	if err != nil {
		return err
	}
	dir := outDir(*out, "resp-bench")
	// The results reach stdout even when the files cannot be written.
	paths, werr := respbench.WriteFiles(dir, recs)
	if werr == nil {
		fmt.Fprintf(stderr, "resp bench: wrote %s\n", strings.Join(paths, ", "))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(recs)
	} else {
		err = respbench.WriteTable(stdout, recs)
	}
	if werr != nil {
		return werr
	}
	return err
}

// intList parses "a,b,c" (parseInts) into integers in [lo, hi]; "" is nil.
func intList(s string, lo, hi int) ([]int, error) {
	out, err := parseInts(s)
	if err != nil {
		return nil, err
	}
	for _, v := range out {
		if v < lo || v > hi {
			return nil, fmt.Errorf("%d is not in [%d, %d]", v, lo, hi)
		}
	}
	return out, nil
}
