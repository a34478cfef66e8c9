//go:build linux

package resp

import (
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// Accepting in an event loop. Serve accepts from a goroutine, which runs
// only when the network poller has been polled and a P is free. An event
// loop holds its P while it waits (a raw epoll_wait, rawio), so with every
// other P busy — a goroutine in a blocking system call, CPU work — a new
// connection waited for the runtime's monitor to poll the network and
// take a P back: 3-16 ms measured (docs/perf/resp16.md). So a TCP
// listener is also watched by the first loop (a non-blocking duplicate of
// its descriptor in the loop's epoll), which accepts what is pending each
// time it is ready and admits it as Serve does (admitFD); Serve's own
// Accept goes on, and whichever takes a connection first serves it.

// acceptBatch is the most connections a loop accepts per ready event.
const acceptBatch = 64

// loopListener is a listener watched by a loop.
type loopListener struct {
	mu     sync.Mutex // held while accepting; closed is set under it
	fd     int        // the duplicate
	closed bool
}

// listen makes loop l accept from ln too; nil (nothing to stop) when ln
// is not a TCP listener or its descriptor cannot be duplicated.
func (l *loop) listen(ln net.Listener) *loopListener {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	var derr error
	if err := rc.Control(func(p uintptr) { fd, derr = unix.FcntlInt(p, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || derr != nil {
		return nil
	}
	ll := &loopListener{fd: fd}
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if l.freed || unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		_ = unix.Close(fd)
		return nil
	}
	if l.lns == nil {
		l.lns = map[int]*loopListener{}
	}
	l.lns[fd] = ll
	return ll
}

// unlisten stops l accepting from ll (Serve returning) and closes the
// duplicate.
func (l *loop) unlisten(ll *loopListener) {
	ll.mu.Lock()
	if ll.closed {
		ll.mu.Unlock()
		return
	}
	ll.closed = true
	ll.mu.Unlock()
	l.unwatch(ll)
	_ = unix.Close(ll.fd)
}

// unwatch takes ll out of l's epoll and listeners (before its descriptor
// is closed, so that the number is never taken for a connection's).
func (l *loop) unwatch(ll *loopListener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lns[ll.fd] != ll {
		return
	}
	delete(l.lns, ll.fd)
	if !l.freed {
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ll.fd, nil)
	}
}

// accept takes up to acceptBatch pending connections from ll and admits
// them. An error other than "none pending" (out of descriptors, memory)
// takes ll out of the loop's epoll — a level-triggered listener would
// wake the loop on every turn — and leaves the listener to Serve's
// goroutine, which waits and retries.
func (l *loop) accept(ll *loopListener) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	for i := 0; i < acceptBatch && !ll.closed; i++ {
		fd, sa, err := unix.Accept4(ll.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
			l.accepted.Add(1)
			l.srv.admitFD(fd, sa)
		case unix.EINTR, unix.ECONNABORTED:
		case unix.EAGAIN:
			return
		default:
			l.unwatch(ll)
			return
		}
	}
}

// admitFD admits a connection accepted by a loop as Serve admits one:
// protected mode, the connection limit, then a loop in turn. It sets the
// socket options Go's listener sets on what it accepts (no Nagle delay,
// keepalive at Go's defaults).
func (s *Server) admitFD(fd int, sa unix.Sockaddr) {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 15)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 15)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 9)
	raddr := tcpAddr(sa)
	if s.protected() && (raddr == nil || !isLoopback(raddr)) {
		s.stats.denied.Add(1)
		refuse(fd, deniedMsg)
		return
	}
	var laddr net.Addr
	if lsa, err := unix.Getsockname(fd); err == nil {
		laddr = tcpAddr(lsa)
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		_ = unix.Close(fd)
		return
	case len(s.clients) >= s.cfg.MaxConns:
		s.mu.Unlock()
		s.stats.rejected.Add(1)
		refuse(fd, "-ERR max number of clients reached\r\n")
		return
	}
	cn := s.newConn(nil)
	cn.addr, cn.laddr = addrString(raddr), addrString(laddr)
	s.clients[cn] = struct{}{}
	s.wg.Add(1)
	s.stats.conns.Add(1)
	s.addToLoopLocked(cn, fd)
}

// refuse writes msg to a new connection (its socket buffer is empty: one
// non-blocking write takes it) and closes it.
func refuse(fd int, msg string) {
	_, _ = unix.Write(fd, []byte(msg))
	_ = unix.Close(fd)
}

// tcpAddr is sa as a *net.TCPAddr (nil for another kind, which a TCP
// listener does not make).
func tcpAddr(sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *unix.SockaddrInet6:
		ip := make(net.IP, net.IPv6len)
		copy(ip, a.Addr[:])
		return &net.TCPAddr{IP: ip, Port: a.Port}
	}
	return nil
}
