package resp

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
)

// processRSS is the resident set size of process pid in bytes.
func processRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// loadSmallKeys writes n keys "key:%012d" with 3-byte values, 1000 per
// pipelined write.
func loadSmallKeys(t *testing.T, rc *rawConn, n int) {
	t.Helper()
	var buf bytes.Buffer
	for i := 0; i < n; i += 1000 {
		buf.Reset()
		m := min(1000, n-i)
		for j := 0; j < m; j++ {
			k := fmt.Sprintf("key:%012d", i+j)
			fmt.Fprintf(&buf, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$3\r\nxxx\r\n", len(k), k)
		}
		_ = rc.c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := rc.c.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < m; j++ {
			if r, err := readReply(rc.r); err != nil || r != "+OK\r\n" {
				t.Fatalf("SET: %q %v", r, err)
			}
		}
	}
}

// TestSmallKeysMemory loads the same small keys (1M; 200k with -short)
// into redis-server and into this server and compares what each grew by:
// this server's growth (Go heap after a collection, plus anything else the
// process grew by) must stay within 1.5 times Redis's.
func TestSmallKeysMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("-race multiplies memory")
	}
	if mem.Checked {
		t.Skip("the checked build poisons and tracks every item: not the memory being measured")
	}
	n := 1000000
	if testing.Short() {
		n = 200000
	}
	rs := startRedis(t)
	ts := newTestServer(t, Config{})
	ours, theirs := dialRaw(t, ts.addr), dialRaw(t, rs.addr)
	ours.do("PING")
	theirs.do("PING")
	redisBefore := processRSS(t, rs.pid)
	runtime.GC()
	debug.FreeOSMemory()
	before := rss()
	loadSmallKeys(t, theirs, n)
	loadSmallKeys(t, ours, n)
	runtime.GC()
	debug.FreeOSMemory()
	grew := rss() - before
	redisGrew := processRSS(t, rs.pid) - redisBefore
	t.Logf("%d keys: this server grew %d MiB (%d B/key), redis-server %d MiB (%d B/key): %.2fx",
		n, grew>>20, grew/int64(n), redisGrew>>20, redisGrew/int64(n), float64(grew)/float64(redisGrew))
	if float64(grew) > 1.5*float64(redisGrew) {
		t.Fatalf("%d keys take %d bytes, more than 1.5x Redis's %d", n, grew, redisGrew)
	}
	if r, _ := ours.do("DBSIZE"); r != ":"+strconv.Itoa(n)+"\r\n" {
		t.Fatalf("DBSIZE %q", r)
	}
}
