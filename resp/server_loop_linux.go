//go:build linux

package resp

import (
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/resp/internal/rawio"
)

// An event loop serves many connections from one goroutine, as Redis does:
// epoll_wait (level-triggered) over its sockets, then for each readable one
// a read (more while each fills its room, see turnReads), the answers to
// every complete command read, and a single writev of the batch. A connection whose write would block is watched for
// EPOLLOUT instead of EPOLLIN until its batch is written: it reads nothing
// meanwhile, so a client that never reads is held back by TCP and costs at
// most one batch. The server runs Config.EventLoops loops (default one
// per two Ps) and gives new connections to them in turn.
//
// A connection leaves its loop for a goroutine of its own (net.FileConn of
// its socket) when a blocking pop waits and when it ends with a protocol
// error (the reply, then a bounded linger); it stays there until closed.
type loop struct {
	srv  *Server
	epfd int
	efd  int // eventfd: Close wakes the loop through it

	mu    sync.Mutex // guards conns (the accepting goroutine adds to it)
	conns map[int]*conn

	pending []*conn // connections with a batch to write (answer, flush)

	riov [2]unix.Iovec // readv's vectors (readBig)

	ring *loopRing // batched reads and writes (nil: one system call each)

	// lns are the listeners this loop accepts from (server_accept_linux.go),
	// by duplicate descriptor, and freed is set once epfd is closed; both
	// guarded by mu. accepted counts the connections it accepted (tests).
	lns      map[int]*loopListener
	freed    bool
	accepted atomic.Int64

	now int64 // the time of this turn (UnixNano): conn.clock

	// rawWait: epoll_wait is a raw system call (rawio.EpollWait) instead of
	// one the runtime is told may block. Set when the loops leave Ps to
	// spare for the other goroutines (GOMAXPROCS > loops).
	rawWait bool
}

// loopTick is the longest epoll_wait, and so the resolution of the idle
// and unfinished-command timeouts of loop connections.
const loopTick = 100 * time.Millisecond

// yieldEvery is how often a busy loop goes through the Go scheduler
// (runtime.Gosched). A goroutine that never does is seen by the runtime's
// monitor thread (sysmon) as running one time slice for more than 10 ms:
// it is sent a preemption signal, its P is taken from it in its next
// system call and handed to another thread, and sysmon, having had work,
// goes back to polling every 20 µs (a nanosleep each) for a millisecond
// or more. Yielding well within the 10 ms keeps sysmon asleep.
const yieldEvery = 5 * time.Millisecond

// maxIov is the most iovecs given to one writev (Linux's IOV_MAX).
const maxIov = 1024

func (s *Server) startLoops() error {
	n := s.cfg.EventLoops
	if n <= 0 {
		n = defaultLoops()
	}
	for range n {
		l, err := newLoop(s)
		if err != nil {
			for _, l := range s.loops {
				l.free()
			}
			s.loops = nil
			return err
		}
		s.loops = append(s.loops, l)
	}
	raw := runtime.GOMAXPROCS(0) > n
	for _, l := range s.loops {
		l.rawWait = raw
		s.wg.Add(1)
		go l.run()
	}
	return nil
}

// defaultLoops is one loop per two Ps (at least one): every command takes
// the one keyspace lock, so loops beyond that mostly contend for it, and
// the clients of a benchmark on the same machine need CPU too.
func defaultLoops() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func newLoop(s *Server) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(efd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	l := &loop{srv: s, epfd: epfd, efd: efd, conns: map[int]*conn{}}
	if !s.cfg.NoIOUring {
		l.ring = newLoopRing()
	}
	return l, nil
}

// detach takes the socket of a TCP connection out of Go's netpoller: it
// returns a duplicate of its descriptor, non-blocking, and closes c; -1
// (c untouched) when c is not a TCP connection or the duplicate fails.
func detach(c net.Conn) int {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return -1
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	var derr error
	if err := rc.Control(func(p uintptr) { fd, derr = unix.FcntlInt(p, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || derr != nil {
		return -1
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1
	}
	_ = tc.Close() // the duplicate keeps the socket open
	return fd
}

func closeFD(fd int) { _ = unix.Close(fd) }

// pendingBytes is the bytes waiting in the receive queue of socket fd, 0
// when unknown.
func pendingBytes(fd int) int {
	n, err := rawio.Pending(fd)
	if err != nil {
		return 0
	}
	return n
}

// add makes the loop serve cn on fd.
func (l *loop) add(cn *conn, fd int) error {
	cn.fd, cn.lp = fd, l
	cn.deadline = cn.nextDeadline()
	l.mu.Lock()
	l.conns[fd] = cn
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.conns, fd)
		l.mu.Unlock()
		cn.fd, cn.lp = -1, nil
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// wake interrupts the loop's epoll_wait (Close).
func (l *loop) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(l.efd, one[:])
}

// free closes the loop's descriptors, once its goroutine has returned.
func (l *loop) free() {
	if l.ring != nil {
		l.ring.free()
	}
	l.mu.Lock()
	l.freed = true // a listener's Serve may return later: see unwatch
	l.mu.Unlock()
	_ = unix.Close(l.epfd)
	_ = unix.Close(l.efd)
}

func (l *loop) run() {
	s := l.srv
	defer s.wg.Done()
	events := make([]unix.EpollEvent, 256)
	lastScan := time.Now()
	lastYield, lastEvent := lastScan, lastScan
	spinning, spinFor := false, s.cfg.BusyPoll
	for {
		var n int
		var err error
		switch {
		case spinning:
			n, err = rawio.EpollWait(l.epfd, events, 0)
		case l.rawWait:
			n, err = rawio.EpollWait(l.epfd, events, int(loopTick/time.Millisecond))
		default:
			n, err = unix.EpollWait(l.epfd, events, int(loopTick/time.Millisecond))
		}
		if err != nil {
			n = 0 // unix.EpollWait returns -1
			if err != unix.EINTR {
				time.Sleep(time.Millisecond) // not expected: epfd is valid until free
			}
		}
		select {
		case <-s.done:
			l.closeAll()
			return
		default:
		}
		now := time.Now()
		l.now = now.UnixNano()
		served := 0
		if l.ring != nil {
			l.ringReads(events[:n])
			served = n
		}
		for i := served; i < n; i++ {
			l.serveEvent(&events[i])
		}
		l.flush()
		if n > 0 {
			lastEvent = now
		}
		spinning = spinFor > 0 && now.Sub(lastEvent) < spinFor
		if now.Sub(lastScan) >= loopTick {
			lastScan = now
			l.expire(now)
		}
		if now.Sub(lastYield) >= yieldEvery {
			lastYield = now
			runtime.Gosched()
		}
	}
}

// serveEvent serves one event with a system call per read or write.
func (l *loop) serveEvent(ev *unix.EpollEvent) {
	cn := l.eventConn(ev)
	if cn == nil {
		return
	}
	if cn.wantWrite {
		l.writable(cn)
	} else {
		l.readable(cn)
	}
}

// A ready connection is read again in the same loop turn while its reads
// fill all the room they were given (the socket may hold more), at most
// turnReads reads and turnBytes bytes: the replies to what the reads bring
// go out together with one write at the end of the turn. A pipeline of
// large values (SET of 64 KiB × 16: one read per body, as bigRoom receives
// each into its own buffer) is then answered with one write instead of
// one per command, and the client is woken once; Redis reads once per
// event and writes per command there.
const (
	turnReads = 64
	turnBytes = 1 << 20
)

// readable reads from cn and answers what it can (see turnReads).
func (l *loop) readable(cn *conn) { l.readOn(cn, turnReads, turnBytes) }

// readOn is readable with reads reads and budget bytes left.
func (l *loop) readOn(cn *conn, reads, budget int) {
	for range reads {
		n, full := l.readOnce(cn)
		if budget -= n; !full || budget <= 0 || cn.lp != l || cn.wantWrite {
			return
		}
	}
}

// clock is the time for a connection's last-command stamp: its loop's
// turn time (one clock read per turn, not per connection), or now on a
// goroutine.
func (cn *conn) clock() int64 {
	if l := cn.lp; l != nil && l.now != 0 {
		return l.now
	}
	return time.Now().UnixNano()
}

// bulk gives cn, which is receiving a large argument, the receive buffer
// of Config.RecvBuffer, once.
func (l *loop) bulk(cn *conn) {
	cn.rcvSet = true
	if n := l.srv.cfg.RecvBuffer; n > 0 {
		_ = unix.SetsockoptInt(cn.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, n) // best effort: the default buffer works, slower
	}
}

// readOnce reads once from cn and answers what it can; it returns the
// bytes read and whether they filled the room they were read into.
func (l *loop) readOnce(cn *conn) (int, bool) {
	big, room, ok := l.readPrep(cn)
	if !ok {
		return 0, false
	}
	var n int
	var err error
	if big != nil {
		n, err = l.readv(cn.fd, big, room)
	} else {
		n, err = rawio.Read(cn.fd, room)
	}
	return l.readDone(cn, big, room, n, err)
}

// readPrep prepares cn's next read: into room, or (a large argument's
// body, see readDone) into big and then at most bigTail bytes of room.
// It reports false when the connection has left the loop.
func (l *loop) readPrep(cn *conn) (big, room []byte, ok bool) {
	big = cn.bigRoom()
	if !cn.makeRoom() {
		l.handOff(cn, stProtoErr)
		return nil, nil, false
	}
	if big != nil {
		if !cn.rcvSet {
			l.bulk(cn)
		}
		return big, cn.in[cn.w:min(len(cn.in), cn.w+bigTail)], true
	}
	return nil, cn.readRoom(), true
}

// readDone takes in the n bytes (or the error) of a read prepared by
// readPrep and answers what it can; it returns the bytes read and whether
// they filled the room they were read into. A large argument's body is
// read straight into big (its pool buffer) and what follows it into the
// connection's buffer.
func (l *loop) readDone(cn *conn, big, room []byte, n int, err error) (int, bool) {
	if err == unix.EAGAIN || err == unix.EINTR {
		return 0, false
	}
	if err != nil || n <= 0 {
		l.close(cn)
		return 0, false
	}
	cn.lastRead = n
	if big == nil {
		cn.filled = n == len(cn.in)-cn.w
		cn.w += n
		l.answer(cn)
		return n, n == len(room)
	}
	inBig := min(n, len(big))
	cn.bigRead(inBig)
	cn.w += n - inBig
	cn.filled = false
	if n > inBig || cn.bigBuf == nil {
		l.answer(cn)
	}
	return n, n == len(big)+len(room)
}

// readv is readv(2) into a and b (b may be empty) on a non-blocking
// socket, raw as rawio.Read.
func (l *loop) readv(fd int, a, b []byte) (int, error) {
	l.riov[0] = unix.Iovec{Base: &a[0]}
	l.riov[0].SetLen(len(a))
	nv := 1
	if len(b) > 0 {
		l.riov[1] = unix.Iovec{Base: &b[0]}
		l.riov[1].SetLen(len(b))
		nv = 2
	}
	r, _, e := unix.RawSyscall(unix.SYS_READV, uintptr(fd), uintptr(unsafe.Pointer(&l.riov[0])), uintptr(nv))
	l.riov = [2]unix.Iovec{} // drop the pointers
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// writable goes on with cn's pending write and, once it is done, with the
// commands still buffered.
func (l *loop) writable(cn *conn) {
	done, err := cn.out.writeFD(cn.fd)
	if err != nil {
		l.close(cn)
		return
	}
	if !done {
		return
	}
	cn.wantWrite = false
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(cn.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, cn.fd, &ev); err != nil {
		l.close(cn)
		return
	}
	l.answer(cn)
}

// answer answers the complete commands buffered. A full batch is written
// at once; the last one is queued (l.pending) and written with the others
// once every ready connection has been read, as Redis writes its replies
// before it waits again: the client finds them together (one wake-up,
// one epoll_wait for many replies) instead of one by one. answer returns
// when more input is needed, a write waits for the socket, or the
// connection has left the loop.
func (l *loop) answer(cn *conn) {
	for {
		st := cn.process()
		switch st {
		case stBlocked, stProtoErr:
			l.handOff(cn, st)
			return
		case stOverLimit:
			l.close(cn)
			return
		case stFull:
			if cn.out.pending() && !l.write(cn) {
				return
			}
			continue
		case stQuit:
			if cn.out.pending() && !l.write(cn) {
				return // closed, or the write waits: process answers stQuit again
			}
			l.close(cn)
			return
		}
		if cn.r == cn.w { // nothing of a next command yet: idle, not slow
			cn.r, cn.w = 0, 0
		}
		cn.deadline = cn.nextDeadline()
		if cn.out.pending() && !cn.queued {
			cn.queued = true
			l.pending = append(l.pending, cn)
		}
		return
	}
}

// flush writes the batches queued by answer.
func (l *loop) flush() {
	if l.ring != nil {
		l.ringWrites()
		return
	}
	for i, cn := range l.pending {
		l.pending[i] = nil
		cn.queued = false
		if cn.lp == l && !cn.wantWrite && cn.out.pending() { // not closed or handed off meanwhile
			l.write(cn)
		}
	}
	l.pending = l.pending[:0]
}

// write writes cn's batch; false when the connection was closed or must
// wait until its socket is writable.
func (l *loop) write(cn *conn) bool {
	done, err := cn.out.writeFD(cn.fd)
	if err != nil {
		l.close(cn)
		return false
	}
	if done {
		return true
	}
	return l.waitWritable(cn)
}

// waitWritable makes cn wait, reading nothing, until its socket is
// writable; it returns false.
func (l *loop) waitWritable(cn *conn) bool {
	cn.wantWrite = true
	cn.deadline = time.Time{} // no timeout while the client does not read, as with a goroutine
	ev := unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(cn.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, cn.fd, &ev); err != nil {
		l.close(cn)
	}
	return false
}

// expire closes the connections whose idle or unfinished-command timeout
// has passed.
func (l *loop) expire(now time.Time) {
	s := l.srv
	var late []*conn
	l.mu.Lock()
	for _, cn := range l.conns {
		if !cn.wantWrite && !cn.deadline.IsZero() && now.After(cn.deadline) {
			late = append(late, cn)
		}
	}
	l.mu.Unlock()
	for _, cn := range late {
		if cn.w > 0 {
			s.stats.slowClosed.Add(1)
		} else {
			s.stats.idleClosed.Add(1)
		}
		l.close(cn)
	}
}

// remove takes cn's socket out of the loop.
func (l *loop) remove(cn *conn) {
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, cn.fd, nil)
	l.mu.Lock()
	delete(l.conns, cn.fd)
	l.mu.Unlock()
}

// close closes cn's socket and releases what it holds.
func (l *loop) close(cn *conn) {
	l.remove(cn)
	_ = unix.Close(cn.fd)
	cn.fd, cn.lp = -1, nil
	cn.out.abort()
	l.srv.dropConn(cn)
}

func (l *loop) closeAll() {
	l.mu.Lock()
	all := make([]*conn, 0, len(l.conns))
	for _, cn := range l.conns {
		all = append(all, cn)
	}
	l.mu.Unlock()
	for _, cn := range all {
		l.close(cn)
	}
}

// handOff moves cn to a goroutine of its own, which goes on from st
// (stBlocked: wait for the pop; stProtoErr: write the error and linger).
func (l *loop) handOff(cn *conn, st step) {
	s := l.srv
	l.remove(cn)
	f := os.NewFile(uintptr(cn.fd), "")
	c, err := net.FileConn(f) // a duplicate of the descriptor, in Go's netpoller
	_ = f.Close()
	cn.fd, cn.lp = -1, nil
	if err != nil {
		cn.out.abort()
		s.dropConn(cn)
		return
	}
	s.mu.Lock()
	cn.c = c
	closed := s.closed
	s.mu.Unlock()
	if closed {
		_ = c.Close() // Close has already closed the others; this one ends at once
	}
	go s.serveHanded(cn, st)
}

// writeFD writes the batch to the non-blocking socket fd, with as few
// writev calls as the socket takes; it reports whether the batch is
// written (its references released). A batch that is not is kept (with
// its references) and written on by the next call; nothing may be added
// to it meanwhile.
func (o *output) writeFD(fd int) (bool, error) {
	if !o.writing {
		o.iovecs()
		o.ipos, o.writing = 0, true
	}
	for o.ipos < len(o.iov) {
		rest := o.iov[o.ipos:]
		var n int
		var err error
		if len(rest) == 1 {
			n, err = rawio.Write(fd, rest[0])
		} else {
			n, err = o.writev(fd, rest[:min(len(rest), maxIov)])
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		o.advance(n)
	}
	o.done()
	return true, nil
}

// advance takes n bytes written off the front of iov[ipos:].
func (o *output) advance(n int) {
	for n > 0 {
		if b := o.iov[o.ipos]; n >= len(b) {
			n -= len(b)
			o.ipos++
		} else {
			o.iov[o.ipos] = b[n:]
			n = 0
		}
	}
}

// outputSys is the output's iovec array for writev.
type outputSys struct{ vecs []unix.Iovec }

// writev is the system call on iovs (at most maxIov non-empty slices),
// through the output's own iovec array: no allocation; raw, as rawio.Read.
func (o *output) writev(fd int, iovs [][]byte) (int, error) {
	vecs := o.fillVecs(iovs)
	r, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(len(vecs)))
	clear(vecs) // drop the pointers into the batch
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// fillVecs points the output's iovec array at iovs (non-empty slices) and
// returns it; the caller clears it once the system call is done.
func (o *output) fillVecs(iovs [][]byte) []unix.Iovec {
	vecs := o.sys.vecs[:0]
	for _, b := range iovs {
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vecs = append(vecs, v)
	}
	o.sys.vecs = vecs
	return vecs
}

// eventConn returns the connection of an epoll event, or nil for the
// loop's wake-up eventfd (drained here) and for a connection closed since.
func (l *loop) eventConn(ev *unix.EpollEvent) *conn {
	fd := int(ev.Fd)
	if fd == l.efd {
		var b [8]byte
		_, _ = unix.Read(l.efd, b[:])
		return nil
	}
	l.mu.Lock()
	cn := l.conns[fd]
	ll := l.lns[fd]
	l.mu.Unlock()
	if ll != nil {
		l.accept(ll)
	}
	return cn
}
