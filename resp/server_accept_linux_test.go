//go:build linux

package resp

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopOnly makes the first loop of ts accept from a new loopback listener
// that no Serve accepts from: what it serves, the loop accepted.
func loopOnly(t *testing.T, ts *testServer) (*loop, *loopListener, string) {
	t.Helper()
	if len(ts.srv.loops) == 0 {
		t.Fatal("no event loops")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	l := ts.srv.loops[0]
	ll := l.listen(ln)
	if ll == nil {
		t.Fatal("listen: nil")
	}
	t.Cleanup(func() { l.unlisten(ll) })
	return l, ll, ln.Addr().String()
}

// serverFD is the descriptor of the loop connection whose client address
// is addr (the key of its loop's conns: cn.fd belongs to the loop).
func serverFD(t *testing.T, s *Server, addr string) int {
	t.Helper()
	for _, l := range s.loops {
		l.mu.Lock()
		for fd, cn := range l.conns {
			if cn.addr == addr {
				l.mu.Unlock()
				return fd
			}
		}
		l.mu.Unlock()
	}
	t.Fatalf("no loop connection from %s", addr)
	return -1
}

// TestLoopAccept: connections to a listener only a loop watches are
// accepted by it, served, given the socket options Go's listener sets,
// and their addresses, as Serve's; Serve's own listener is watched too.
func TestLoopAccept(t *testing.T) {
	ts := newTestServer(t, Config{EventLoops: 2})
	l0 := ts.srv.loops[0]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // Serve runs on its own goroutine
		l0.mu.Lock()
		served := len(l0.lns)
		l0.mu.Unlock()
		if served == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first loop watches %d listeners, want Serve's", served)
		}
	}
	l, _, addr := loopOnly(t, ts)
	for i := range 4 {
		rc := dialRaw(t, addr)
		if got, err := rc.do("PING"); err != nil || got != "+PONG\r\n" {
			t.Fatalf("conn %d: PING = %q, %v", i, got, err)
		}
		info, err := rc.do("CLIENT", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		if want := " addr=" + rc.c.LocalAddr().String() + " laddr=" + addr + " "; !strings.Contains(info, want) {
			t.Errorf("CLIENT INFO %q: want %q", info, want)
		}
		fd := serverFD(t, ts.srv, rc.c.LocalAddr().String())
		for _, o := range []struct {
			level, opt int
			name       string
		}{{unix.IPPROTO_TCP, unix.TCP_NODELAY, "TCP_NODELAY"}, {unix.SOL_SOCKET, unix.SO_KEEPALIVE, "SO_KEEPALIVE"}} {
			if v, err := unix.GetsockoptInt(fd, o.level, o.opt); err != nil || v == 0 {
				t.Errorf("conn %d: %s = %d, %v", i, o.name, v, err)
			}
		}
		if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE); err != nil || v != 15 {
			t.Errorf("conn %d: TCP_KEEPIDLE = %d, %v; want 15", i, v, err)
		}
	}
	if n := l.accepted.Load(); n != 4 {
		t.Errorf("the loop accepted %d connections, want 4", n)
	}
}

// TestLoopAcceptMaxConns: a loop refuses connections beyond MaxConns as
// Serve does.
func TestLoopAcceptMaxConns(t *testing.T) {
	ts := newTestServer(t, Config{MaxConns: 1})
	_, _, addr := loopOnly(t, ts)
	a := dialRaw(t, addr)
	if got, err := a.do("PING"); err != nil || got != "+PONG\r\n" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	b := dialRaw(t, addr)
	_ = b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := readReply(b.r)
	if err != nil || got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second connection: %q, %v", got, err)
	}
	if _, err := b.r.ReadByte(); err == nil {
		t.Error("second connection not closed")
	}
	if n := ts.srv.Stats().Rejected; n != 1 {
		t.Errorf("rejected %d, want 1", n)
	}
}

// TestLoopUnlisten: once unlistened the loop no longer watches or accepts
// from the listener, and the duplicate is closed.
func TestLoopUnlisten(t *testing.T) {
	ts := newTestServer(t, Config{})
	l, ll, addr := loopOnly(t, ts)
	l.unlisten(ll)
	l.unlisten(ll) // twice: nothing
	l.mu.Lock()
	_, watched := l.lns[ll.fd]
	l.mu.Unlock()
	if watched {
		t.Fatal("still watched")
	}
	c, err := net.Dial("tcp", addr) // the listener is open: queued, never accepted
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("PING\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [16]byte
	if n, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read %q, %v: want no reply", b[:n], err)
	}
	if n := l.accepted.Load(); n != 0 {
		t.Errorf("accepted %d", n)
	}
}

// TestLoopAcceptError: an accept error other than none pending takes the
// listener out of the loop (left to Serve), instead of waking the loop on
// every turn.
func TestLoopAcceptError(t *testing.T) {
	ts := newTestServer(t, Config{})
	l := ts.srv.loops[0]
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0) // accept4: EOPNOTSUPP
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ll := &loopListener{fd: fd}
	l.mu.Lock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	if l.lns == nil { // Serve has not registered its listener yet
		l.lns = map[int]*loopListener{}
	}
	l.lns[fd] = ll
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	l.accept(ll)
	l.mu.Lock()
	_, watched := l.lns[fd]
	l.mu.Unlock()
	if watched {
		t.Error("still watched after an accept error")
	}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil); err != unix.ENOENT {
		t.Errorf("still in the epoll set: EPOLL_CTL_DEL = %v", err)
	}
}
