// Package rawio is the event loops' system calls made raw
// (unix.RawSyscall): epoll_wait, read and write on non-blocking sockets,
// shared by the server's loops (package resp) and the native load
// client's (resp/respbench).
//
// A raw system call skips the runtime's entersyscall/exitsyscall: the
// calling goroutine keeps its P. For read and write on a non-blocking
// socket, which never block, that bookkeeping is only cost. For
// epoll_wait it keeps the runtime's monitor (sysmon) from retaking the P
// of a waiting loop and then polling every 20 µs (docs/RESP.md); the
// price is that the P serves nothing else while the loop waits, so a
// caller waits raw only when other Ps remain, and a preemption request
// (GC, sysmon after 10 ms) interrupts the wait with EINTR.
package rawio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollWait is epoll_wait on epfd for at most msec milliseconds (0: do not
// wait, -1: no limit), filling events (not empty). It returns the number of
// events or the errno (unix.EINTR when interrupted).
func EpollWait(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Read is read(2) of fd (a non-blocking socket) into p (not empty): the
// bytes read, 0 at end of stream, or the errno (unix.EAGAIN when nothing
// is ready).
func Read(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Write is write(2) of p (not empty) to fd (a non-blocking socket): the
// bytes written or the errno (unix.EAGAIN when the socket buffer is full).
func Write(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Pending is ioctl(FIONREAD) of fd (a socket): the bytes in its receive
// queue, or the errno.
func Pending(fd int) (int, error) {
	var n int32
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCINQ, uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
