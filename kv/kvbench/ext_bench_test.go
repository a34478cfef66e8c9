package kvbench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/workload"
)

// BenchmarkExternalGen runs the saturation point's generator (bench.Run,
// closed loop, bench.SaturationOutstanding requests in flight on one
// connection of DefaultSessions sessions, every response checked as
// `cornflakes bench` checks it) against a kv server in another process, for
// instruction counts of either side under callgrind:
//
//   - the generator's: run this binary under callgrind with a native
//     server, at two lengths (-test.benchtime Nx: N runs of 20 ms each);
//     the difference of the two totals over the difference of the
//     responses (the "resp" metric, a total) is its cost per response;
//   - the server's: run `cornflakes kv serve` under callgrind and this
//     binary natively; `callgrind_control -z` before and `-d` after a run,
//     over the responses it reports.
//
// The server is KVBENCH_SERVER (host:port; `cornflakes kv serve --datapath
// shm --workload W`), the workload KVBENCH_WORKLOAD (W, as the server's)
// and the serializer KVBENCH_CODEC (default cornflakes). Skipped without
// KVBENCH_SERVER.
//
//	cornflakes kv serve --datapath shm --addr 127.0.0.1:7411 --workload cdn &
//	KVBENCH_SERVER=127.0.0.1:7411 KVBENCH_WORKLOAD=cdn GOGC=off GODEBUG=cpu.rdtscp=off \
//		valgrind --tool=callgrind ./kvb.test -test.run XXX -test.bench ExternalGen -test.benchtime 10x
func BenchmarkExternalGen(b *testing.B) {
	addr, _ := netip.ParseAddrPort(os.Getenv("KVBENCH_SERVER"))
	if !addr.IsValid() {
		b.Skip("KVBENCH_SERVER is not set")
	}
	w, err := workload.Parse(os.Getenv("KVBENCH_WORKLOAD"))
	if err != nil {
		b.Fatal(err)
	}
	name := os.Getenv("KVBENCH_CODEC")
	if name == "" {
		name = kv.SerCornflakes
	}
	c, err := kv.LookupCodec(name, "", true)
	if err != nil {
		b.Fatal(err)
	}
	cl, err := kv.NewClient(kv.ClientConfig{Server: addr, Endpoints: 1, Sessions: DefaultSessions, Datapath: kv.DatapathShm})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	t := cl.Target(c)
	cfg := bench.Config{Workload: w, Target: t, Outstanding: bench.SaturationOutstanding,
		Duration: time.Duration(b.N) * 20 * time.Millisecond, Warmup: -1, Check: true, Seed: 1}
	warm := cfg
	warm.Duration = 100 * time.Millisecond
	wr, err := bench.Run(context.Background(), warm)
	if err != nil {
		b.Fatal(err)
	}
	// Every response of the process, for callgrind's toggled counts.
	fmt.Fprintf(os.Stderr, "kvbench: responses %d\n", wr.Received)
	pause := os.Getenv("KVBENCH_PAUSE") != ""
	if pause {
		// For callgrind_control -z and -d around the run.
		fmt.Fprintln(os.Stderr, "kvbench: start")
		time.Sleep(3 * time.Second)
	}
	cfg.Target = bench.TargetFunc(func(i int) (bench.Conn, error) {
		cn, err := t.Dial(i)
		if err != nil {
			return nil, err
		}
		return &markedConn{Conn: cn.(*kv.Conn)}, nil
	})
	b.ResetTimer()
	r, err := bench.Run(context.Background(), cfg)
	b.StopTimer()
	if pause {
		fmt.Fprintf(os.Stderr, "kvbench: end %d\n", r.Received)
		time.Sleep(3 * time.Second)
	}
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "kvbench: responses %d\n", r.Received)
	if r.Mismatches != 0 || r.Errors != 0 || r.Received == 0 {
		b.Fatalf("result %v (first mismatch: %s)", r, r.FirstMismatch)
	}
	b.ReportMetric(float64(r.Received), "resp")
}

// markedConn is a kv.Conn that calls CallgrindZero before its first Send
// and CallgrindDump when it is closed: with callgrind's --zero-before and
// --dump-before on them, the dump holds the whole process's instructions
// from the first request of a run to its end, without the dial.
type markedConn struct {
	*kv.Conn
	started bool
}

func (m *markedConn) Send(id uint64, req *workload.Request) error {
	if !m.started {
		m.started = true
		CallgrindZero()
	}
	return m.Conn.Send(id, req)
}

func (m *markedConn) Close() error {
	CallgrindDump()
	return m.Conn.Close()
}

// CallgrindZero and CallgrindDump do nothing: they are markers for
// callgrind's --zero-before and --dump-before.
//
//go:noinline
func CallgrindZero() { cgMarks++ }

//go:noinline
func CallgrindDump() { cgMarks++ }

var cgMarks int
