package rawio

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A non-blocking socket pair: Write, EpollWait reports the readable end,
// Read gets the bytes; an empty socket answers EAGAIN, a zero timeout
// returns at once with no event.
func TestSocketPair(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fds[1], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fds[1])}); err != nil {
		t.Fatal(err)
	}
	events := make([]unix.EpollEvent, 4)
	buf := make([]byte, 16)
	if n, err := EpollWait(ep, events, 0); n != 0 || err != nil {
		t.Fatalf("EpollWait on an empty socket: %d, %v", n, err)
	}
	if _, err := Read(fds[1], buf); err != unix.EAGAIN {
		t.Fatalf("Read of an empty socket: %v, want EAGAIN", err)
	}
	if n, err := Write(fds[0], []byte("hello")); n != 5 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if n, err := EpollWait(ep, events, 1000); n != 1 || err != nil || events[0].Fd != int32(fds[1]) {
		t.Fatalf("EpollWait: %d, %v, %+v", n, err, events[0])
	}
	if n, err := Read(fds[1], buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read: %q, %v", buf[:n], err)
	}
	if err := unix.Close(fds[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := Read(fds[1], buf); n != 0 || err != nil {
		t.Fatalf("Read after the peer closed: %d, %v, want end of stream", n, err)
	}
}

// Pending reports the bytes waiting to be read, and the errno of a
// descriptor that is not a socket.
func TestPending(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if n, err := Pending(fds[1]); n != 0 || err != nil {
		t.Fatalf("Pending of an empty socket: %d, %v", n, err)
	}
	if _, err := Write(fds[0], make([]byte, 3000)); err != nil {
		t.Fatal(err)
	}
	if n, err := Pending(fds[1]); n != 3000 || err != nil {
		t.Fatalf("Pending: %d, %v; want 3000", n, err)
	}
	if _, err := Read(fds[1], make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if n, err := Pending(fds[1]); n != 2000 || err != nil {
		t.Fatalf("Pending after a read of 1000: %d, %v; want 2000", n, err)
	}
	if _, err := Pending(-1); err == nil {
		t.Fatal("Pending(-1): no error")
	}
}
