// Package respbench measures the Redis-compatible server of package resp
// against a real Redis (redis-server) with the real load generator
// (redis-benchmark): the same redis-benchmark flags against both, for a
// few value sizes and pipeline depths, parsed from its CSV output.
//
// Every test and variant is measured in rounds that alternate the servers
// (ours then Redis, Redis then ours, ...), each round with its share of
// the test's requests, so that load from elsewhere on the machine falls
// on both; a Record is the median of its rounds with the least and the
// greatest value (Min, Max), and the ratio of the two servers is the
// median of the ratios of the rounds' pairs. Next to the rate, each round
// measures the CPU time of the server process (the scheduler's run time of
// its threads) and of the redis-benchmark processes (their rusage): per
// request, and as CPUs kept busy on average over the round, which tells
// who bounded the rate (a side near 1.0 CPU that cannot use more is the
// bound).
package respbench

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cornflakes-go/cornflakes/internal/report"
	"github.com/cornflakes-go/cornflakes/resp"
)

// The servers compared, as Record.Server names them.
const (
	Cornflakes = "cornflakes"
	Redis      = "redis"
	Ratio      = "cornflakes/redis"
)

// Record units.
const (
	UnitRPS       = "rps"
	UnitRatio     = "ratio"
	UnitServerCPU = "server_us_per_req"
	UnitClientCPU = "client_us_per_req"
	UnitCPURatio  = "server_cpu_ratio"
	// CPUs kept busy on average during a round: CPU time over wall time.
	UnitServerCPUs = "server_cpus"
	UnitClientCPUs = "client_cpus"
)

// Rounds per test and variant when Options.Rounds is zero.
const (
	DefaultRounds = 5
	QuickRounds   = 3
)

// Tests are the redis-benchmark tests run (its -t names), in this order:
// get reads what set wrote.
var Tests = []string{"set", "get", "mset", "lrange_100"}

// Record is one measurement of one test and variant ("d<value
// bytes>/P<pipeline depth>"), told apart by Unit: the requests/s of one
// server (UnitRPS) and their ratio (UnitRatio, server Ratio); the CPU time
// per request of a server process (UnitServerCPU) and of the
// redis-benchmark processes driving it (UnitClientCPU); the CPUs each kept
// busy (UnitServerCPUs, UnitClientCPUs); and Redis's server CPU per request
// divided by ours (UnitCPURatio, server Ratio, only when both were
// measurable: above 1, ours spends less CPU per request). Value is the
// median of Rounds rounds, Min and Max the least and greatest of them; a
// ratio's rounds are the pairs of a round (the ratio of each pair).
type Record struct {
	Test    string  `json:"test"`
	Variant string  `json:"variant"`
	Server  string  `json:"server"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Rounds  int     `json:"rounds"`
	Client  string  `json:"client"` // the load generator: ClientNative or ClientRedisBenchmark
}

// Options configures Run.
type Options struct {
	Quick bool  // sizes 64 and 4096 B, fewer requests and rounds: about a minute
	Sizes []int // value sizes (-d); default 64, 4096 and, unless Quick, 65536
	// Tests are the tests run, a subset of Tests (run in Tests' order);
	// nil: all of them. "get" needs "set" (it reads what set wrote).
	Tests     []string
	Pipelines []int // pipeline depths (-P); default 1 and 16
	Clients   int   // connections (-c); default 16
	// Rounds is how many rounds of each test and variant run against each
	// server, alternating the servers; the requests of a test (Requests,
	// Bytes) are split evenly across them, each round at least Clients.
	// Zero: DefaultRounds (Quick: QuickRounds).
	Rounds int
	// Requests is -n of every test, times 4 pipelined (lrange_100: at
	// most what makes 400 MB of replies). Zero: 100000 (Quick: 20000),
	// times 4 pipelined, bounded by Bytes.
	Requests int
	// Bytes bounds the value bytes one test moves when Requests is zero:
	// -n is at most Bytes divided by the value bytes of one request (the
	// value for set and get, ten values for mset, the hundred values of
	// an lrange_100 reply), and at least Clients. Zero: DefaultBytes
	// (Quick: QuickBytes).
	Bytes int64
	// Threads is redis-benchmark's --threads (0 or 1: its default single
	// thread): the client's work spread over that many threads.
	Threads int
	// Procs runs that many redis-benchmark processes at once per test
	// (0 or 1: one), each with Clients connections and its share of the
	// requests; the rate of a test is the sum of theirs.
	Procs int
	// Pin pins the server (ours: every thread of this process; Redis:
	// every thread of redis-server) to CPU 0 and the redis-benchmark
	// processes to the other CPUs (taskset), so the client never takes the
	// server's CPU. It needs at least two CPUs.
	Pin      bool
	Progress io.Writer // progress lines (nil: none)
	// Client is the load generator driving both servers: ClientNative
	// (this package's, run as NativeCommand) or ClientRedisBenchmark;
	// "" is DefaultClient.
	Client string
	// NativeCommand is the command line that runs LoadMain, to which the
	// redis-benchmark flags are appended; nil: this executable with
	// "resp load" (the cornflakes command).
	NativeCommand []string
	// Server configures the cornflakes server (its zero value: the
	// defaults of resp.NewServer).
	Server resp.Config
}

// selectTests returns the tests of Tests named in want, in Tests' order
// (all of them when want is empty), or an error for an unknown name or a
// "get" without "set".
func selectTests(want []string) ([]string, error) {
	if len(want) == 0 {
		return Tests, nil
	}
	on := map[string]bool{}
	for _, t := range want {
		if !slices.Contains(Tests, t) {
			return nil, fmt.Errorf("respbench: test %q: want one of %s", t, strings.Join(Tests, ", "))
		}
		on[t] = true
	}
	if on["get"] && !on["set"] {
		return nil, errors.New("respbench: test get reads what set wrote: select set too")
	}
	var out []string
	for _, t := range Tests {
		if on[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// CheckTests reports whether tests is a valid Options.Tests.
func CheckTests(tests []string) error {
	_, err := selectTests(tests)
	return err
}

// Byte budgets of a test when Options.Requests is zero (Options.Bytes).
const (
	DefaultBytes = 512 << 20
	QuickBytes   = 128 << 20
)

// Binaries returns the paths of redis-server and redis-benchmark, or an
// error saying how to install them.
func Binaries() (server, benchmark string, err error) {
	server, err1 := exec.LookPath("redis-server")
	benchmark, err2 := exec.LookPath("redis-benchmark")
	if err1 != nil || err2 != nil {
		return "", "", errors.New("respbench: redis-server and redis-benchmark are needed: apt-get install redis-server redis-tools")
	}
	return server, benchmark, nil
}

// Run starts the cornflakes server and a redis-server on free loopback
// ports, runs rounds of redis-benchmark against each in turn, stops both,
// and returns the records per test and variant (cornflakes, redis, then
// the ratios), in run order.
func Run(ctx context.Context, o Options) ([]Record, error) {
	serverBin, benchBin, err := Binaries()
	if err != nil {
		return nil, err
	}
	if o.Client == "" {
		o.Client = DefaultClient
	}
	var prefix []string
	switch o.Client {
	case ClientRedisBenchmark:
	case ClientNative:
		if len(o.NativeCommand) == 0 {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("respbench: the native client runs this executable: %w", err)
			}
			o.NativeCommand = []string{exe, "resp", "load"}
		}
		benchBin, prefix = o.NativeCommand[0], o.NativeCommand[1:]
	default:
		return nil, fmt.Errorf("respbench: client %q: want %s or %s", o.Client, ClientNative, ClientRedisBenchmark)
	}
	tests, err := selectTests(o.Tests)
	if err != nil {
		return nil, err
	}
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 4096}
		if !o.Quick {
			o.Sizes = append(o.Sizes, 65536)
		}
	}
	if len(o.Pipelines) == 0 {
		o.Pipelines = []int{1, 16}
	}
	if o.Clients <= 0 {
		o.Clients = 16
	}
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = DefaultRounds
		if o.Quick {
			rounds = QuickRounds
		}
	}
	base, budget := o.Requests, int64(0)
	if base <= 0 {
		base, budget = 100000, o.Bytes
		if o.Quick {
			base = 20000
		}
		if budget <= 0 {
			budget = DefaultBytes
			if o.Quick {
				budget = QuickBytes
			}
		}
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}

	srv, err := resp.NewServer(o.Server)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	rs, err := startRedis(ctx, serverBin)
	if err != nil {
		return nil, err
	}
	defer rs.stop()

	pids := map[string]int{Cornflakes: os.Getpid(), Redis: rs.cmd.Process.Pid}
	var clientCPUs string
	if o.Pin {
		restore, cpus, err := pinServers(pids)
		if err != nil {
			return nil, err
		}
		defer restore()
		clientCPUs = cpus
	}
	drv := driver{bin: benchBin, prefix: prefix, clients: o.Clients, threads: o.Threads, procs: max(o.Procs, 1), cpus: clientCPUs}
	ports := map[string]string{Cornflakes: port(ln.Addr().String()), Redis: rs.port}
	m := measurer{drv: drv, ports: ports, pids: pids, progress: progress}
	var recs []Record
	for _, size := range o.Sizes {
		for _, pipe := range o.Pipelines {
			variant := fmt.Sprintf("d%d/P%d", size, pipe)
			first := len(recs)
			for _, test := range tests {
				n := max(requests(base, budget, o.Clients, test, size, pipe)/rounds, o.Clients)
				got := map[string][]sample{}
				var ratios, cpuRatios []float64
				for r := range rounds {
					order := []string{Cornflakes, Redis}
					if r%2 == 1 { // ABBA: neither server always runs second
						order[0], order[1] = Redis, Cornflakes
					}
					pair := map[string]sample{}
					for _, server := range order {
						if err := ctx.Err(); err != nil {
							return recs, err
						}
						sm, err := m.round(ctx, server, test, variant, size, pipe, n, r, rounds)
						if err != nil {
							return recs, err
						}
						pair[server] = sm
						got[server] = append(got[server], sm)
					}
					ratios = append(ratios, pair[Cornflakes].rps/pair[Redis].rps)
					if pair[Cornflakes].serverCPU > 0 && pair[Redis].serverCPU > 0 { // both measurable
						cpuRatios = append(cpuRatios, pair[Redis].serverCPU/pair[Cornflakes].serverCPU)
					}
				}
				for _, server := range []string{Cornflakes, Redis} {
					ss := got[server]
					recs = append(recs,
						summary(test, variant, server, UnitRPS, ss, func(s sample) float64 { return s.rps }),
						summary(test, variant, server, UnitServerCPU, ss, func(s sample) float64 { return s.serverCPU }),
						summary(test, variant, server, UnitClientCPU, ss, func(s sample) float64 { return s.clientCPU }),
						summary(test, variant, server, UnitServerCPUs, ss, func(s sample) float64 { return s.serverCPUs }),
						summary(test, variant, server, UnitClientCPUs, ss, func(s sample) float64 { return s.clientCPUs }))
				}
				recs = append(recs, newRecord(test, variant, Ratio, UnitRatio, ratios))
				if len(cpuRatios) > 0 {
					recs = append(recs, newRecord(test, variant, Ratio, UnitCPURatio, cpuRatios))
				}
			}
			for i := first; i < len(recs); i++ {
				recs[i].Client = o.Client
			}
		}
	}
	return recs, nil
}

// flushSettle is how long a round waits after its FLUSHALL: longer than
// the 100 ms tick on which package resp returns freed memory.
const flushSettle = 250 * time.Millisecond

// sample is what one round of one test measured against one server: its
// rate, the CPU time per request of the server and of the client, and the
// CPUs each kept busy on average (CPU time over the round's wall time).
type sample struct {
	rps, serverCPU, clientCPU, serverCPUs, clientCPUs float64
}

// measurer runs the rounds of Run.
type measurer struct {
	drv      driver
	ports    map[string]string
	pids     map[string]int
	progress io.Writer
}

// round runs one redis-benchmark test with n requests against server and
// returns what it measured.
func (m measurer) round(ctx context.Context, server, test, variant string, size, pipe, n, r, rounds int) (sample, error) {
	// Only before lrange_100, whose LPUSH grows the list with every
	// round: set, mset and get use fixed keys (redis-benchmark without -r
	// writes "key:__rand_int__" itself), which set and mset overwrite and
	// get reads after set has written them with the same size. A FLUSHALL
	// before them would also charge their rounds with the deferred work of
	// the flush (our server returns freed memory to the system on its next
	// background tick; Redis frees synchronously), hence the settling time
	// after it.
	if test == "lrange_100" {
		if err := flushAll(m.ports[server]); err != nil {
			return sample{}, fmt.Errorf("respbench: %s: FLUSHALL: %w", server, err)
		}
		select {
		case <-ctx.Done():
			return sample{}, ctx.Err()
		case <-time.After(flushSettle):
		}
	}
	cpu0, err := processRuntime(m.pids[server])
	if err != nil {
		return sample{}, err
	}
	t0 := time.Now()
	res, err := m.drv.run(ctx, m.ports[server], test, size, pipe, n)
	if err != nil {
		return sample{}, fmt.Errorf("respbench: %s %s %s: %w", server, test, variant, err)
	}
	wall := time.Since(t0)
	cpu1, err := processRuntime(m.pids[server])
	if err != nil {
		return sample{}, err
	}
	s := sample{
		rps:        res.rps,
		serverCPU:  us(cpu1-cpu0) / float64(res.requests),
		clientCPU:  us(res.cpu) / float64(res.requests),
		serverCPUs: float64(cpu1-cpu0) / float64(wall),
		clientCPUs: float64(res.cpu) / float64(wall),
	}
	fmt.Fprintf(m.progress, "respbench: %-10s %-10s %-10s round %d/%d %9.0f req/s  server %6.2f µs/req %4.2f CPUs  client %6.2f µs/req %4.2f CPUs  (%d requests, %v)\n",
		server, test, variant, r+1, rounds, s.rps, s.serverCPU, s.serverCPUs, s.clientCPU, s.clientCPUs, res.requests, wall.Round(time.Millisecond))
	return s, nil
}

// summary is newRecord over one field of samples.
func summary(test, variant, server, unit string, ss []sample, field func(sample) float64) Record {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = field(s)
	}
	return newRecord(test, variant, server, unit, xs)
}

// newRecord is the record of the rounds xs (at least one): their median
// (of an even count, the mean of the middle two), least and greatest.
func newRecord(test, variant, server, unit string, xs []float64) Record {
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + med) / 2
	}
	return Record{Test: test, Variant: variant, Server: server, Value: med, Unit: unit, Min: s[0], Max: s[len(s)-1], Rounds: len(s)}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// requests is -n for one test: base (four times that pipelined); with a
// budget (> 0), at most budget bytes of values (valueBytes) but at least
// clients requests; without, for LRANGE_100, whose replies carry 100
// values, at most what makes 400 MB of replies (at least 500).
func requests(base int, budget int64, clients int, test string, size, pipe int) int {
	n := base
	if pipe > 1 {
		n *= 4
	}
	if budget > 0 {
		return int(max(int64(clients), min(int64(n), budget/valueBytes(test, size))))
	}
	if test == "lrange_100" {
		n = min(n, max(500, 400<<20/(100*size)))
	}
	return n
}

// valueBytes is the value bytes one request of test moves: redis-benchmark's
// MSET sets 10 keys, its LRANGE_100 answers 100 elements (after an LPUSH
// per request).
func valueBytes(test string, size int) int64 {
	switch test {
	case "mset":
		return 10 * int64(size)
	case "lrange_100":
		return 100 * int64(size)
	}
	return int64(max(size, 1))
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// driver runs redis-benchmark the same way against either server.
type driver struct {
	bin              string
	prefix           []string // arguments before the redis-benchmark flags
	clients, threads int
	procs            int    // processes at once, >= 1
	cpus             string // taskset CPU list of the processes ("": not pinned)
}

// result is what one test measured: requests/s (summed over the
// processes), requests sent (of the test), and the processes' CPU time.
type result struct {
	rps      float64
	requests int
	cpu      time.Duration
}

// run runs one redis-benchmark test against port: d.procs processes at
// once, each with d.clients connections and n/d.procs requests (at least
// d.clients).
func (d driver) run(ctx context.Context, port, test string, size, pipe, n int) (result, error) {
	per := max(n/d.procs, d.clients)
	type done struct {
		rps float64
		cpu time.Duration
		err error
	}
	ch := make(chan done, d.procs)
	var cmds []*exec.Cmd
	var outs []*os.File // the read ends of the processes' stdout and stderr
	defer func() {
		for _, r := range outs {
			_ = r.Close()
		}
	}()
	for range d.procs {
		args := append(slices.Clone(d.prefix), "-h", "127.0.0.1", "-p", port, "-t", test, "-d", strconv.Itoa(size), "-P", strconv.Itoa(pipe),
			"-c", strconv.Itoa(d.clients), "-n", strconv.Itoa(per), "--csv")
		if d.threads > 1 {
			args = append(args, "--threads", strconv.Itoa(d.threads))
		}
		bin := d.bin
		if d.cpus != "" {
			args = append([]string{"-c", d.cpus, bin}, args...)
			bin = "taskset"
		}
		cmds = append(cmds, exec.CommandContext(ctx, bin, args...))
	}
	for i, cmd := range cmds {
		r, w, err := os.Pipe()
		if err == nil {
			cmd.Stdout, cmd.Stderr = w, w
			err = cmd.Start()
			_ = w.Close() // the child's copy keeps the pipe open
		}
		if err != nil {
			if r != nil {
				_ = r.Close()
			}
			for _, c := range cmds[:i] {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			return result{}, fmt.Errorf("redis-benchmark: %w", err)
		}
		outs = append(outs, r)
	}
	for i, cmd := range cmds {
		go func() {
			// The output is read to its end (the process exiting closes
			// it) before Wait: a goroutine reading a pipe waits in the
			// runtime's poller, holding no P, while one in wait4 would
			// hold a P in a system call for the whole round, and with
			// GOMAXPROCS 2 leave none to run the server's accepting
			// goroutine when the new connections arrive (an event loop
			// holds the other): they would wait for the runtime's
			// monitor to take the P back, 3-16 ms of a 40 ms round
			// (docs/perf/resp16.md).
			out, rerr := io.ReadAll(outs[i])
			err := cmd.Wait()
			var cpu time.Duration
			if cmd.ProcessState != nil {
				cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			if err == nil {
				err = rerr
			}
			if err != nil {
				ch <- done{err: fmt.Errorf("redis-benchmark: %v: %s", err, bytes.TrimSpace(out))}
				return
			}
			if strings.Contains(strings.ToLower(string(out)), "error") {
				ch <- done{err: fmt.Errorf("redis-benchmark reported errors: %s", bytes.TrimSpace(out))}
				return
			}
			v, err := ParseCSV(out, test)
			ch <- done{rps: v, cpu: cpu, err: err}
		}()
	}
	res := result{requests: per * d.procs}
	var first error
	for range cmds {
		r := <-ch
		if r.err != nil && first == nil {
			first = r.err
		}
		res.rps += r.rps
		res.cpu += r.cpu
	}
	return res, first
}

// ParseCSV returns the requests/s of test in redis-benchmark's --csv
// output: a header row naming the columns ("test", "rps", ...) and one row
// per test, named in upper case with a comment ("LRANGE_100 (first 100
// elements)"); rows of other tests (the LPUSH that fills the list for
// LRANGE) are skipped.
func ParseCSV(b []byte, test string) (float64, error) {
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark CSV: %w", err)
	}
	if len(rows) == 0 {
		return 0, errors.New("redis-benchmark printed no CSV")
	}
	col := -1
	for i, h := range rows[0] {
		if h == "rps" {
			col = i
		}
	}
	if col < 0 || rows[0][0] != "test" {
		return 0, fmt.Errorf("redis-benchmark CSV header %q has no test and rps columns", rows[0])
	}
	for _, r := range rows[1:] {
		name, _, _ := strings.Cut(r[0], " ")
		if !strings.EqualFold(name, test) || col >= len(r) {
			continue
		}
		v, err := strconv.ParseFloat(r[col], 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("redis-benchmark CSV: %s: bad rps %q", test, r[col])
		}
		return v, nil
	}
	return 0, fmt.Errorf("redis-benchmark CSV has no row for %s:\n%s", test, b)
}

// flushAll empties the server at port (LPUSH lists grow with every run).
func flushAll(port string) error {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "*1\r\n$8\r\nFLUSHALL\r\n"); err != nil {
		return err
	}
	line := make([]byte, 5)
	if _, err := io.ReadFull(c, line); err != nil {
		return err
	}
	if string(line) != "+OK\r\n" {
		return fmt.Errorf("reply %q", line)
	}
	return nil
}

// redisServer is a redis-server subprocess without persistence.
type redisServer struct {
	cmd    *exec.Cmd
	port   string
	exited chan struct{}
}

func startRedis(ctx context.Context, bin string) (*redisServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port, released for redis
	if err != nil {
		return nil, err
	}
	p := port(ln.Addr().String())
	_ = ln.Close()
	cmd := exec.Command(bin, "--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning", "--dir", "/tmp")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("respbench: redis-server: %w", err)
	}
	rs := &redisServer{cmd: cmd, port: p, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(rs.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := flushAll(p); err == nil {
			return rs, nil
		}
		select {
		case <-rs.exited:
			return nil, fmt.Errorf("respbench: redis-server exited: %s", strings.TrimSpace(errb.String()))
		case <-ctx.Done():
			rs.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			rs.stop()
			return nil, fmt.Errorf("respbench: redis-server did not answer on port %s: %s", p, strings.TrimSpace(errb.String()))
		}
	}
}

// stop kills the redis-server and waits for it to exit.
func (rs *redisServer) stop() {
	_ = rs.cmd.Process.Kill()
	<-rs.exited
}

// WriteTable prints one row per test and variant: the median requests/s
// of both servers, their ratio with its least and greatest round, the
// server CPU per request of both, and the CPUs server and client kept
// busy.
func WriteTable(w io.Writer, recs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test\tvariant\tcornflakes req/s\tredis req/s\tcornflakes/redis\t(min-max)\tcornflakes µs/req\tredis µs/req\tCPUs: cf srv/cli\tredis srv/cli\t")
	for _, r := range recs {
		if r.Server != Ratio || r.Unit != UnitRatio {
			continue
		}
		cf, rd := find(recs, r.Test, r.Variant, Cornflakes, UnitRPS), find(recs, r.Test, r.Variant, Redis, UnitRPS)
		cfc, rdc := find(recs, r.Test, r.Variant, Cornflakes, UnitServerCPU), find(recs, r.Test, r.Variant, Redis, UnitServerCPU)
		cfs, cfl := find(recs, r.Test, r.Variant, Cornflakes, UnitServerCPUs), find(recs, r.Test, r.Variant, Cornflakes, UnitClientCPUs)
		rds, rdl := find(recs, r.Test, r.Variant, Redis, UnitServerCPUs), find(recs, r.Test, r.Variant, Redis, UnitClientCPUs)
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.2f\t(%.2f-%.2f)\t%.2f\t%.2f\t%.2f/%.2f\t%.2f/%.2f\t\n",
			r.Test, r.Variant, cf, rd, r.Value, r.Min, r.Max, cfc, rdc, cfs, cfl, rds, rdl)
	}
	return tw.Flush()
}

func find(recs []Record, test, variant, server, unit string) float64 {
	for _, r := range recs {
		if r.Test == test && r.Variant == variant && r.Server == server && r.Unit == unit {
			return r.Value
		}
	}
	return 0
}

// WriteFiles writes resp-bench.json, resp-bench.csv and resp-bench.png
// (requests/s of both servers as grouped bars on a log axis) into dir and
// returns their paths.
func WriteFiles(dir string, recs []Record) ([]string, error) {
	d, err := report.Create(dir, "resp bench")
	if err != nil {
		return nil, err
	}
	if err := d.JSON("resp-bench.json", recs); err != nil {
		return d.Paths(), err
	}
	rows := make([][]string, len(recs))
	for i, r := range recs {
		rows[i] = []string{r.Test, r.Variant, r.Server, strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit,
			strconv.FormatFloat(r.Min, 'g', -1, 64), strconv.FormatFloat(r.Max, 'g', -1, 64), strconv.Itoa(r.Rounds), r.Client}
	}
	if err := d.CSV("resp-bench.csv", []string{"test", "variant", "server", "value", "unit", "min", "max", "rounds", "client"}, rows); err != nil {
		return d.Paths(), err
	}
	err = d.Write("resp-bench.png", func(path string) error { return plotRPS(path, recs) })
	return d.Paths(), err
}

func plotRPS(path string, recs []Record) error {
	var cats []string
	vals := map[string][]float64{}
	lo, hi := math.Inf(1), 0.0
	for _, r := range recs {
		if r.Server != Ratio || r.Unit != UnitRatio {
			continue
		}
		cats = append(cats, r.Test+" "+r.Variant)
		for _, s := range []string{Cornflakes, Redis} {
			v := find(recs, r.Test, r.Variant, s, UnitRPS)
			vals[s] = append(vals[s], v)
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	p := plot.New()
	p.Title.Text = "redis-benchmark: cornflakes resp vs Redis (loopback)"
	p.Y.Label.Text = "requests/s (log scale)"
	p.NominalX(cats...)
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	if hi > 0 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = report.LogTicks125{}
		p.Y.Min, p.Y.Max = report.Round125(lo*0.9, false), report.Round125(hi*1.1, true)
	} else {
		p.Y.Min, p.Y.Max = 0, 1
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	p.Legend.Top, p.Legend.Left = true, false
	report.AddGroupedBars(p, &p.Legend, []report.BarSeries{
		{Label: Cornflakes, Color: color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}, Values: vals[Cornflakes]},
		{Label: Redis, Color: color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}, Values: vals[Redis]},
	}, vg.Points(14))
	return p.Save(vg.Length(max(6, len(cats)))*vg.Inch*0.6+2*vg.Inch, 5*vg.Inch, path)
}
