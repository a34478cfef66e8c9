package resp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// testServer is a server on a loopback port over a store whose pool the
// test checks: when the test ends the server is closed, the store cleared,
// and memtest fails the test if any reference is still held.
type testServer struct {
	srv   *Server
	pool  *mem.Pool
	store *kv.Store
	addr  string
}

func newTestServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	p := memtest.NewPool(t, mem.PoolConfig{Name: "resp-test", Concurrent: true, MaxBytes: 256 << 20})
	st := kv.NewStore(p, 8)
	cfg.Store = st
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		st.Clear()
	})
	return &testServer{srv: srv, pool: p, store: st, addr: ln.Addr().String()}
}

// client is a go-redis client with its default protocol (3: it sends
// HELLO 3, gets NOPROTO and falls back to RESP2).
func (ts *testServer) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// raw is a plain TCP connection for byte-level tests.
func (ts *testServer) raw(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// waitInUse waits for the pool's references to come down to want: a reply
// can reach the client just before the server's goroutine releases the
// references of its write.
func (ts *testServer) waitInUse(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.pool.InUse() != want {
		if time.Now().After(deadline) {
			t.Fatalf("pool in use: %d references, want %d", ts.pool.InUse(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

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

// TestCommands runs every command through go-redis v9.
func TestCommands(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.client(t)
	ctx := context.Background()
	if v := must[string](t, c.Ping(ctx)); v != "PONG" {
		t.Fatalf("PING: %q", v)
	}
	// go-redis opened the connection with HELLO 3, got NOPROTO (the one
	// error so far) and went on in RESP2.
	if st := ts.srv.Stats(); st.Errors != 1 || st.Commands < 2 {
		t.Fatalf("after connecting: %+v, want the one NOPROTO error", st)
	}
	if v := must[any](t, c.Do(ctx, "PING", "hi")); v != "hi" {
		t.Fatalf("PING hi: %q", v)
	}
	if v := must[string](t, c.Echo(ctx, "e\r\nx")); v != "e\r\nx" {
		t.Fatalf("ECHO: %q", v)
	}
	must[string](t, c.Set(ctx, "k", "v", 0))
	if v := must[string](t, c.Get(ctx, "k")); v != "v" {
		t.Fatalf("GET: %q", v)
	}
	must[string](t, c.Set(ctx, "k", "", 0))
	if v := must[string](t, c.Get(ctx, "k")); v != "" {
		t.Fatalf("GET of an empty value: %q", v)
	}
	if err := c.Get(ctx, "absent").Err(); err != redis.Nil {
		t.Fatalf("GET absent: %v", err)
	}
	wantErr(t, c.Set(ctx, "k", "v", time.Minute).Err(), "ERR SET options are not supported")
	wantErr(t, c.Do(ctx, "GET").Err(), "wrong number of arguments for 'get'")
	must[string](t, c.MSet(ctx, "a", "1", "b", "2"))
	if v := must[[]any](t, c.MGet(ctx, "a", "absent", "b")); fmt.Sprint(v) != "[1 <nil> 2]" {
		t.Fatalf("MGET: %v", v)
	}
	wantErr(t, c.Do(ctx, "MSET", "a").Err(), "wrong number of arguments")
	if v := must[int64](t, c.Exists(ctx, "a", "b", "absent", "a")); v != 3 {
		t.Fatalf("EXISTS: %d", v)
	}
	if v := must[int64](t, c.Del(ctx, "a", "absent")); v != 1 {
		t.Fatalf("DEL: %d", v)
	}
	if v := must[int64](t, c.DBSize(ctx)); v != 2 {
		t.Fatalf("DBSIZE: %d", v)
	}
	if v := must[int64](t, c.RPush(ctx, "l", "b", "c")); v != 2 {
		t.Fatalf("RPUSH: %d", v)
	}
	if v := must[int64](t, c.LPush(ctx, "l", "a", "z")); v != 4 {
		t.Fatalf("LPUSH: %d", v)
	}
	for _, r := range []struct {
		start, stop int64
		want        string
	}{{0, -1, "[z a b c]"}, {1, 2, "[a b]"}, {-2, -1, "[b c]"}, {0, 100, "[z a b c]"}, {3, 1, "[]"}} {
		if v := must[[]string](t, c.LRange(ctx, "l", r.start, r.stop)); fmt.Sprint(v) != r.want {
			t.Fatalf("LRANGE %d %d: %v, want %s", r.start, r.stop, v, r.want)
		}
	}
	wantErr(t, c.Do(ctx, "LRANGE", "l", "x", "1").Err(), "not an integer")
	if v := must[int64](t, c.LLen(ctx, "l")); v != 4 {
		t.Fatalf("LLEN: %d", v)
	}
	wantErr(t, c.Get(ctx, "l").Err(), "WRONGTYPE")
	if v := must[[]any](t, c.MGet(ctx, "l", "b")); fmt.Sprint(v) != "[<nil> 2]" {
		t.Fatalf("MGET of a list: %v", v)
	}
	must[any](t, c.Do(ctx, "SELECT", "0"))
	wantErr(t, c.Do(ctx, "CONFIG", "SET", "a", "b").Err(), "ERR CONFIG SET is not supported")
	wantErr(t, c.Do(ctx, "SELECT", "1").Err(), "ERR DB index is out of range")
	if v := must[any](t, c.Do(ctx, "COMMAND", "DOCS")); fmt.Sprint(v) != "[]" {
		t.Fatalf("COMMAND DOCS: %v", v)
	}
	if v := must[any](t, c.Do(ctx, "COMMAND")); fmt.Sprint(v) != "[]" {
		t.Fatalf("COMMAND: %v", v)
	}
	if v := must[map[string]string](t, c.ConfigGet(ctx, "save")); fmt.Sprint(v) != "map[save:]" {
		t.Fatalf("CONFIG GET save: %v", v)
	}
	if v := must[map[string]string](t, c.ConfigGet(ctx, "appendonly")); fmt.Sprint(v) != "map[appendonly:no]" {
		t.Fatalf("CONFIG GET appendonly: %v", v)
	}
	if v := must[any](t, c.Do(ctx, "HELLO", "2")); !strings.Contains(fmt.Sprint(v), "proto 2") {
		t.Fatalf("HELLO 2: %v", v)
	}
	wantErr(t, c.Do(ctx, "HELLO", "3").Err(), "NOPROTO unsupported protocol version")
	wantErr(t, c.Do(ctx, "HELLO", "x").Err(), "not an integer")
	must[any](t, c.Do(ctx, "CLIENT", "SETNAME", "me"))
	must[any](t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", "x"))
	if v := must[string](t, c.Info(ctx)); !strings.Contains(v, "redis_version:"+Version) {
		t.Fatalf("INFO: %q", v)
	}
	wantErr(t, c.Do(ctx, "NOSUCH", "a").Err(), "ERR unknown command 'NOSUCH', with args beginning with: 'a'")
	must[string](t, c.FlushAll(ctx))
	if v := must[int64](t, c.DBSize(ctx)); v != 0 {
		t.Fatalf("DBSIZE after FLUSHALL: %d", v)
	}
	// The connection is still good after all the error replies.
	if v := must[string](t, c.Ping(ctx)); v != "PONG" {
		t.Fatalf("PING: %q", v)
	}
	ts.waitInUse(t, 0)
}

// TestRawProtocol checks replies byte for byte: inline commands, a pipeline
// sent in one write and answered in order, QUIT, and a store-level error.
func TestRawProtocol(t *testing.T) {
	ts := newTestServer(t, Config{})
	c, r := ts.raw(t)
	in := "PING\r\nSET k v\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*0\r\n\r\n*2\r\n$3\r\nGET\r\n$2\r\nno\r\n" +
		"*3\r\n$6\r\nLRANGE\r\n$1\r\nx\r\n$1\r\n0\r\n*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n" +
		"*2\r\n$3\r\nGET\r\n$5000\r\n" + strings.Repeat("k", 5000) + "\r\n" +
		"*4\r\n$4\r\nMGET\r\n$1\r\nk\r\n$1\r\nz\r\n$1\r\nk\r\nQUIT\r\nPING\r\n"
	if _, err := io.WriteString(c, in); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "+PONG\r\n+OK\r\n$1\r\nv\r\n$-1\r\n-ERR wrong number of arguments for 'lrange' command\r\n:1\r\n" +
		"-ERR kv: key of 5000 bytes (limit 4096)\r\n*3\r\n$1\r\nv\r\n$-1\r\n$1\r\nv\r\n+OK\r\n"
	if string(got) != want {
		t.Fatalf("replies\n%q\nwant\n%q", got, want)
	}
}

// TestProtocolErrors: bad input is answered with a protocol error and the
// connection is closed; a declared size far beyond what is sent is refused
// at once, not waited for.
func TestProtocolErrors(t *testing.T) {
	ts := newTestServer(t, Config{Limits: Limits{MaxBulk: 1 << 10}})
	for _, c := range []struct{ in, want string }{
		{"*1\r\n$2048\r\nab", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*99999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n$-2\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n+PING\r\n", "-ERR Protocol error: expected '+', got '+'\r\n"[:0] + "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"PING\r\n*1\r\n$4\r\nPINGxx", "+PONG\r\n-ERR Protocol error: bulk string not terminated by CRLF\r\n"},
		{strings.Repeat("x", DefaultMaxInline+10), "-ERR Protocol error: too big inline request\r\n"},
	} {
		conn, r := ts.raw(t)
		if _, err := io.WriteString(conn, c.in); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%q: %v", c.in[:min(len(c.in), 40)], err)
		}
		if string(got) != c.want {
			t.Errorf("%q: got %q, want %q", c.in[:min(len(c.in), 40)], got, c.want)
		}
	}
	if st := ts.srv.Stats(); st.Errors < 6 {
		t.Errorf("stats: %+v", st)
	}
}

// TestPipeline sends 2000 commands as one go-redis pipeline and checks
// every answer.
func TestPipeline(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.client(t)
	ctx := context.Background()
	const n = 1000
	pipe := c.Pipeline()
	gets := make([]*redis.StringCmd, n)
	for i := range n {
		v := strings.Repeat(string(rune('a'+i%26)), i) // both sides of the threshold
		pipe.Set(ctx, fmt.Sprint("k", i), v, 0)
		gets[i] = pipe.Get(ctx, fmt.Sprint("k", i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, g := range gets {
		if v := g.Val(); len(v) != i || (i > 0 && v[0] != byte('a'+i%26)) {
			t.Fatalf("GET k%d: %d bytes", i, len(v))
		}
	}
	if st := ts.srv.Stats(); st.ZeroCopy != n-DefaultThreshold {
		t.Errorf("zero-copy values: %d, want %d", st.ZeroCopy, n-DefaultThreshold)
	}
	ts.waitInUse(t, n)
}

// TestConcurrentClients: several clients, each on its own keys, with small
// and large values, while another overwrites and deletes a shared large
// key that the others read: every read sees one whole value.
func TestConcurrentClients(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	big := map[byte]string{}
	for _, b := range []byte("xyz") {
		big[b] = strings.Repeat(string(b), 64<<10)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	stop := make(chan struct{})
	w := ts.client(t)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%5 == 4 {
				err = w.Del(ctx, "shared").Err()
			} else {
				err = w.Set(ctx, "shared", big["xyz"[i%3]], 0).Err()
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	var readers sync.WaitGroup
	for g := range 6 {
		c := ts.client(t)
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := range 100 {
				k := fmt.Sprintf("g%d-%d", g, i)
				v := strings.Repeat(fmt.Sprint(g), (i*97)%2000)
				if err := c.Set(ctx, k, v, 0).Err(); err != nil {
					errs <- err
					return
				}
				got, err := c.Get(ctx, k).Result()
				if err != nil || got != v {
					errs <- fmt.Errorf("GET %s: %d bytes, %v", k, len(got), err)
					return
				}
				s, err := c.Get(ctx, "shared").Result()
				if err == redis.Nil {
					continue
				}
				if err != nil || len(s) != 64<<10 || s != big[s[0]] {
					errs <- fmt.Errorf("GET shared: %d bytes, %v", len(s), err)
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	ts.waitInUse(t, 600+int(must[int64](t, w.Exists(ctx, "shared"))))
}

// TestLargeValues: 1 MiB values go out zero-copy (GET, MGET, LRANGE) and
// arrive intact; small values are copied; every reference returns.
func TestLargeValues(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.client(t)
	ctx := context.Background()
	vals := make([]string, 3)
	for i := range vals {
		b := make([]byte, kv.MaxValueSize)
		for j := range b {
			b[j] = byte(i*7 + j*13)
		}
		vals[i] = string(b)
		must[string](t, c.Set(ctx, fmt.Sprint("big", i), vals[i], 0))
		must[int64](t, c.RPush(ctx, "biglist", vals[i]))
	}
	must[string](t, c.Set(ctx, "small", "tiny", 0))
	before := ts.srv.Stats()
	if v := must[string](t, c.Get(ctx, "big1")); v != vals[1] {
		t.Fatalf("GET big1: %d bytes, differs", len(v))
	}
	mg := must[[]any](t, c.MGet(ctx, "big0", "small", "big2", "nope"))
	if mg[0] != vals[0] || mg[1] != "tiny" || mg[2] != vals[2] || mg[3] != nil {
		t.Fatalf("MGET: wrong values")
	}
	lr := must[[]string](t, c.LRange(ctx, "biglist", 0, -1))
	if len(lr) != 3 || lr[0] != vals[0] || lr[1] != vals[1] || lr[2] != vals[2] {
		t.Fatalf("LRANGE: wrong values")
	}
	after := ts.srv.Stats()
	if zc := after.ZeroCopy - before.ZeroCopy; zc != 6 {
		t.Errorf("%d values sent zero-copy, want 6", zc)
	}
	if b := after.ZCBytes - before.ZCBytes; b != 6*kv.MaxValueSize {
		t.Errorf("%d bytes sent zero-copy", b)
	}
	// Beyond the store's limit: the parser refuses the bulk and closes.
	wantErr(t, c.Set(ctx, "huge", strings.Repeat("h", kv.MaxValueSize+1), 0).Err(), "Protocol error: invalid bulk length")
	ts.waitInUse(t, 7)
}

// TestCopyEverything: a negative threshold copies every value.
func TestCopyEverything(t *testing.T) {
	ts := newTestServer(t, Config{Threshold: -1})
	c := ts.client(t)
	ctx := context.Background()
	v := strings.Repeat("v", 100<<10)
	must[string](t, c.Set(ctx, "k", v, 0))
	if got := must[string](t, c.Get(ctx, "k")); got != v {
		t.Fatal("GET: wrong value")
	}
	if st := ts.srv.Stats(); st.ZeroCopy != 0 {
		t.Fatalf("zero-copy with Threshold -1: %+v", st)
	}
}

// TestMaxReply: an MGET over MaxReply is refused whole.
func TestMaxReply(t *testing.T) {
	ts := newTestServer(t, Config{MaxReply: 3000})
	c := ts.client(t)
	ctx := context.Background()
	must[string](t, c.MSet(ctx, "a", strings.Repeat("a", 2000), "b", strings.Repeat("b", 2000)))
	wantErr(t, c.MGet(ctx, "a", "b").Err(), "reply of more than 3000 bytes")
	must[[]any](t, c.MGet(ctx, "a"))
	must[string](t, c.Get(ctx, "b"))
	must[int64](t, c.RPush(ctx, "l", strings.Repeat("a", 2000), strings.Repeat("b", 2000)))
	wantErr(t, c.LRange(ctx, "l", 0, -1).Err(), "response of 4000 bytes")
	ts.waitInUse(t, 4)
}

// TestOutputHoldsReference: a zero-copy value keeps its reference until the
// writev returns, and its bytes are written from registered memory.
func TestOutputHoldsReference(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "out", Concurrent: true})
	b := memtest.Alloc(t, p, bytes.Repeat([]byte("z"), 1000))
	var o output
	if !o.value(b.Clone(), 512) {
		t.Fatal("a 1000-byte value was copied")
	}
	o.value(memtest.Alloc(t, p, []byte("small")), 512) // copied, released at once
	memtest.AssertInUse(t, p, 1)
	memtest.Release(t, b) // the store drops its reference (DEL) meanwhile
	w := &checkWriter{t: t, p: p}
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
	t     *testing.T
	p     *mem.Pool
	buf   bytes.Buffer
	inUse int
}

func (w *checkWriter) Write(b []byte) (int, error) {
	w.inUse = max(w.inUse, w.p.InUse())
	return w.buf.Write(b)
}

// TestMaxConns: connections beyond MaxConns are refused with an error.
func TestMaxConns(t *testing.T) {
	ts := newTestServer(t, Config{MaxConns: 1})
	c1, r1 := ts.raw(t)
	if _, err := io.WriteString(c1, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	if l, _ := r1.ReadString('\n'); l != "+PONG\r\n" {
		t.Fatalf("first: %q", l)
	}
	_, r2 := ts.raw(t)
	if got, _ := io.ReadAll(r2); string(got) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second: %q", got)
	}
}

// TestCloseWithIdleAndStuckClients: Close returns while a client sits on a
// half-sent command and another never reads its replies.
func TestCloseWithIdleAndStuckClients(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "close", Concurrent: true})
	st := kv.NewStore(p, 1)
	defer st.Clear()
	srv, err := NewServer(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	half, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := io.WriteString(half, "*2\r\n$3\r\nGET\r\n$100\r\nabc"); err != nil {
		t.Fatal(err)
	}
	stuck, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	big := strings.Repeat("b", 600<<10)
	if _, err := fmt.Fprintf(stuck, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(big), big); err != nil {
		t.Fatal(err)
	}
	go func() { // GETs it never reads: the server blocks in writev
		for range 200 {
			if _, err := io.WriteString(stuck, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"); err != nil {
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	st.Clear()
	memtest.AssertInUse(t, p, 0)
}

// TestOwnStore: a server without a Store makes its own pool and store and
// Close frees them.
func TestOwnStore(t *testing.T) {
	srv, err := NewServer(Config{PoolBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer c.Close()
	ctx := context.Background()
	must[string](t, c.Set(ctx, "k", strings.Repeat("v", 4096), 0))
	must[int64](t, c.RPush(ctx, "l", "a", "b"))
	if n := srv.Store().Len(); n != 2 {
		t.Fatalf("store has %d keys", n)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-done
	// A single-goroutine pool is refused.
	p := memtest.NewPool(t, mem.PoolConfig{Name: "single"})
	if _, err := NewServer(Config{Store: kv.NewStore(p, 1)}); err == nil {
		t.Fatal("NewServer accepted a store whose pool is not Concurrent")
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
	if st := ts.srv.Stats(); st.Errors != 0 || st.ZeroCopy == 0 {
		t.Fatalf("stats after redis-benchmark: %+v", st)
	}
}
