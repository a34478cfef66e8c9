package resp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func must[T any](t *testing.T, c interface{ Result() (T, error) }) T {
	t.Helper()
	v, err := c.Result()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return v
}

func wantErr(t *testing.T, err error, sub string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("error %v, want one containing %q", err, sub)
	}
}

// TestGoRedis uses the server through go-redis v9 with its defaults
// (RESP3 via HELLO 3): strings with expiry, lists, hashes, a transaction.
func TestGoRedis(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.client(t)
	ctx := context.Background()
	big := strings.Repeat("z", 4096)
	must[string](t, c.Set(ctx, "k", big, time.Minute))
	if v := must[string](t, c.Get(ctx, "k")); v != big {
		t.Fatalf("GET: %d bytes", len(v))
	}
	if d := must[time.Duration](t, c.TTL(ctx, "k")); d != time.Minute {
		t.Fatalf("TTL %v", d)
	}
	if err := c.Get(ctx, "nope").Err(); err != redis.Nil {
		t.Fatalf("GET nope: %v", err)
	}
	must[int64](t, c.RPush(ctx, "l", "a", big, "c"))
	if v := must[[]string](t, c.LRange(ctx, "l", 0, -1)); len(v) != 3 || v[1] != big {
		t.Fatalf("LRANGE %d", len(v))
	}
	wantErr(t, c.Get(ctx, "l").Err(), "WRONGTYPE")
	must[int64](t, c.HSet(ctx, "h", "a", "1", "b", big))
	if m := must[map[string]string](t, c.HGetAll(ctx, "h")); len(m) != 2 || m["b"] != big {
		t.Fatalf("HGETALL %v", len(m))
	}
	if n := must[int64](t, c.Incr(ctx, "n")); n != 1 {
		t.Fatal(n)
	}
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "n")
		p.Get(ctx, "n")
		return nil
	})
	if err != nil || cmds[1].(*redis.StringCmd).Val() != "2" {
		t.Fatalf("MULTI/EXEC: %v %v", cmds, err)
	}
	if st := ts.srv.Stats(); st.ZeroCopy < 3 {
		t.Fatalf("zero-copy values %d", st.ZeroCopy)
	}
	ts.waitInUse(t, 3) // the stored 4 KiB values: string, list element, hash value
}

// TestZeroCopyReplies: a GET of a value at or above the threshold is
// written from registered memory with a reference held by the output, and
// deleting or overwriting the key meanwhile does not change the bytes.
func TestOutputHoldsReference(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "out", Concurrent: true})
	b := memtest.Alloc(t, p, bytes.Repeat([]byte("z"), 1000))
	var o output
	o.bulkHeader(1000)
	o.zeroCopy(b.Clone())
	o.buf = append(o.buf, "\r\n"...)
	o.bulk([]byte("small"))
	memtest.AssertInUse(t, p, 1)
	memtest.Release(t, b) // the keyspace drops its reference (DEL) meanwhile
	w := &checkWriter{p: p}
	if err := o.flush(w); err != nil {
		t.Fatal(err)
	}
	if w.inUse != 1 {
		t.Fatalf("%d references during the write, want 1", w.inUse)
	}
	want := "$1000\r\n" + strings.Repeat("z", 1000) + "\r\n$5\r\nsmall\r\n"
	if w.buf.String() != want {
		t.Fatalf("wrote %q", w.buf.String())
	}
	memtest.AssertInUse(t, p, 0)
}

type checkWriter struct {
	p     *mem.Pool
	buf   bytes.Buffer
	inUse int
}

func (w *checkWriter) Write(b []byte) (int, error) {
	w.inUse = max(w.inUse, w.p.InUse())
	return w.buf.Write(b)
}

// TestZeroCopyServer: values at or above the threshold live in the pool
// and are sent zero-copy; smaller ones do not; every reference returns.
func TestZeroCopyServer(t *testing.T) {
	ts := newTestServer(t, Config{})
	rc := dialRaw(t, ts.addr)
	v := strings.Repeat("v", 4096)
	for _, cmd := range [][]string{{"SET", "big", v}, {"SET", "small", "x"}, {"RPUSH", "l", v, v}} {
		if _, err := rc.do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	ts.waitInUse(t, 3)
	for _, cmd := range [][]string{{"GET", "big"}, {"MGET", "big", "small"}, {"LRANGE", "l", "0", "-1"}, {"GETDEL", "big"}, {"LPOP", "l"}} {
		r, err := rc.do(cmd...)
		if err != nil || !strings.Contains(r, v) {
			t.Fatalf("%v: %q %v", cmd, r[:min(len(r), 40)], err)
		}
	}
	if st := ts.srv.Stats(); st.ZeroCopy != 6 || st.ZCBytes != 6*4096 {
		t.Fatalf("stats %+v", st)
	}
	ts.waitInUse(t, 1)
}

// TestRawProtocol: inline and multibulk commands, pipelined in one write,
// answered in order; QUIT closes.
func TestRawProtocol(t *testing.T) {
	ts := newTestServer(t, Config{})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	in := "PING\r\nSET k v\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*0\r\n\r\n*2\r\n$3\r\nGET\r\n$2\r\nno\r\n" +
		"*3\r\n$6\r\nLRANGE\r\n$1\r\nx\r\n$1\r\n0\r\n*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n" +
		"*4\r\n$4\r\nMGET\r\n$1\r\nk\r\n$1\r\nz\r\n$1\r\nk\r\nQUIT\r\nPING\r\n"
	if _, err := io.WriteString(c, in); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	want := "+PONG\r\n+OK\r\n$1\r\nv\r\n$-1\r\n-ERR wrong number of arguments for 'lrange' command\r\n:1\r\n" +
		"*3\r\n$1\r\nv\r\n$-1\r\n$1\r\nv\r\n+OK\r\n"
	if string(got) != want {
		t.Fatalf("replies\n%q\nwant\n%q", got, want)
	}
}

// TestProtocolErrors: bad input is answered with a protocol error and the
// connection is closed.
func TestProtocolErrors(t *testing.T) {
	ts := newTestServer(t, Config{Limits: Limits{MaxBulk: 1 << 10}})
	for _, c := range []struct{ in, want string }{
		{"*1\r\n$2048\r\nab", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*99999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n$-2\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"PING\r\n*1\r\n$4\r\nPINGxx", "+PONG\r\n-ERR Protocol error: bulk string not terminated by CRLF\r\n"},
		{strings.Repeat("x", DefaultMaxInline+10), "-ERR Protocol error: too big inline request\r\n"},
	} {
		conn, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, c.in); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(conn)
		_ = conn.Close()
		if err != nil {
			t.Fatalf("%q: %v", c.in[:min(len(c.in), 40)], err)
		}
		if string(got) != c.want {
			t.Errorf("%q: got %q, want %q", c.in[:min(len(c.in), 40)], got, c.want)
		}
	}
	if st := ts.srv.Stats(); st.QueryLimit < 6 {
		t.Errorf("stats: %+v", st)
	}
}

// TestBlockingPops: BLPOP woken by a push from another client, first
// blocked first served; BLMOVE; a timeout; a client leaving while blocked.
func TestBlockingPops(t *testing.T) {
	ts := newTestServer(t, Config{})
	a, b, pusher := dialRaw(t, ts.addr), dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	send := func(rc *rawConn, args ...string) {
		if _, err := rc.c.Write(encodeCommand(args)); err != nil {
			t.Fatal(err)
		}
	}
	send(a, "BLPOP", "q1", "q2", "5")
	waitBlocked(t, ts, 1)
	send(b, "BLMOVE", "q2", "dst", "RIGHT", "LEFT", "5")
	waitBlocked(t, ts, 2)
	if r, _ := pusher.do("RPUSH", "q2", "x", "y"); r != ":2\r\n" {
		t.Fatalf("RPUSH: %q", r)
	}
	if r, _ := readReply(a.r); r != "*2\r\n$2\r\nq2\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP: %q", r)
	}
	if r, _ := readReply(b.r); r != "$1\r\ny\r\n" {
		t.Fatalf("BLMOVE: %q", r)
	}
	if r, _ := pusher.do("LRANGE", "dst", "0", "-1"); r != "*1\r\n$1\r\ny\r\n" {
		t.Fatalf("dst: %q", r)
	}
	t0 := time.Now()
	if r, _ := a.do("BRPOP", "empty", "0.05"); r != "*-1\r\n" {
		t.Fatalf("BRPOP timeout: %q", r)
	}
	t.Logf("BRPOP 0.05 answered after %v", time.Since(t0))
	send(b, "BLPOP", "gone", "0")
	waitBlocked(t, ts, 1)
	_ = b.c.Close()
	waitBlocked(t, ts, 0)
	if r, _ := pusher.do("RPUSH", "gone", "kept"); r != ":1\r\n" {
		t.Fatalf("RPUSH after the blocked client left: %q", r)
	}
}

func waitBlocked(t *testing.T, ts *testServer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.srv.kmu.Lock()
		got := ts.srv.ks.nblocked
		ts.srv.kmu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d clients blocked, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestActiveExpiry: keys with a short expiry disappear without being
// accessed.
func TestActiveExpiry(t *testing.T) {
	ts := newTestServer(t, Config{})
	rc := dialRaw(t, ts.addr)
	for i := 0; i < 200; i++ {
		if r, _ := rc.do("SET", fmt.Sprint("k", i), strings.Repeat("v", 1000), "PX", "30"); r != "+OK\r\n" {
			t.Fatal(r)
		}
	}
	rc.do("SET", "stays", "v")
	deadline := time.Now().Add(10 * time.Second)
	for ts.srv.Keys() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys left", ts.srv.Keys())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r, _ := rc.do("INFO", "stats"); !strings.Contains(r, "expired_keys:200\r\n") {
		t.Fatalf("INFO: %q", r)
	}
	ts.waitInUse(t, 0)
}

// TestAuthAndACL: requirepass, AUTH, HELLO AUTH, a read-only user.
func TestAuthAndACL(t *testing.T) {
	ts := newTestServer(t, Config{Password: "secret", Users: []User{{Name: "reader", Password: "rpw", ReadOnly: true}}})
	rc := dialRaw(t, ts.addr)
	steps := []struct{ cmd, want string }{
		{"GET k", "-NOAUTH Authentication required.\r\n"},
		{"HELLO 2 AUTH default wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"HELLO 3", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
		{"AUTH wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH nobody secret", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH secret", "+OK\r\n"},
		{"SET k v", "+OK\r\n"},
		{"ACL WHOAMI", "$7\r\ndefault\r\n"},
		{"AUTH reader rpw", "+OK\r\n"},
		{"GET k", "$1\r\nv\r\n"},
		{"SET k w", "-NOPERM this user has no permissions to run the 'set' command\r\n"},
		{"FLUSHALL", "-NOPERM this user has no permissions to run the 'flushall' command\r\n"},
		{"ACL WHOAMI", "$6\r\nreader\r\n"},
		{"AUTH default secret", "+OK\r\n"},
		{"DEL k", ":1\r\n"},
	}
	for _, s := range steps {
		if got, err := rc.do(splitArgs(s.cmd)...); err != nil || got != s.want {
			t.Fatalf("%s: %q %v, want %q", s.cmd, got, err, s.want)
		}
	}
	rc2 := dialRaw(t, ts.addr)
	if got, _ := rc2.do("HELLO", "3", "AUTH", "default", "secret", "SETNAME", "me"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH: %q", got)
	}
	if got, _ := rc2.do("CLIENT", "GETNAME"); got != "$2\r\nme\r\n" {
		t.Fatalf("CLIENT GETNAME: %q", got)
	}
	if st := ts.srv.Stats(); st.AuthFailed != 3 || st.ACLDenied != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// remoteListener makes every accepted connection look like it comes from
// a non-loopback address.
type remoteListener struct{ net.Listener }

type remoteConn struct{ net.Conn }

func (remoteConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4242} }

func (l remoteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c}, nil
}

// TestProtectedMode: without a password, a non-loopback client is denied
// unless protected mode is off; with a password it is served.
func TestProtectedMode(t *testing.T) {
	for _, c := range []struct {
		cfg    Config
		denied bool
	}{{Config{}, true}, {Config{NoProtectedMode: true}, false}, {Config{Password: "pw"}, false}} {
		srv, err := NewServer(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(remoteListener{ln}) }()
		rc := dialRaw(t, ln.Addr().String())
		got, _ := rc.do("PING")
		if c.denied != strings.HasPrefix(got, "-DENIED Redis is running in protected mode") {
			t.Errorf("%+v: %q", c.cfg, got)
		}
		_ = srv.Close()
		<-done
		if c.denied && srv.Stats().Denied != 1 {
			t.Errorf("stats %+v", srv.Stats())
		}
	}
}

// TestMaxMemory: noeviction refuses writes over maxmemory with -OOM;
// allkeys-lru evicts the least recently used keys instead.
func TestMaxMemory(t *testing.T) {
	v := strings.Repeat("v", 1000)
	ts := newTestServer(t, Config{MaxMemory: 100 << 10})
	rc := dialRaw(t, ts.addr)
	oom := false
	for i := 0; i < 1000 && !oom; i++ {
		r, _ := rc.do("SET", fmt.Sprint("k", i), v)
		oom = strings.HasPrefix(r, "-OOM command not allowed when used memory > 'maxmemory'.")
	}
	if !oom {
		t.Fatal("no OOM after 1 MB of values with maxmemory 100 KiB")
	}
	if r, _ := rc.do("GET", "k0"); r != "$1000\r\n"+v+"\r\n" {
		t.Fatalf("reads still served: %q", r[:min(len(r), 20)])
	}
	if r, _ := rc.do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	for i := 0; i < 1000; i++ {
		if i%10 == 0 {
			rc.do("GET", "hot") // kept recent
		}
		if r, _ := rc.do("SET", fmt.Sprint("n", i), v); r != "+OK\r\n" {
			t.Fatalf("SET under allkeys-lru: %q", r)
		}
		if i == 0 {
			rc.do("SET", "hot", "x")
		}
	}
	if n := ts.srv.Keys(); n > 110 {
		t.Fatalf("%d keys kept under 100 KiB", n)
	}
	if r, _ := rc.do("INFO", "stats"); !strings.Contains(r, "evicted_keys:") || strings.Contains(r, "evicted_keys:0\r\n") {
		t.Fatalf("INFO: %q", r)
	}
}

// TestTimeouts: an idle client is closed after IdleTimeout, a client that
// starts a command and never finishes it after CommandTimeout; both are
// counted.
func TestTimeouts(t *testing.T) {
	ts := newTestServer(t, Config{IdleTimeout: 100 * time.Millisecond, CommandTimeout: 100 * time.Millisecond})
	idle := dialRaw(t, ts.addr)
	slow := dialRaw(t, ts.addr)
	if _, err := slow.c.Write([]byte("*2\r\n$3\r\nGET\r\n")); err != nil {
		t.Fatal(err)
	}
	for _, rc := range []*rawConn{idle, slow} {
		_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := rc.r.ReadByte(); err != io.EOF {
			t.Fatalf("read: %v, want EOF", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for st := ts.srv.Stats(); st.IdleClosed != 1 || st.SlowClosed != 1; st = ts.srv.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMaxConns: connections beyond MaxConns are refused with an error.
func TestMaxConns(t *testing.T) {
	ts := newTestServer(t, Config{MaxConns: 1})
	c1 := dialRaw(t, ts.addr)
	if r, _ := c1.do("PING"); r != "+PONG\r\n" {
		t.Fatalf("first: %q", r)
	}
	c2 := dialRaw(t, ts.addr)
	_ = c2.c.SetDeadline(time.Now().Add(10 * time.Second))
	if got, _ := io.ReadAll(c2.r); string(got) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second: %q", got)
	}
	if st := ts.srv.Stats(); st.Rejected != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestIntrospection: COMMAND COUNT, INFO, DOCS and LIST describe the
// implemented commands; CLIENT LIST lists the connections.
func TestIntrospection(t *testing.T) {
	ts := newTestServer(t, Config{})
	rc := dialRaw(t, ts.addr)
	if r, _ := rc.do("COMMAND", "COUNT"); r != ":"+strconv.Itoa(len(commands))+"\r\n" {
		t.Fatalf("COMMAND COUNT: %q", r)
	}
	if r, _ := rc.do("COMMAND", "INFO", "get", "nosuch"); !strings.HasPrefix(r, "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n") || !strings.HasSuffix(r, "*-1\r\n") {
		t.Fatalf("COMMAND INFO: %q", r)
	}
	if r, _ := rc.do("COMMAND", "DOCS", "set"); !strings.Contains(r, "Set the string value of a key") {
		t.Fatalf("COMMAND DOCS: %q", r)
	}
	full, err := rc.do("COMMAND")
	if err != nil || !strings.HasPrefix(full, "*"+strconv.Itoa(len(commands))+"\r\n") {
		t.Fatalf("COMMAND: %q", full[:min(len(full), 40)])
	}
	rc.do("CLIENT", "SETNAME", "probe")
	other := dialRaw(t, ts.addr)
	if r, _ := other.do("CLIENT", "LIST"); strings.Count(r, "id=") != 2 || !strings.Contains(r, "name=probe") {
		t.Fatalf("CLIENT LIST: %q", r)
	}
	if r, _ := other.do("INFO"); !strings.Contains(r, "connected_clients:2\r\n") || !strings.Contains(r, "used_memory_rss:") {
		t.Fatalf("INFO: %q", r)
	}
}

// TestRedisBenchmark runs the real redis-benchmark (Debian: redis-tools)
// against the server, unpipelined and pipelined, with values on both sides
// of the zero-copy threshold, and fails on any error it reports.
func TestRedisBenchmark(t *testing.T) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark not installed (apt-get install redis-tools); CI installs it")
	}
	ts := newTestServer(t, Config{})
	_, port, _ := net.SplitHostPort(ts.addr)
	for _, args := range [][]string{
		{"-d", "64", "-P", "1"},
		{"-d", "4096", "-P", "16"},
	} {
		cmd := exec.Command(bin, append([]string{"-h", "127.0.0.1", "-p", port, "-c", "4", "-n", "2000",
			"-t", "ping,set,get,mset,lpush,rpush,lrange_100", "-q"}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("redis-benchmark %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
		}
		all := out.String() + errb.String()
		if strings.Contains(strings.ToLower(all), "error") || strings.Contains(all, "WARNING") {
			t.Fatalf("redis-benchmark %v reported errors:\n%s", args, all)
		}
		for _, test := range []string{"PING_MBULK", "SET", "GET", "MSET (10 keys)", "LRANGE_100 (first 100 elements)"} {
			if !strings.Contains(all, test+": ") {
				t.Fatalf("redis-benchmark %v: no result for %s:\n%s", args, test, all)
			}
		}
		t.Logf("redis-benchmark %v:\n%s", args, strings.ReplaceAll(all, "\r", "\n"))
	}
	ts.srv.FlushAll()
	if st := ts.srv.Stats(); st.Errors != 0 || st.ZeroCopy == 0 {
		t.Fatalf("stats after redis-benchmark: %+v", st)
	}
}

// TestBulkHeader: the short-length fast path frames as strconv does.
func TestBulkHeader(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 42, 99, 100, 512, 999, 1000, 4096, 65536, 1 << 40} {
		var o output
		o.bulkHeader(n)
		if want := "$" + strconv.Itoa(n) + "\r\n"; string(o.buf) != want {
			t.Errorf("bulkHeader(%d) = %q, want %q", n, o.buf, want)
		}
	}
	var o output
	o.bulk([]byte("abc"))
	if string(o.buf) != "$3\r\nabc\r\n" {
		t.Errorf("bulk: %q", o.buf)
	}
}
