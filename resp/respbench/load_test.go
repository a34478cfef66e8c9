package respbench

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/resp"
)

// scanCases are reply streams and the shape they are checked against:
// replies is the count a valid stream completes; bad streams fail.
var scanCases = []struct {
	name    string
	want    Shape
	in      string
	replies int
	bad     bool
}{
	{"ok", Shape{Kind: '+'}, "+OK\r\n+OK\r\n", 2, false},
	{"int", Shape{Kind: ':'}, ":1\r\n:-7\r\n:123456\r\n", 3, false},
	{"bulk", Shape{Kind: '$', N: 3}, "$3\r\nabc\r\n$3\r\n\r\n\n\r\n", 2, false},
	{"empty bulk", Shape{Kind: '$', N: 0}, "$0\r\n\r\n", 1, false},
	{"array", Shape{Kind: '*', N: 2, Elems: 3}, "*3\r\n$2\r\nab\r\n$2\r\ncd\r\n$2\r\nef\r\n*3\r\n$2\r\nxx\r\n$2\r\nyy\r\n$2\r\nzz\r\n", 2, false},
	{"empty array", Shape{Kind: '*', N: 5, Elems: 0}, "*0\r\n*0\r\n", 2, false},
	{"partial", Shape{Kind: '$', N: 3}, "$3\r\nabc\r\n$3\r\nab", 1, false},
	{"error reply", Shape{Kind: '+'}, "+OK\r\n-ERR no\r\n", 0, true},
	{"status not OK", Shape{Kind: '+'}, "+QUEUED\r\n", 0, true},
	{"wrong type", Shape{Kind: '$', N: 3}, ":3\r\n", 0, true},
	{"nil bulk", Shape{Kind: '$', N: 3}, "$-1\r\n", 0, true},
	{"short bulk", Shape{Kind: '$', N: 3}, "$2\r\nab\r\n", 0, true},
	{"long body", Shape{Kind: '$', N: 3}, "$3\r\nabcd\r\n", 0, true},
	{"no CR", Shape{Kind: '+'}, "+OK\n", 0, true},
	{"bad int", Shape{Kind: ':'}, ":1x\r\n", 0, true},
	{"empty int", Shape{Kind: ':'}, ":\r\n", 0, true},
	{"array count", Shape{Kind: '*', N: 1, Elems: 2}, "*3\r\n", 0, true},
	{"array element type", Shape{Kind: '*', N: 1, Elems: 2}, "*2\r\n$1\r\na\r\n:1\r\n", 0, true},
	{"huge length", Shape{Kind: '$', N: 3}, "$99999999999999999999\r\n", 0, true},
	{"long header", Shape{Kind: '+'}, "+" + strings.Repeat("K", 40) + "\r\n", 0, true},
	{"endless header", Shape{Kind: '+'}, "+" + strings.Repeat("K", 40), 0, true},
}

// TestReplyScanner feeds every case whole and split at every byte: the
// same replies, the same failure.
func TestReplyScanner(t *testing.T) {
	for _, c := range scanCases {
		for split := 0; split <= len(c.in); split++ {
			sc, err := NewReplyScanner(c.want)
			if err != nil {
				t.Fatal(err)
			}
			n1, err1 := sc.Feed([]byte(c.in[:split]))
			n2, err2 := sc.Feed([]byte(c.in[split:]))
			err = err1
			if err == nil {
				err = err2
			}
			if (err != nil) != c.bad || !c.bad && n1+n2 != c.replies {
				t.Errorf("%s split at %d: %d+%d replies, %v; want %d, bad %v", c.name, split, n1, n2, err, c.replies, c.bad)
			}
			if err != nil {
				if _, again := sc.Feed([]byte("+OK\r\n")); again == nil {
					t.Errorf("%s: the scanner recovered after %v", c.name, err)
				}
			}
		}
	}
	for _, bad := range []Shape{{Kind: 'x'}, {Kind: '$', N: -1}, {Kind: '*', Elems: -1}} {
		if _, err := NewReplyScanner(bad); err == nil {
			t.Errorf("NewReplyScanner(%+v) succeeded", bad)
		}
	}
}

func TestReplyScannerAllocs(t *testing.T) {
	sc, err := NewReplyScanner(Shape{Kind: '*', N: 4, Elems: 2})
	if err != nil {
		t.Fatal(err)
	}
	in := []byte("*2\r\n$4\r\nabcd\r\n$4\r\nefgh\r\n")
	if a := testing.AllocsPerRun(100, func() {
		if n, err := sc.Feed(in); n != 1 || err != nil {
			t.Fatal(n, err)
		}
	}); a != 0 {
		t.Fatalf("%v allocations per reply", a)
	}
}

// startOurs serves package resp on a loopback port until the test ends.
func startOurs(t *testing.T) string {
	t.Helper()
	srv, err := resp.NewServer(resp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-served })
	return ln.Addr().String()
}

// TestLoad runs every test of the native load generator against a real
// redis-server (when installed) and our server, every reply checked; a
// reply of another length than expected fails it.
func TestLoad(t *testing.T) {
	addrs := map[string]string{Cornflakes: startOurs(t)}
	if bin, _, err := Binaries(); err == nil {
		rs, err := startRedis(context.Background(), bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rs.stop)
		addrs[Redis] = "127.0.0.1:" + rs.port
	} else {
		t.Logf("no redis-server: %v (CI installs it)", err)
	}
	ctx := context.Background()
	for server, addr := range addrs {
		for _, size := range []int{0, 64, 5000} {
			for _, pipe := range []int{1, 7} {
				for _, test := range Tests {
					res, err := Load(ctx, LoadOptions{Addr: addr, Test: test, Size: size, Pipeline: pipe, Clients: 3, Requests: 150})
					if err != nil {
						t.Fatalf("%s %s d%d P%d: %v", server, test, size, pipe, err)
					}
					want := 1
					if test == "lrange_100" {
						want = 2 // LPUSH, then LRANGE
					}
					if len(res.Phases) != want {
						t.Fatalf("%s %s: phases %v", server, test, res.Phases)
					}
					for _, p := range res.Phases {
						if !(p.RPS > 0) {
							t.Errorf("%s %s: %+v", server, test, p)
						}
					}
				}
			}
		}
		// The key holds 5000 bytes now: GET expecting 4999 must fail.
		ps, _ := phases("get", 4999, 0)
		if _, err := runPhase(ctx, addr, ps[0], 4, 2, 20); err == nil || !strings.Contains(err.Error(), "bulk string") {
			t.Errorf("%s: GET of the wrong length: %v", server, err)
		}
	}
	for _, bad := range []LoadOptions{{Test: "nosuch", Pipeline: 1, Clients: 1, Requests: 1}, {Test: "get", Clients: 1, Requests: 1}} {
		bad.Addr = addrs[Cornflakes]
		if _, err := Load(ctx, bad); err == nil {
			t.Errorf("Load(%+v) succeeded", bad)
		}
	}
}

func TestLoadMain(t *testing.T) {
	addr := startOurs(t)
	host, port, _ := net.SplitHostPort(addr)
	var out, errb bytes.Buffer
	if code := LoadMain(context.Background(), []string{"-h", host, "-p", port, "-t", "lrange_100", "-d", "16", "-P", "4", "-c", "2", "-n", "200", "--csv"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if v, err := ParseCSV(out.Bytes(), "lrange_100"); err != nil || !(v > 0) {
		t.Fatalf("ParseCSV: %v %v\n%s", v, err, out.String())
	}
	for _, args := range [][]string{{"-P", "0"}, {"extra"}, {"--nosuch"}} {
		if code := LoadMain(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestRunNative runs Run with the native client (this test binary as
// LoadMain) against both servers.
func TestRunNative(t *testing.T) {
	if _, _, err := Binaries(); err != nil {
		t.Skip(err)
	}
	t.Setenv(loadChildEnv, "1")
	recs, err := Run(context.Background(), Options{Sizes: []int{64}, Pipelines: []int{4}, Clients: 2, Requests: 400, Rounds: 2,
		Client: ClientNative, NativeCommand: []string{os.Args[0]}})
	if err != nil {
		t.Fatal(err)
	}
	ratios := 0
	for _, r := range recs {
		if r.Client != ClientNative {
			t.Errorf("record %+v: client %q", r, r.Client)
		}
		if r.Unit == UnitRatio {
			ratios++
			if !(r.Value > 0) {
				t.Errorf("ratio %+v", r)
			}
		}
	}
	if ratios != len(Tests) {
		t.Errorf("%d ratios, want %d", ratios, len(Tests))
	}
	if _, err := Run(context.Background(), Options{Client: "nosuch"}); err == nil {
		t.Error("Run with client nosuch succeeded")
	}
}

// TestDrivers runs both ways of driving connections (driveAll: event
// loops on Linux; driveGoroutines) with batches far larger than a
// socket's buffers (MSET of 10 × 64 KiB, 8 deep: 5 MiB a write, replies
// read while it is written), against our server and redis-server; a
// cancelled context stops them with its error.
func TestDrivers(t *testing.T) {
	addrs := map[string]string{Cornflakes: startOurs(t)}
	if bin, _, err := Binaries(); err == nil {
		rs, err := startRedis(context.Background(), bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rs.stop)
		addrs[Redis] = "127.0.0.1:" + rs.port
	}
	drivers := map[string]func(context.Context, []net.Conn, []byte, int, Shape, int, int64) error{
		"driveAll": driveAll, "driveGoroutines": driveGoroutines,
	}
	ps, _ := phases("mset", 64<<10, 0)
	dial := func(t *testing.T, addr string, k int) []net.Conn {
		var cs []net.Conn
		for range k {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			cs = append(cs, c)
		}
		return cs
	}
	for server, addr := range addrs {
		for name, drive := range drivers {
			batch := bytes.Repeat(ps[0].cmd, 8)
			if err := drive(context.Background(), dial(t, addr, 3), batch, len(ps[0].cmd), ps[0].reply, 8, 45); err != nil {
				t.Errorf("%s %s: %v", server, name, err)
			}
			// A GET answered with a value of another length fails.
			get, _ := phases("get", 7, 0)
			if err := drive(context.Background(), dial(t, addr, 2), bytes.Repeat(get[0].cmd, 3), len(get[0].cmd), get[0].reply, 3, 9); err == nil {
				t.Errorf("%s %s: GET of 64 KiB accepted as 7 bytes", server, name)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			ping := command([]byte("BLPOP"), []byte("nosuchlist"), []byte("0")) // never answered
			if err := drive(ctx, dial(t, addr, 2), ping, len(ping), Shape{Kind: '*', N: 1, Elems: 2}, 1, 2); err == nil {
				t.Errorf("%s %s: cancelled, no error", server, name)
			}
		}
	}
}
