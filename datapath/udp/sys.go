package udp

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds every use of unsafe in the package: the raw
// sendmmsg/recvmmsg/recvmsg calls over preallocated header arrays, and
// socket-address conversion into those arrays.

// sendmmsg never sleeps either (the socket is non-blocking: a full buffer
// is EAGAIN). RawSyscall matters here: under Syscall the runtime lets
// sysmon hand the processor to another thread when a call runs longer than
// 20 µs, which a batch sent over loopback does (the kernel delivers to the
// receiving socket inside the call), and the sender then waits for a
// processor and a thread wake-up (measurement: docs/RPC-NOTES.md, "Moved
// from godoc").
func sendmmsg(fd int, msgs []unix.Mmsghdr, flags int) (int, unix.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags), 0, 0)
	return int(r), e
}

// recvmmsg is non-blocking (MSG_DONTWAIT); RawSyscall keeps the busy-poll
// path cheap since the call never sleeps.
func recvmmsg(fd int, msgs []unix.Mmsghdr, flags int) (int, unix.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags|unix.MSG_DONTWAIT), 0, 0)
	return int(r), e
}

func recvmsg(fd int, msg *unix.Msghdr, flags int) (int, unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(msg)), uintptr(flags))
	return int(r), e
}

func poll(fds []unix.PollFd, ms int) (int, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(ms))
	return int(r), e
}

// ppoll waits with a nanosecond timeout (nil: none) and no signal mask.
func ppoll(fds []unix.PollFd, ts *unix.Timespec) (int, unix.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return int(r), e
}

// iovec returns an iovec covering b (which lives in registered memory, not
// the Go heap, or is kept alive by the caller until the send returns).
func iovec(b []byte) unix.Iovec {
	v := unix.Iovec{Len: uint64(len(b))}
	if len(b) > 0 {
		v.Base = unsafe.SliceData(b)
	}
	return v
}

func setMsg(h *unix.Msghdr, name *unix.RawSockaddrInet6, namelen uint32, iov []unix.Iovec, ctrl []byte) {
	h.Name = (*byte)(unsafe.Pointer(name))
	h.Namelen = namelen
	if len(iov) > 0 {
		h.Iov = &iov[0]
	} else {
		h.Iov = nil
	}
	h.Iovlen = uint64(len(iov))
	if len(ctrl) > 0 {
		h.Control = &ctrl[0]
	} else {
		h.Control = nil
	}
	h.Controllen = uint64(len(ctrl))
	h.Flags = 0
}

// putSockaddr writes dst into sa for a socket of family v6 (v4 addresses
// become v4-mapped) or v4 and returns the address length. ok is false when
// dst cannot be reached from this socket family.
func putSockaddr(sa *unix.RawSockaddrInet6, v6 bool, dst netip.AddrPort) (uint32, bool) {
	a := dst.Addr()
	port := dst.Port()
	if !v6 {
		a = a.Unmap()
		if !a.Is4() {
			return 0, false
		}
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		s4.Family = unix.AF_INET
		p := (*[2]byte)(unsafe.Pointer(&s4.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		s4.Addr = a.As4()
		s4.Zero = [8]byte{}
		return unix.SizeofSockaddrInet4, true
	}
	sa.Family = unix.AF_INET6
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	sa.Flowinfo = 0
	sa.Addr = a.As16()
	sa.Scope_id = 0
	return unix.SizeofSockaddrInet6, true
}

// getSockaddr decodes a peer address written by the kernel.
func getSockaddr(sa *unix.RawSockaddrInet6) (netip.AddrPort, bool) {
	switch sa.Family {
	case unix.AF_INET:
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&s4.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), uint16(p[0])<<8|uint16(p[1])), true
	case unix.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1])), true
	}
	return netip.AddrPort{}, false
}
