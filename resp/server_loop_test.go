//go:build linux

package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/resp/internal/rawio"
)

// loopConns is the number of connections the server's event loops serve.
func (s *Server) loopConns() int {
	n := 0
	for _, l := range s.loops {
		l.mu.Lock()
		n += len(l.conns)
		l.mu.Unlock()
	}
	return n
}

// TestServingModes: the same pipelined exchange (small and zero-copy
// values, a blocking pop served by another client, QUIT) on an event
// loop and on a goroutine per connection; a blocked connection leaves its
// loop for a goroutine and goes on being served there.
func TestServingModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"loops", Config{EventLoops: 2}}, {"noring", Config{EventLoops: 2, NoIOUring: true}},
		{"busypoll", Config{EventLoops: 1, BusyPoll: time.Millisecond}},
		{"goroutines", Config{GoroutinePerConn: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, tc.cfg)
			big := strings.Repeat("b", 4096)
			a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
			// Both answer before the count is read: an accepted connection
			// joins its loop asynchronously.
			for _, rc := range []*rawConn{a, b} {
				if r, err := rc.do("PING"); r != "+PONG\r\n" || err != nil {
					t.Fatalf("PING: %q %v", r, err)
				}
			}
			wantLoop := 2
			if tc.cfg.GoroutinePerConn {
				wantLoop = 0
			}
			if n := ts.srv.loopConns(); n != wantLoop {
				t.Fatalf("%d connections on event loops, want %d", n, wantLoop)
			}
			var in bytes.Buffer
			var want strings.Builder
			for i := range 50 {
				in.Write(encodeCommand([]string{"SET", "k", big[:1+i*80]}))
				in.Write(encodeCommand([]string{"GET", "k"}))
				want.WriteString("+OK\r\n$" + itoa(1+i*80) + "\r\n" + big[:1+i*80] + "\r\n")
			}
			_ = a.c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := a.c.Write(in.Bytes()); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, want.Len())
			if _, err := io.ReadFull(a.r, got); err != nil || string(got) != want.String() {
				t.Fatalf("pipelined replies: %v (%d bytes)", err, len(got))
			}
			// A blocking pop: a leaves its loop (if any), b serves it.
			if _, err := a.c.Write(encodeCommand([]string{"BLPOP", "q", "10"})); err != nil {
				t.Fatal(err)
			}
			waitBlocked(t, ts, 1)
			if r, err := b.do("RPUSH", "q", big); r != ":1\r\n" || err != nil {
				t.Fatalf("RPUSH: %q %v", r, err)
			}
			if r, err := readReply(a.r); r != "*2\r\n$1\r\nq\r\n$4096\r\n"+big+"\r\n" || err != nil {
				t.Fatalf("BLPOP: %q %v", r[:min(len(r), 40)], err)
			}
			if n := ts.srv.loopConns(); n != wantLoop/2 {
				t.Fatalf("%d connections on event loops after the pop, want %d", n, wantLoop/2)
			}
			for _, rc := range []*rawConn{a, b} {
				if r, err := rc.do("GET", "k"); r != "$3921\r\n"+big[:3921]+"\r\n" || err != nil {
					t.Fatalf("GET after the pop: %q %v", r[:min(len(r), 40)], err)
				}
				if r, err := rc.do("QUIT"); r != "+OK\r\n" || err != nil {
					t.Fatalf("QUIT: %q %v", r, err)
				}
				if _, err := rc.r.ReadByte(); err != io.EOF {
					t.Fatalf("after QUIT: %v, want EOF", err)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for ts.srv.connCount() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections left after QUIT", ts.srv.connCount())
				}
				time.Sleep(time.Millisecond)
			}
			ts.waitInUse(t, 1) // k
		})
	}
}

// TestLoopBackpressure: a client that sends many GETs of a large value and
// does not read its replies holds at most one batch of references while
// TCP holds the rest back, and does not keep another client of the same
// loop from being served; once it reads, it gets every reply.
func TestLoopBackpressure(t *testing.T) { forRingModes(t, testLoopBackpressure) }

func testLoopBackpressure(t *testing.T, cfg Config) {
	ts := newTestServer(t, cfg)
	val := strings.Repeat("v", 64<<10)
	probe := dialRaw(t, ts.addr)
	if r, err := probe.do("SET", "big", val); r != "+OK\r\n" || err != nil {
		t.Fatalf("SET: %q %v", r, err)
	}
	hog := dialRaw(t, ts.addr)
	const gets = 1000 // 64 MiB of replies
	cmd := encodeCommand([]string{"GET", "big"})
	_ = hog.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := hog.c.Write(bytes.Repeat(cmd, gets)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the server fill the socket's buffers
	if n := ts.pool.InUse(); n > 1+flushEntries {
		t.Fatalf("%d references held for a client that does not read", n)
	}
	for range 10 {
		if r, err := probe.do("PING"); r != "+PONG\r\n" || err != nil {
			t.Fatalf("probe: %q %v", r, err)
		}
	}
	want := "$65536\r\n" + val + "\r\n"
	got := make([]byte, len(want))
	for i := range gets {
		if _, err := io.ReadFull(hog.r, got); err != nil || string(got) != want {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	ts.waitInUse(t, 1)
}

// TestIdleIsNotSlow: a client idle after a complete command is not closed
// by the unfinished-command timeout, in either serving mode.
func TestIdleIsNotSlow(t *testing.T) {
	for _, cfg := range []Config{{CommandTimeout: 50 * time.Millisecond}, {CommandTimeout: 50 * time.Millisecond, GoroutinePerConn: true}} {
		ts := newTestServer(t, cfg)
		rc := dialRaw(t, ts.addr)
		for range 2 {
			if r, err := rc.do("PING"); r != "+PONG\r\n" || err != nil {
				t.Fatalf("goroutines %v: PING: %q %v", cfg.GoroutinePerConn, r, err)
			}
			time.Sleep(3 * loopTick)
		}
		if st := ts.srv.Stats(); st.SlowClosed != 0 {
			t.Fatalf("goroutines %v: %+v", cfg.GoroutinePerConn, st)
		}
	}
}

func itoa(n int) string { return string(appendInt(nil, int64(n))) }

// TestSetOverwrite: SET on an existing string keeps its entry and changes
// only the value (a heap value of the same length in place): every reply
// is the latest value, a GET reply written before the SET keeps the old
// value, an expiry is dropped unless KEEPTTL, and a key of another type is
// replaced.
func TestSetOverwrite(t *testing.T) {
	ts := newTestServer(t, Config{EventLoops: 1})
	rc := dialRaw(t, ts.addr)
	big1, big2 := strings.Repeat("x", 4096), strings.Repeat("y", 4096)
	for _, step := range []struct{ args, want string }{
		{"SET k aaaa", "+OK\r\n"},
		{"SET k bbbb", "+OK\r\n"},
		{"GET k", "$4\r\nbbbb\r\n"},
		{"SET k cc", "+OK\r\n"},
		{"GET k", "$2\r\ncc\r\n"},
		{"SET k dd EX 100", "+OK\r\n"},
		{"SET k ee KEEPTTL", "+OK\r\n"},
		{"TTL k", ":100\r\n"},
		{"SET k ff", "+OK\r\n"},
		{"TTL k", ":-1\r\n"},
		{"GET k", "$2\r\nff\r\n"},
		{"SET k " + big1, "+OK\r\n"},
		{"SET k " + big2, "+OK\r\n"},
		{"GET k", "$4096\r\n" + big2 + "\r\n"},
		{"SET k gg", "+OK\r\n"},
		{"GET k", "$2\r\ngg\r\n"},
		{"DEL k", ":1\r\n"},
		{"RPUSH k x", ":1\r\n"},
		{"SET k hh", "+OK\r\n"},
		{"TYPE k", "+string\r\n"},
		{"GET k", "$2\r\nhh\r\n"},
	} {
		if r, err := rc.do(strings.Fields(step.args)...); r != step.want || err != nil {
			t.Fatalf("%.40s: %q %v, want %q", step.args, r, err, step.want)
		}
	}
	// Pipelined: the GET's zero-copy reply is in the batch when the next
	// SET replaces the value; the reply is still the old one.
	var in bytes.Buffer
	in.Write(encodeCommand([]string{"SET", "z", big1}))
	in.Write(encodeCommand([]string{"GET", "z"}))
	in.Write(encodeCommand([]string{"SET", "z", big2}))
	in.Write(encodeCommand([]string{"GET", "z"}))
	want := "+OK\r\n$4096\r\n" + big1 + "\r\n+OK\r\n$4096\r\n" + big2 + "\r\n"
	_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(in.Bytes()); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(rc.r, got); err != nil || string(got) != want {
		t.Fatalf("pipelined: %v; got %.60q...", err, got)
	}
}

// TestLoopTurnBudget: a client streaming a long pipeline of large SETs
// (read several times a round while its reads fill their room) does not
// keep another client of the same loop from being served meanwhile, and
// gets every reply.
func TestLoopTurnBudget(t *testing.T) { forRingModes(t, testLoopTurnBudget) }

func testLoopTurnBudget(t *testing.T, cfg Config) {
	ts := newTestServer(t, cfg)
	probe := dialRaw(t, ts.addr)
	hog := dialRaw(t, ts.addr)
	const sets = 600 // 38 MiB
	cmd := encodeCommand([]string{"SET", "big", strings.Repeat("v", 64<<10)})
	_ = hog.c.SetDeadline(time.Now().Add(60 * time.Second))
	wrote := make(chan error, 1)
	go func() { _, err := hog.c.Write(bytes.Repeat(cmd, sets)); wrote <- err }()
	replies := make(chan error, 1)
	go func() {
		got := make([]byte, 5*sets)
		_, err := io.ReadFull(hog.r, got)
		if err == nil && string(got) != strings.Repeat("+OK\r\n", sets) {
			err = fmt.Errorf("replies %.40q...", got)
		}
		replies <- err
	}()
	for range 20 {
		if r, err := probe.do("PING"); r != "+PONG\r\n" || err != nil {
			t.Fatalf("probe: %q %v", r, err)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-replies; err != nil {
		t.Fatal(err)
	}
	if r, err := probe.do("STRLEN", "big"); r != ":65536\r\n" || err != nil {
		t.Fatalf("STRLEN: %q %v", r, err)
	}
}

// rcvbuf is the SO_RCVBUF of the loop connection whose client is at addr
// (-1: none).
func (s *Server) rcvbuf(t *testing.T, addr string) int {
	for _, l := range s.loops {
		l.mu.Lock()
		for fd, cn := range l.conns {
			if cn.addr == addr {
				l.mu.Unlock()
				n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		l.mu.Unlock()
	}
	return -1
}

// TestRecvBuffer: a connection gets Config.RecvBuffer (as the kernel
// takes it: twice the value, at most twice net.core.rmem_max) once it
// sends a large argument, and keeps it; one sending small commands, or
// any with RecvBuffer < 0, keeps the kernel's buffer.
func TestRecvBuffer(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Skip(err)
	}
	rmemMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	const asked = 1<<20 + 4096 // not a size autotuning lands on
	want := 2 * min(asked, rmemMax)
	for _, tc := range []struct {
		name string
		cfg  int
		big  bool
		set  bool
	}{{"big", asked, true, true}, {"small", asked, false, false}, {"off", -1, true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, Config{EventLoops: 1, RecvBuffer: tc.cfg})
			rc := dialRaw(t, ts.addr)
			_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			val := strings.Repeat("v", 100)
			if tc.big {
				val = strings.Repeat("v", bigArg+1)
			}
			for range 3 {
				if r, err := rc.do("SET", "k", val); r != "+OK\r\n" || err != nil {
					t.Fatalf("SET: %q %v", r, err)
				}
			}
			got := ts.srv.rcvbuf(t, rc.c.LocalAddr().String())
			if got < 0 {
				t.Fatal("the connection is not on a loop")
			}
			if (got == want) != tc.set {
				t.Fatalf("SO_RCVBUF %d; want it %v to be %d", got, tc.set, want)
			}
			if r, err := rc.do("GET", "k"); r != "$"+itoa(len(val))+"\r\n"+val+"\r\n" || err != nil {
				t.Fatalf("GET: %v", err)
			}
		})
	}
}

// forRingModes runs f on a server of one event loop with its io_uring
// batches (where the kernel has io_uring) and without (one system call
// each, the fallback).
func forRingModes(t *testing.T, f func(*testing.T, Config)) {
	t.Run("ring", func(t *testing.T) { f(t, Config{EventLoops: 1}) })
	t.Run("noring", func(t *testing.T) { f(t, Config{EventLoops: 1, NoIOUring: true}) })
}

// TestLoopRing: where io_uring works, every event loop batches its reads
// and writes through a ring unless Config.NoIOUring; many clients
// pipelining at once (one batch of reads and one of writes serving
// several of them) each get their own replies, in order.
func TestLoopRing(t *testing.T) {
	r, err := rawio.NewRing(ringEntries)
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	_ = r.Close()
	for _, no := range []bool{false, true} {
		ts := newTestServer(t, Config{EventLoops: 2, NoIOUring: no})
		for _, l := range ts.srv.loops {
			if (l.ring != nil) == no {
				t.Fatalf("NoIOUring %v: loop ring %v", no, l.ring != nil)
			}
		}
		const clients, rounds = 20, 30
		errs := make(chan error, clients)
		for c := range clients {
			go func() {
				errs <- func() error {
					rc, err := net.Dial("tcp", ts.addr)
					if err != nil {
						return err
					}
					defer rc.Close()
					_ = rc.SetDeadline(time.Now().Add(20 * time.Second))
					br := bufio.NewReader(rc)
					val := strings.Repeat(string(rune('a'+c%26)), 100+c*300) // copied and zero-copy replies
					key := fmt.Sprint("k", c)
					for i := range rounds {
						var in bytes.Buffer
						v := fmt.Sprint(val, i)
						in.Write(encodeCommand([]string{"SET", key, v}))
						in.Write(encodeCommand([]string{"GET", key}))
						in.Write(encodeCommand([]string{"APPEND", key, "!"}))
						if _, err := rc.Write(in.Bytes()); err != nil {
							return err
						}
						want := fmt.Sprintf("+OK\r\n$%d\r\n%s\r\n:%d\r\n", len(v), v, len(v)+1)
						got := make([]byte, len(want))
						if _, err := io.ReadFull(br, got); err != nil {
							return err
						}
						if string(got) != want {
							return fmt.Errorf("client %d round %d: %.60q, want %.60q", c, i, got, want)
						}
					}
					return nil
				}()
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Fatalf("NoIOUring %v: %v", no, err)
			}
		}
	}
}

// TestLoopRingFails: a loop whose io_uring_enter fails (here its ring's
// descriptor replaced by /dev/null under it) closes the connections of
// that batch, whose bytes may or may not have been read, and goes on
// serving the others, and new ones, without the ring.
func TestLoopRingFails(t *testing.T) {
	r, err := rawio.NewRing(ringEntries)
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	_ = r.Close()
	ts := newTestServer(t, Config{EventLoops: 1})
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	for _, rc := range []*rawConn{a, b} {
		if r, err := rc.do("PING"); r != "+PONG\r\n" || err != nil {
			t.Fatalf("PING: %q %v", r, err)
		}
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := ts.srv.loops[0]
	l.mu.Lock() // the loop takes it before it drops the ring: no race with ringFailed
	ringFD := l.ring.r.FD()
	l.mu.Unlock()
	if err := unix.Dup3(null, ringFD, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	_ = unix.Close(null)
	_ = a.c.SetDeadline(time.Now().Add(10 * time.Second))
	if r, err := a.do("PING"); err == nil {
		t.Fatalf("PING in the failed batch answered %q", r)
	}
	for _, rc := range []*rawConn{b, dialRaw(t, ts.addr)} {
		_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
		if r, err := rc.do("SET", "k", "v"); r != "+OK\r\n" || err != nil {
			t.Fatalf("SET after the ring failed: %q %v", r, err)
		}
		if r, err := rc.do("GET", "k"); r != "$1\r\nv\r\n" || err != nil {
			t.Fatalf("GET after the ring failed: %q %v", r, err)
		}
	}
}

// TestGrowSize: a loop connection whose read filled its small buffer
// grows it once to the power of two that holds what the socket has
// queued (up to keepBuf), keeping the bytes read; with little queued, or
// without a descriptor of its own (a goroutine's connection), it doubles.
func TestGrowSize(t *testing.T) {
	srv, err := NewServer(Config{PoolBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		queued int // bytes sent beyond the first initBuf
		fd     bool
		big    bool // a large argument is being received
		want   int
	}{
		{"queued", 50000 - initBuf, true, false, 64 << 10},
		{"over keepBuf", 200000, true, false, keepBuf},
		{"little queued", 100, true, false, 2 * initBuf},
		{"nothing queued", 0, true, false, 2 * initBuf},
		{"no descriptor", 50000 - initBuf, false, false, 2 * initBuf},
		{"large argument", 50000 - initBuf, true, true, 2 * initBuf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20); err != nil {
				t.Fatal(err)
			}
			sent := make([]byte, initBuf+tc.queued)
			for i := range sent {
				sent[i] = byte(i)
			}
			if n, err := rawio.Write(fds[0], sent); n != len(sent) || err != nil {
				t.Fatalf("write: %d of %d, %v", n, len(sent), err)
			}
			cn := &conn{srv: srv, fd: -1, in: make([]byte, initBuf)}
			if n, err := rawio.Read(fds[1], cn.in); n != initBuf || err != nil {
				t.Fatalf("read: %d, %v", n, err)
			}
			cn.w, cn.filled = initBuf, true
			if tc.fd {
				cn.fd = fds[1]
			}
			if tc.big {
				cn.bigBuf = make([]byte, bigArg) // as bigRoom leaves it; makeRoom does not touch it
			}
			if !cn.makeRoom() {
				t.Fatal("makeRoom failed")
			}
			if len(cn.in) != tc.want {
				t.Fatalf("buffer of %d bytes, want %d", len(cn.in), tc.want)
			}
			if cn.w != initBuf || !bytes.Equal(cn.in[:cn.w], sent[:initBuf]) {
				t.Fatal("the bytes read were not kept")
			}
		})
	}
}

// TestRingChunks: a turn's ring reads go in one batch while the
// connections' last reads were small, and in batches of about ringChunk
// expected bytes when they were large; every connection is answered, in
// order, either way.
func TestRingChunks(t *testing.T) {
	srv, err := NewServer(Config{PoolBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, err := newLoop(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer l.free()
	if l.ring == nil {
		t.Skip("io_uring unavailable")
	}
	const conns = 4
	for _, tc := range []struct {
		lastRead, wantSubmits int
	}{
		{0, 2},                     // one batch of reads, one of writes
		{ringChunk / 2, 3},         // two connections a batch
		{ringChunk, conns + 1},     // one connection a batch
		{ringChunk * 4, conns + 1}, // never more than one
	} {
		var peers []int
		var events []unix.EpollEvent
		var cns []*conn
		for i := range conns {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			cn := srv.newConn(nil)
			if err := l.add(cn, fds[1]); err != nil {
				t.Fatal(err)
			}
			cn.lastRead = tc.lastRead
			cmds := append(encodeCommand([]string{"SET", fmt.Sprint("k", i), strings.Repeat("v", 3000)}),
				encodeCommand([]string{"GET", fmt.Sprint("k", i)})...)
			if _, err := rawio.Write(fds[0], cmds); err != nil {
				t.Fatal(err)
			}
			peers, cns = append(peers, fds[0]), append(cns, cn)
			events = append(events, unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fds[1])})
		}
		before := l.ring.submits
		l.ringReads(events)
		l.flush()
		if got := l.ring.submits - before; got != tc.wantSubmits {
			t.Errorf("lastRead %d: %d batches, want %d", tc.lastRead, got, tc.wantSubmits)
		}
		want := "+OK\r\n$3000\r\n" + strings.Repeat("v", 3000) + "\r\n"
		for i, fd := range peers {
			buf := make([]byte, 2*len(want))
			n, err := rawio.Read(fd, buf)
			if err != nil || string(buf[:n]) != want {
				t.Errorf("lastRead %d, connection %d: %d bytes %.20q…, %v", tc.lastRead, i, n, buf[:n], err)
			}
			if cns[i].lastRead == tc.lastRead {
				t.Errorf("connection %d: lastRead not updated", i)
			}
			l.remove(cns[i])
			_ = unix.Close(cns[i].fd)
			_ = unix.Close(fd)
		}
	}
}
