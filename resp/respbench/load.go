package respbench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The load generators Options.Client chooses between.
const (
	ClientNative         = "native"
	ClientRedisBenchmark = "redis-benchmark"
	// DefaultClient is the one of the two that spends less CPU per
	// request (docs/RESP.md).
	DefaultClient = ClientNative
)

// LoadOptions configures Load: the redis-benchmark flags it implements.
type LoadOptions struct {
	Addr     string // host:port
	Test     string // one of Tests
	Size     int    // value bytes (-d)
	Pipeline int    // requests per batch (-P), >= 1
	Clients  int    // connections (-c), >= 1
	Requests int    // requests of the test (-n), >= 1
}

// LoadResult is what one Load measured. Rates of tests with a preparing
// phase (lrange_100's LPUSH) come first in Phases, as redis-benchmark
// prints them.
type LoadResult struct {
	Phases []Phase
}

// Phase is one measured phase of a load test: its redis-benchmark CSV
// name and requests/s.
type Phase struct {
	Name string
	RPS  float64
}

// loadReadBuffer is the read buffer of one load connection.
const loadReadBuffer = 256 << 10

// phase is one request and the shape of its reply.
type phase struct {
	name  string
	cmd   []byte
	reply Shape
}

// command encodes args as a RESP2 array of bulk strings.
func command(args ...[]byte) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// phases are the requests of test as redis-benchmark 7 sends them
// without -r (the key "key:__rand_int__" literally; lists "mylist"),
// with a value of size bytes of 'x'. listLen is the length of mylist
// when LRANGE runs (lrange_100 answers min(100, listLen) values).
func phases(test string, size, listLen int) ([]phase, error) {
	v := bytes.Repeat([]byte{'x'}, size)
	key := []byte("key:__rand_int__")
	switch test {
	case "set":
		return []phase{{"SET", command([]byte("SET"), key, v), Shape{Kind: '+'}}}, nil
	case "get":
		return []phase{{"GET", command([]byte("GET"), key), Shape{Kind: '$', N: size}}}, nil
	case "mset":
		args := [][]byte{[]byte("MSET")}
		for range 10 {
			args = append(args, key, v)
		}
		return []phase{{"MSET (10 keys)", command(args...), Shape{Kind: '+'}}}, nil
	case "lrange_100":
		return []phase{
			{"LPUSH (needed to benchmark LRANGE)", command([]byte("LPUSH"), []byte("mylist"), v), Shape{Kind: ':'}},
			{"LRANGE_100 (first 100 elements)", command([]byte("LRANGE"), []byte("mylist"), []byte("0"), []byte("99")),
				Shape{Kind: '*', N: size, Elems: min(100, listLen)}},
		}, nil
	}
	return nil, fmt.Errorf("respbench: unknown test %q (want one of %v)", test, Tests)
}

// Load runs one redis-benchmark test against o.Addr with this package's
// own load generator: o.Clients connections (on Linux spread over
// GOMAXPROCS epoll loops, elsewhere each on a goroutine of its own), each
// sending its batch of o.Pipeline requests (built once) with one write
// and reading the replies into a fixed buffer through a
// ReplyScanner, which checks every reply's type and length; the test's
// o.Requests requests are shared out a batch at a time. get first sets
// the key (one SET) so that every GET answers a value of o.Size bytes;
// lrange_100 first runs its LPUSH phase, as redis-benchmark does, and
// expects min(100, the list's length) values per LRANGE. Any reply that
// does not match, or any I/O error, fails the test.
func Load(ctx context.Context, o LoadOptions) (LoadResult, error) {
	if o.Size < 0 || o.Pipeline < 1 || o.Clients < 1 || o.Requests < 1 {
		return LoadResult{}, errors.New("respbench: load: -d >= 0, -P, -c and -n >= 1 wanted")
	}
	ps, err := phases(o.Test, o.Size, 0)
	if err != nil {
		return LoadResult{}, err
	}
	var res LoadResult
	switch o.Test {
	case "get":
		set, _ := phases("set", o.Size, 0)
		if _, err := runPhase(ctx, o.Addr, set[0], 1, 1, 1); err != nil {
			return res, err
		}
	case "lrange_100":
		rps, err := runPhase(ctx, o.Addr, ps[0], o.Pipeline, o.Clients, o.Requests)
		if err != nil {
			return res, err
		}
		res.Phases = append(res.Phases, Phase{ps[0].name, rps})
		n, err := listLen(o.Addr)
		if err != nil {
			return res, err
		}
		ps, _ = phases(o.Test, o.Size, n)
		ps = ps[1:]
	}
	rps, err := runPhase(ctx, o.Addr, ps[0], o.Pipeline, o.Clients, o.Requests)
	if err != nil {
		return res, err
	}
	res.Phases = append(res.Phases, Phase{ps[0].name, rps})
	return res, nil
}

// loadTimeout bounds one batch's write and its replies.
const loadTimeout = 60 * time.Second

// runPhase sends n requests p over clients connections, pipe at a time,
// and returns requests/s (from the first connection's dial to the last
// reply).
func runPhase(ctx context.Context, addr string, p phase, pipe, clients, n int) (float64, error) {
	clients = min(clients, (n+pipe-1)/pipe)
	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	for range clients {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return 0, fmt.Errorf("respbench: load: %w", err)
		}
		conns = append(conns, c)
	}
	batch := bytes.Repeat(p.cmd, pipe)
	t0 := time.Now()
	err := driveAll(ctx, conns, batch, len(p.cmd), p.reply, pipe, int64(n))
	el := time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("respbench: load %s: %w", p.name, err)
	}
	return float64(n) / el.Seconds(), nil
}

// driveGoroutines runs drive on every connection, each on a goroutine of
// its own, until n requests are answered.
func driveGoroutines(ctx context.Context, conns []net.Conn, batch []byte, cmdLen int, want Shape, pipe int, n int64) error {
	var claimed atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = drive(ctx, c, batch, cmdLen, want, pipe, n, &claimed)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// drive sends batches on c until n requests are claimed (by all
// connections together through claimed), each followed by its replies.
// A cancelled ctx sets c's deadline in the past (driveGoroutines): drive
// checks ctx after setting its own.
func drive(ctx context.Context, c net.Conn, batch []byte, cmdLen int, want Shape, pipe int, n int64, claimed *atomic.Int64) error {
	sc, err := NewReplyScanner(want)
	if err != nil {
		return err
	}
	buf := make([]byte, loadReadBuffer)
	for {
		end := claimed.Add(int64(pipe))
		k := int64(pipe)
		if end > n {
			k -= end - n
		}
		if k <= 0 {
			return nil
		}
		_ = c.SetDeadline(time.Now().Add(loadTimeout))
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := c.Write(batch[:int(k)*cmdLen]); err != nil {
			return err
		}
		for got := int64(0); got < k; {
			m, err := c.Read(buf)
			if m > 0 {
				r, ferr := sc.Feed(buf[:m])
				if ferr != nil {
					return ferr
				}
				got += int64(r)
				if got > k {
					return fmt.Errorf("respbench: %d replies to %d requests", got, k)
				}
			}
			if err != nil {
				if err == io.EOF {
					return io.ErrUnexpectedEOF
				}
				return err
			}
		}
	}
}

// listLen is LLEN mylist.
func listLen(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(loadTimeout))
	if _, err := c.Write(command([]byte("LLEN"), []byte("mylist"))); err != nil {
		return 0, err
	}
	buf := make([]byte, 64)
	m := 0
	for !bytes.Contains(buf[:m], []byte("\r\n")) {
		if m == len(buf) {
			return 0, errors.New("respbench: LLEN: reply too long")
		}
		r, err := c.Read(buf[m:])
		m += r
		if err != nil {
			return 0, fmt.Errorf("respbench: LLEN: %w", err)
		}
	}
	line, _, _ := bytes.Cut(buf[:m], []byte("\r\n"))
	n, ok := parseLen(bytes.TrimPrefix(line, []byte(":")), false)
	if !ok || line[0] != ':' {
		return 0, fmt.Errorf("respbench: LLEN answered %q", line)
	}
	return n, nil
}

// LoadMain is the command line of the native load generator: the
// redis-benchmark flags Run passes (-h, -p, -t, -d, -P, -c, -n, --csv,
// --threads: GOMAXPROCS), one test, its CSV (as redis-benchmark --csv
// prints, with the rps column) on stdout. It returns the exit status.
func LoadMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resp load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("h", "127.0.0.1", "server host")
	port := fs.Int("p", 6379, "server port")
	test := fs.String("t", "get", "test: set, get, mset or lrange_100")
	size := fs.Int("d", 3, "value bytes")
	pipe := fs.Int("P", 1, "requests per batch")
	clients := fs.Int("c", 50, "connections")
	n := fs.Int("n", 100000, "requests")
	fs.Bool("csv", true, "CSV output (always)")
	threads := fs.Int("threads", 0, "GOMAXPROCS (0: the default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *size < 0 || *size > 1<<30 || *pipe < 1 || *pipe > 1<<16 || *clients < 1 || *clients > 1<<16 || *n < 1 || *threads < 0 {
		fmt.Fprintln(stderr, "resp load: -d in [0, 1 GiB], -P and -c in [1, 65536], -n >= 1, --threads >= 0, no arguments")
		return 2
	}
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	res, err := Load(ctx, LoadOptions{Addr: net.JoinHostPort(*host, strconv.Itoa(*port)), Test: *test, Size: *size,
		Pipeline: *pipe, Clients: *clients, Requests: *n})
	if err != nil {
		fmt.Fprintln(stderr, "resp load:", err)
		return 1
	}
	fmt.Fprintln(stdout, `"test","rps"`)
	for _, p := range res.Phases {
		fmt.Fprintf(stdout, "%q,\"%.2f\"\n", p.Name, p.RPS)
	}
	return 0
}
