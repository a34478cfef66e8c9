package shm

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// dial connects to the endpoint at dst: the listener's credentials are
// checked (SO_PEERCRED) before our hello shares anything, then our hello
// goes out and the connection may carry packets at once (the peer reads
// them once it has mapped our region).
func (ep *Endpoint) dial(dst netip.AddrPort) (*conn, error) {
	if !dst.IsValid() {
		return nil, fmt.Errorf("%w: invalid address %v", ErrNoPeer, dst)
	}
	fd, err := newSock()
	if err != nil {
		return nil, fmt.Errorf("shm: socket: %w", err)
	}
	name := sockName(ep.opts.Dir, ep.opts.Namespace, dst)
	if err := unix.Connect(fd, unixAddr(name)); err != nil {
		_ = unix.Close(fd)
		if err == unix.EAGAIN {
			return nil, fmt.Errorf("%w: %v's backlog is full", ErrBusy, dst)
		}
		return nil, fmt.Errorf("%w %v (%s): %v", ErrNoPeer, dst, name, err)
	}
	cred, err := peerCred(fd)
	if err == nil {
		err = allowed(cred, ep.opts.AllowUIDs)
	}
	if err != nil {
		_ = unix.Close(fd)
		ep.st.Refused++
		return nil, fmt.Errorf("%w: the endpoint at %v: %v", ErrRefused, dst, err)
	}
	c := ep.newConn(fd, connDialing)
	c.peer = dst
	rfd, err := c.setupLocal()
	if err == nil {
		err = c.sendHello(rfd)
		_ = unix.Close(rfd)
	}
	if err != nil {
		_ = unix.Close(fd)
		if c.local != nil {
			unmap(c.local.mem)
		}
		return nil, fmt.Errorf("shm: connecting to %v: %w", dst, err)
	}
	ep.conns = append(ep.conns, c)
	ep.byAddr[dst] = c
	return c, nil
}

// maybePoll checks the sockets when pollEvery has passed since the last
// check.
func (ep *Endpoint) maybePoll() {
	var since time.Duration
	if ep.loopUses > 0 {
		// The caller's reading (SetLoopTime): no clock read here.
		ep.loopUses--
		since = ep.loopNow.Sub(ep.lastPoll)
	} else {
		since = time.Since(ep.lastPoll)
	}
	if since >= pollEvery {
		ep.poll(0)
	}
}

// SetLoopTime implements datapath.LoopClock: now serves the socket check
// of the next two Recv, RecvSegments or Flush calls, which then read no
// clock. Call it on the endpoint's goroutine.
func (ep *Endpoint) SetLoopTime(now time.Time) { ep.loopNow, ep.loopUses = now, 2 }

// poll checks the listening socket and every connection's socket, waiting
// at most timeout (0 or less: not at all), together with the doorbell and
// the wake descriptor.
func (ep *Endpoint) poll(timeout time.Duration) {
	ep.lastPoll = time.Now()
	p := ep.pfds[:0]
	p = append(p, unix.PollFd{Fd: int32(ep.lfd), Events: unix.POLLIN},
		unix.PollFd{Fd: int32(ep.efd), Events: unix.POLLIN},
		unix.PollFd{Fd: int32(ep.wake.Fd()), Events: unix.POLLIN})
	ep.pconns = ep.pconns[:0]
	for _, c := range ep.conns {
		if c.fd >= 0 {
			p = append(p, unix.PollFd{Fd: int32(c.fd), Events: unix.POLLIN})
			ep.pconns = append(ep.pconns, c)
		}
	}
	ep.pfds = p
	ts := unix.NsecToTimespec(int64(max(timeout, 0))) // never unbounded
	n, err := unix.Ppoll(p, &ts, nil)
	if err != nil || n == 0 {
		ep.expire()
		return
	}
	var b [8]byte
	if p[1].Revents != 0 {
		_, _ = unix.Read(ep.efd, b[:])
	}
	if p[2].Revents != 0 {
		ep.wake.Drain()
	}
	// Connections first (the slice may grow with accepts).
	for i, c := range ep.pconns {
		if ev := p[3+i].Revents; ev != 0 && c.fd >= 0 {
			ep.handle(c, ev)
		}
	}
	clear(ep.pconns)
	if p[0].Revents != 0 {
		ep.accept()
	}
	ep.expire()
}

// expire drops connections whose handshake took too long.
func (ep *Endpoint) expire() {
	for _, c := range ep.conns {
		if (c.state == connDialing || c.state == connAccepted) && time.Since(c.since) > ep.opts.HandshakeTimeout {
			c.kill(fmt.Errorf("%w: handshake with %v timed out", ErrNoPeer, c.peer))
		}
	}
}

// accept takes pending connections; a peer whose user is not allowed gets
// a refusal message and nothing else.
func (ep *Endpoint) accept() {
	for range 64 {
		fd, _, err := unix.Accept4(ep.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return
		}
		cred, err := peerCred(fd)
		if err == nil {
			err = allowed(cred, ep.opts.AllowUIDs)
		}
		if err != nil {
			ep.st.Refused++
			_ = sendMsg(fd, refuseMsg(err.Error()), nil)
			// Unread messages would turn our close into a reset that
			// hides the refusal: drain them, closing what they carry.
			for range 4 {
				_, fds, err := recvMsg(fd, ep.msg, 2+MaxPeerSpaces)
				closeAll(fds)
				if err != nil {
					break
				}
			}
			_ = unix.Close(fd)
			continue
		}
		ep.conns = append(ep.conns, ep.newConn(fd, connAccepted))
	}
}

// handle processes a socket event of c: a hello, a refusal, or a hang-up.
func (ep *Endpoint) handle(c *conn, ev int16) {
	n, fds, err := recvMsg(c.fd, ep.msg, 2+MaxPeerSpaces)
	switch {
	case err == unix.EAGAIN:
		if ev&(unix.POLLHUP|unix.POLLERR) != 0 {
			c.kill(nil)
		}
		return
	case err == unix.ECONNRESET:
		c.kill(fmt.Errorf("%w: %v reset the connection", ErrNoPeer, c.peer))
		return
	case err != nil:
		c.violation(err.Error())
		return
	case n == 0:
		c.kill(nil) // hang-up: the peer closed or died
		return
	}
	h, err := parseMsg(ep.msg[:n])
	switch c.state {
	case connAccepted:
		if err == nil {
			err = c.attach(h, fds)
			fds = nil
		}
		if err != nil {
			closeAll(fds)
			ep.st.Refused++
			_ = sendMsg(c.fd, refuseMsg(err.Error()), nil)
			c.kill(fmt.Errorf("%w: %v", ErrRefused, err))
			return
		}
		c.peer = h.addr
		rfd, err := c.setupLocal()
		if err == nil {
			err = c.sendHello(rfd)
			_ = unix.Close(rfd)
		}
		if err != nil {
			c.kill(err)
			return
		}
		if old := ep.byAddr[c.peer]; old == nil || old.state == connDead {
			ep.byAddr[c.peer] = c
		}
	case connDialing:
		if err == nil {
			err = c.attach(h, fds)
			fds = nil
		}
		if err != nil {
			closeAll(fds)
			if !errors.Is(err, ErrRefused) {
				ep.st.Refused++
				err = fmt.Errorf("%w: %v", ErrRefused, err)
			}
			c.kill(err)
			return
		}
		// What we published while dialing rang no doorbell (we had
		// none yet), and the peer may have gone to sleep after its own
		// attach saw an empty ring: wake it now (wakePeer loads its
		// flag after our index store, so one of us sees the other).
		if c.published != 0 {
			c.wakePeer()
		}
	default:
		closeAll(fds)
		c.violation("unexpected message after the handshake")
	}
}

// ready reports whether any connection has work waiting.
func (ep *Endpoint) ready() bool {
	for _, c := range ep.conns {
		if c.ready() {
			return true
		}
	}
	return false
}

// Wait implements datapath.Endpoint: it returns when a packet or a
// completion may be ready, a peer connected or hung up, Wake was called,
// or timeout elapsed. A blocking endpoint sleeps in ppoll on its doorbell
// (an eventfd peers write only when it announced that it sleeps), its
// sockets and its wake descriptor; a busy-polling one (Config.BusyPoll)
// spins on the rings.
func (ep *Endpoint) Wait(timeout time.Duration) error {
	if err := ep.guard.Enter(); err != nil {
		return err
	}
	defer ep.guard.Exit()
	ep.reap()
	if timeout <= 0 || ep.ready() {
		ep.maybePoll()
		return nil
	}
	deadline := time.Now().Add(timeout)
	if ep.busyPoll {
		for !ep.ready() && !ep.woken() {
			if time.Now().After(deadline) {
				return nil
			}
			ep.maybePoll()
			runtime.Gosched()
		}
		return nil
	}
	if spin := ep.opts.SpinWait; spin > 0 {
		end := time.Now().Add(min(spin, timeout))
		for !ep.ready() && !ep.woken() && time.Now().Before(end) {
			runtime.Gosched()
		}
		if ep.ready() {
			return nil
		}
	}
	for _, c := range ep.conns {
		c.setSleeping(1)
	}
	if !ep.ready() {
		ep.poll(time.Until(deadline))
	}
	for _, c := range ep.conns {
		c.setSleeping(0)
	}
	return nil
}

// woken reports (and clears) a Wake for a busy-polling Wait.
func (ep *Endpoint) woken() bool {
	if ep.wokenFlag.Swap(false) {
		ep.wake.Drain()
		return true
	}
	return false
}

var (
	_ datapath.Endpoint   = (*Endpoint)(nil)
	_ datapath.HeldSender = (*Endpoint)(nil)
)
