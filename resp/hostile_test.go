package resp

import (
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
)

// raiseFileLimit raises the soft limit on open files to at least n (up to
// the hard limit) and skips the test when that is not enough.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = min(n, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n {
		t.Skipf("cannot open %d files (limit %d): %v", n, lim.Cur, err)
	}
}

// TestHostileClients: 5,000 idle connections and 300 slowloris clients (a
// byte of a never-finished command every 100 ms each) do not keep a probe
// client from being served. The probe's latencies are logged, not
// asserted.
func TestHostileClients(t *testing.T) {
	idleN, slowN := 5000, 300
	if testing.Short() {
		idleN = 500
	}
	raiseFileLimit(t, uint64(2*(idleN+slowN)+200))
	ts := newTestServer(t, Config{})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := 0; i < idleN+slowN; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	slow := conns[idleN:]
	for _, c := range slow {
		if _, err := c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the slowloris clients: a byte each every 100 ms
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for _, c := range slow {
				_, _ = c.Write([]byte("x"))
			}
		}
	}()
	probe := dialRaw(t, ts.addr)
	var lat []time.Duration
	for i := 0; i < 50; i++ {
		t0 := time.Now()
		k := fmt.Sprint("p", i)
		if r, err := probe.do("SET", k, "v"); err != nil || r != "+OK\r\n" {
			t.Fatalf("probe SET: %q %v", r, err)
		}
		if r, err := probe.do("GET", k); err != nil || r != "$1\r\nv\r\n" {
			t.Fatalf("probe GET: %q %v", r, err)
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-done
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("%d idle + %d slowloris connections: probe SET+GET latency p50 %v p99 %v max %v", idleN, slowN,
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	if n := ts.srv.connCount(); n < idleN+slowN {
		t.Fatalf("only %d connections served", n)
	}
}

// TestMemoryReturnedAfterBurst: after a burst of values (1 GiB; 128 MiB
// with -short) is deleted, the process's RSS falls below twice what it
// was before the burst within a minute: the server's own pool is replaced
// and decommitted once empty, and the Go heap is returned to the system.
func TestMemoryReturnedAfterBurst(t *testing.T) {
	if raceEnabled {
		t.Skip("-race multiplies memory")
	}
	if mem.Checked {
		t.Skip("the checked build poisons and tracks every item: not the memory being measured")
	}
	burst := 1 << 30
	if testing.Short() {
		burst = 128 << 20
	}
	srv, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		<-done
	}()
	rc := dialRaw(t, ln.Addr().String())
	rc.do("PING")
	runtime.GC()
	debug.FreeOSMemory()
	idle := rss()
	v := strings.Repeat("v", 4096)
	const perCmd = 64
	args := []string{"MSET"}
	for i := 0; i < burst/4096; i += perCmd {
		args = args[:1]
		for j := 0; j < perCmd; j++ {
			args = append(args, fmt.Sprint("key:", i+j), v)
		}
		if r, err := rc.do(args...); err != nil || r != "+OK\r\n" {
			t.Fatalf("MSET: %q %v", r, err)
		}
	}
	peak := rss()
	if r, err := rc.do("FLUSHALL"); err != nil || r != "+OK\r\n" {
		t.Fatalf("FLUSHALL: %q %v", r, err)
	}
	t0 := time.Now()
	for rss() >= 2*idle {
		if time.Since(t0) > time.Minute {
			t.Fatalf("RSS %d MiB a minute after deleting %d MiB (idle %d MiB, peak %d MiB)", rss()>>20, burst>>20, idle>>20, peak>>20)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("RSS idle %d MiB, after a %d MiB burst %d MiB, %d MiB %v after FLUSHALL", idle>>20, burst>>20, peak>>20, rss()>>20, time.Since(t0).Round(time.Millisecond))
}
