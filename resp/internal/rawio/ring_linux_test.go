package rawio

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

func newRingOrSkip(t *testing.T, n uint32) *Ring {
	t.Helper()
	r, err := NewRing(n)
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func msg(bufs ...[]byte) *unix.Msghdr {
	v := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		v[i].Base = &b[0]
		v[i].SetLen(len(b))
	}
	m := &unix.Msghdr{Iov: &v[0]}
	m.SetIovlen(len(v))
	return m
}

func pair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds
}

func drain(t *testing.T, r *Ring) map[uint64]int32 {
	t.Helper()
	got := map[uint64]int32{}
	for {
		u, res, ok := r.Next()
		if !ok {
			return got
		}
		if _, dup := got[u]; dup {
			t.Fatalf("completion %d twice", u)
		}
		got[u] = res
	}
}

// One Submit writes on two sockets (writev) and receives on an empty one:
// every operation completes within Submit, the empty read with -EAGAIN
// (MSG_DONTWAIT: not queued); a second Submit receives the bytes with
// recv and recvmsg.
func TestRingBatch(t *testing.T) {
	r := newRingOrSkip(t, 8)
	a, b := pair(t), pair(t)
	empty := make([]byte, 8)
	if err := r.PrepSendmsg(a[0], msg([]byte("hello "), []byte("world")), 1); err != nil {
		t.Fatal(err)
	}
	if err := r.PrepSendmsg(b[0], msg([]byte("xyz")), 2); err != nil {
		t.Fatal(err)
	}
	if err := r.PrepRecv(a[1], empty, 3); err != nil { // ops run in order? not assumed: a[1] may see the bytes
		t.Fatal(err)
	}
	if err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	got := drain(t, r)
	if len(got) != 3 || got[1] != 11 || got[2] != 3 {
		t.Fatalf("completions %v", got)
	}
	rest := 11
	if got[3] == -int32(unix.EAGAIN) {
	} else if got[3] > 0 {
		rest -= int(got[3])
	} else {
		t.Fatalf("read: %d", got[3])
	}
	p := make([]byte, 64)
	x, y := make([]byte, 2), make([]byte, 8)
	v := msg(x, y)
	if rest > 0 {
		if err := r.PrepRecv(a[1], p, 4); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PrepRecvmsg(b[1], v, 5); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	got = drain(t, r)
	if rest > 0 && got[4] != int32(rest) {
		t.Fatalf("read %v", got)
	}
	if got[5] != 3 || string(x) != "xy" || y[0] != 'z' {
		t.Fatalf("readv %v %q %q", got, x, y)
	}
	if r.Space() != 8 {
		t.Fatalf("space %d after draining", r.Space())
	}
}

// A write to a socket whose buffer is full completes with -EAGAIN and a
// short one with its count: Submit never waits for the peer to read.
func TestRingWriteWouldBlock(t *testing.T) {
	r := newRingOrSkip(t, 4)
	s := pair(t)
	big := bytes.Repeat([]byte{'a'}, 1<<20)
	total := 0
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("socket never full")
		}
		if err := r.PrepSendmsg(s[0], msg(big), 7); err != nil {
			t.Fatal(err)
		}
		if err := r.Submit(); err != nil {
			t.Fatal(err)
		}
		_, res, ok := r.Next()
		if !ok {
			t.Fatal("no completion")
		}
		if res == -int32(unix.EAGAIN) {
			break
		}
		if res <= 0 {
			t.Fatalf("write: %d", res)
		}
		total += int(res)
	}
	if total == 0 {
		t.Fatal("nothing written before EAGAIN")
	}
}

// Preparing more than the ring holds is refused, not overwritten.
func TestRingFull(t *testing.T) {
	r := newRingOrSkip(t, 2)
	s := pair(t)
	p := make([]byte, 4)
	for i := range 2 {
		if err := r.PrepRecv(s[1], p, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PrepRecv(s[1], p, 9); err != ErrRingFull {
		t.Fatalf("third prep: %v", err)
	}
	if err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, r); len(got) != 2 || got[0] != -int32(unix.EAGAIN) {
		t.Fatalf("completions %v", got)
	}
	for _, n := range []uint32{0, 3, 8192} {
		if _, err := NewRing(n); err == nil {
			t.Fatalf("NewRing(%d) accepted", n)
		}
	}
}
