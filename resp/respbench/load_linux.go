//go:build linux

package respbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/resp/internal/rawio"
)

// driveAll sends n requests over conns, pipe at a time, the way
// redis-benchmark's ae loop does: the connections are spread over
// min(GOMAXPROCS, len(conns)) event loops, each a goroutine waiting in
// epoll_wait (level-triggered) on its share of the sockets, taken out of
// Go's netpoller. A ready connection is read once per wake-up; when its
// batch is answered the next one is claimed and written at once with one
// write. A batch's write that would block is finished when the socket is
// writable, replies being read meanwhile. The goroutine per connection of
// driveGoroutines costs a second read (EAGAIN), a netpoller wake-up and
// futex calls per batch besides (docs/perf/resp8.md).
func driveAll(ctx context.Context, conns []net.Conn, batch []byte, cmdLen int, want Shape, pipe int, n int64) error {
	fds := make([]int, 0, len(conns))
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	for _, c := range conns {
		fd, err := detachFD(c)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	nl := min(runtime.GOMAXPROCS(0), len(fds))
	loops := make([]*loadLoop, 0, nl)
	defer func() {
		for _, l := range loops {
			_ = unix.Close(l.epfd)
		}
	}()
	for i := range nl {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return os.NewSyscallError("epoll_create1", err)
		}
		l := &loadLoop{epfd: epfd, batch: batch, cmdLen: cmdLen, pipe: int64(pipe), n: n, buf: make([]byte, loadReadBuffer)}
		loops = append(loops, l)
		for j := i; j < len(fds); j += nl {
			sc, err := NewReplyScanner(want)
			if err != nil {
				return err
			}
			l.conns = append(l.conns, &loadConn{fd: fds[j], sc: sc})
		}
	}
	var claimed atomic.Int64
	var failed atomic.Bool
	errs := make([]error, nl)
	var wg sync.WaitGroup
	for i, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = l.run(ctx, &claimed, &failed); errs[i] != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// detachFD takes c's socket out of Go's netpoller: a non-blocking
// duplicate of its descriptor, c closed.
func detachFD(c net.Conn) (int, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return -1, fmt.Errorf("respbench: load: %T is not a TCP connection", c)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(p uintptr) { fd, derr = unix.FcntlInt(p, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	_ = tc.Close() // the duplicate keeps the socket open
	return fd, nil
}

// loadLoop is one event loop of driveAll and the connections it drives.
type loadLoop struct {
	epfd   int
	conns  []*loadConn // epoll's data is the index in conns
	active int         // connections not done
	batch  []byte      // pipe requests of cmdLen bytes
	cmdLen int
	pipe   int64
	n      int64 // requests of the phase, over every loop
	buf    []byte
}

// loadConn is one connection of a loadLoop.
type loadConn struct {
	fd      int
	sc      *ReplyScanner
	k, got  int64  // requests of the batch in flight, replies to them so far
	out     []byte // the batch's bytes not yet written
	wantOut bool   // watched for EPOLLOUT (a write waits)
	done    bool
}

// loadWait is the longest epoll_wait: how late a loop sees ctx cancelled.
const loadWait = 100 * time.Millisecond

// loadYieldEvery is how often a busy loop goes through the scheduler (as
// the server's loops: it keeps the runtime's monitor from preempting it).
const loadYieldEvery = 5 * time.Millisecond

func (l *loadLoop) run(ctx context.Context, claimed *atomic.Int64, failed *atomic.Bool) error {
	for i, c := range l.conns {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			return os.NewSyscallError("epoll_ctl", err)
		}
		l.active++
	}
	for i, c := range l.conns {
		if err := l.next(i, c, claimed); err != nil {
			return err
		}
	}
	events := make([]unix.EpollEvent, len(l.conns))
	lastEvent := time.Now()
	lastYield := lastEvent
	for l.active > 0 {
		if failed.Load() {
			return nil // another loop failed: its error is the run's
		}
		nev, err := rawio.EpollWait(l.epfd, events, int(loadWait/time.Millisecond))
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("epoll_wait", err)
		}
		now := time.Now()
		if nev == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if now.Sub(lastEvent) > loadTimeout {
				return fmt.Errorf("respbench: no reply for %v", loadTimeout)
			}
			runtime.Gosched()
			lastYield = now
			continue
		}
		lastEvent = now
		for _, ev := range events[:nev] {
			i := int(ev.Fd)
			c := l.conns[i]
			if c.done {
				continue
			}
			if ev.Events&unix.EPOLLOUT != 0 && len(c.out) > 0 {
				if err := l.write(i, c); err != nil {
					return err
				}
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				if err := l.read(i, c, claimed); err != nil {
					return err
				}
			}
		}
		if now.Sub(lastYield) >= loadYieldEvery {
			lastYield = now
			runtime.Gosched()
		}
	}
	return nil
}

// next claims c's next batch and writes it; with none left, c is done.
func (l *loadLoop) next(i int, c *loadConn, claimed *atomic.Int64) error {
	end := claimed.Add(l.pipe)
	k := l.pipe
	if end > l.n {
		k -= end - l.n
	}
	if k <= 0 {
		c.done = true
		l.active--
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil); err != nil {
			return os.NewSyscallError("epoll_ctl", err)
		}
		return nil
	}
	c.k, c.got = k, 0
	c.out = l.batch[:int(k)*l.cmdLen]
	return l.write(i, c)
}

// write writes what it can of c's batch, and watches the socket for
// EPOLLOUT while some of it waits.
func (l *loadLoop) write(i int, c *loadConn) error {
	for len(c.out) > 0 {
		m, err := rawio.Write(c.fd, c.out)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if !c.wantOut {
				c.wantOut = true
				return l.watch(i, c, unix.EPOLLIN|unix.EPOLLOUT)
			}
			return nil
		}
		if err != nil {
			return os.NewSyscallError("write", err)
		}
		c.out = c.out[m:]
	}
	if c.wantOut {
		c.wantOut = false
		return l.watch(i, c, unix.EPOLLIN)
	}
	return nil
}

func (l *loadLoop) watch(i int, c *loadConn, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(i)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// read reads once from c, checks the replies and, when they answer the
// whole batch, sends the next.
func (l *loadLoop) read(i int, c *loadConn, claimed *atomic.Int64) error {
	m, err := rawio.Read(c.fd, l.buf)
	if err == unix.EAGAIN || err == unix.EINTR {
		return nil
	}
	if err != nil {
		return os.NewSyscallError("read", err)
	}
	if m == 0 {
		return io.ErrUnexpectedEOF
	}
	r, err := c.sc.Feed(l.buf[:m])
	if err != nil {
		return err
	}
	c.got += int64(r)
	if c.got > c.k {
		return fmt.Errorf("respbench: %d replies to %d requests", c.got, c.k)
	}
	if c.got == c.k && len(c.out) == 0 {
		return l.next(i, c, claimed)
	}
	return nil
}
