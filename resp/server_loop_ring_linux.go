//go:build linux

package resp

import (
	"github.com/cornflakes-go/cornflakes/resp/internal/rawio"

	"golang.org/x/sys/unix"
)

// A loop with a ring (Config.NoIOUring unset, io_uring available) makes
// the system calls of a turn in two batches: the reads of every
// connection its epoll_wait reported (one recv each, through one
// io_uring_enter), then, once all are answered, the writes of every batch
// (one sendmsg each, one io_uring_enter). Both are MSG_DONTWAIT: each
// completes within its io_uring_enter as the same read(2) or writev(2)
// would, nothing stays in flight between batches, and the buffers handed
// to the kernel belong to the loop as before. Everything that is not the
// first read or the first write of a connection in a turn (a read that
// filled its room and is followed by more, the rest of a write the socket
// did not take, a connection waiting to write) is made one call at a time
// as without a ring.

// ringEntries is the most operations of one io_uring_enter: the events
// of one epoll_wait (run's events), and writes in batches of as many.
const ringEntries = 256

// ringChunk bounds the bytes the reads of one ring batch are expected to
// bring (ringReads): well within the L2 cache of one core.
const ringChunk = 256 << 10

type loopRing struct {
	r     *rawio.Ring
	reads []ringRead // this batch's reads, by user value
	wr    []*conn    // this batch's writes, by user value
	res   []int32    // results by user value (resNone: no completion)
	msgs  []unix.Msghdr
	vecs  [][2]unix.Iovec // recvmsg's vectors (a large argument's body, then the rest)
	// submits counts the batches made (tests).
	submits int
}

type ringRead struct {
	cn        *conn
	big, room []byte
}

// resNone marks a result not (yet) completed.
const resNone = -1 << 31

// newLoopRing returns a ring, or nil where io_uring is unavailable.
func newLoopRing() *loopRing {
	r, err := rawio.NewRing(ringEntries)
	if err != nil {
		return nil
	}
	return &loopRing{
		r:     r,
		reads: make([]ringRead, 0, ringEntries),
		wr:    make([]*conn, 0, ringEntries),
		res:   make([]int32, ringEntries),
		msgs:  make([]unix.Msghdr, ringEntries),
		vecs:  make([][2]unix.Iovec, ringEntries),
	}
}

func (lr *loopRing) free() { _ = lr.r.Close() }

// submit makes the prepared operations and records their results in res
// (the first n entries; resNone where none came: only after an error).
func (lr *loopRing) submit(n int) error {
	for i := range n {
		lr.res[i] = resNone
	}
	lr.submits++
	err := lr.r.Submit()
	for {
		u, res, ok := lr.r.Next()
		if !ok {
			break
		}
		if u < uint64(n) {
			lr.res[u] = res
		}
	}
	return err
}

// failed drops a ring whose io_uring_enter failed (not expected): the
// loop goes on with one system call each.
func (l *loop) ringFailed() {
	l.ring.free()
	l.ring = nil
}

// ringResult is a completion's result as read(2)'s: bytes or errno.
func ringResult(res int32) (int, error) {
	if res < 0 {
		return 0, unix.Errno(-res)
	}
	return int(res), nil
}

// ringReads serves the events of one epoll_wait: a connection waiting to
// write goes on writing, the others are read in batches, each batch
// answered (and each connection read on, one call at a time, while its
// read filled its room, as readable) before the next is read. A batch
// ends once the reads it holds are expected to bring ringChunk bytes
// (each connection's last read), so what they bring is parsed while it is
// still in the cache: the reads of one turn of pipelined large values
// (50 connections × 64 KiB) would otherwise write megabytes before the
// first byte is parsed. Small reads all go in one batch.
func (l *loop) ringReads(events []unix.EpollEvent) {
	lr := l.ring
	expect := 0
	for i := range events {
		if l.ring == nil { // failed: the rest one call each
			l.serveEvent(&events[i])
			continue
		}
		cn := l.eventConn(&events[i])
		if cn == nil {
			continue
		}
		if cn.wantWrite {
			l.writable(cn)
			continue
		}
		big, room, ok := l.readPrep(cn)
		if !ok {
			continue
		}
		k := len(lr.reads)
		var err error
		if big != nil {
			v := &lr.vecs[k]
			v[0] = unix.Iovec{Base: &big[0]}
			v[0].SetLen(len(big))
			nv := 1
			if len(room) > 0 {
				v[1] = unix.Iovec{Base: &room[0]}
				v[1].SetLen(len(room))
				nv = 2
			}
			m := &lr.msgs[k]
			*m = unix.Msghdr{Iov: &v[0]}
			m.SetIovlen(nv)
			err = lr.r.PrepRecvmsg(cn.fd, m, uint64(k))
		} else {
			err = lr.r.PrepRecv(cn.fd, room, uint64(k))
		}
		if err != nil { // unreachable: events holds at most ringEntries
			l.readable(cn)
			continue
		}
		lr.reads = append(lr.reads, ringRead{cn: cn, big: big, room: room})
		if expect += cn.lastRead; expect >= ringChunk {
			l.ringAnswer()
			expect = 0
		}
	}
	if l.ring != nil {
		l.ringAnswer()
	}
}

// ringAnswer makes the reads prepared by ringReads and answers them.
func (l *loop) ringAnswer() {
	lr := l.ring
	if len(lr.reads) == 0 {
		return
	}
	err := lr.submit(len(lr.reads))
	for k := range lr.reads {
		rr := lr.reads[k]
		lr.reads[k], lr.msgs[k], lr.vecs[k] = ringRead{}, unix.Msghdr{}, [2]unix.Iovec{}
		cn := rr.cn
		if cn.lp != l {
			continue // closed or handed off by a command answered before
		}
		res := lr.res[k]
		if res == resNone { // only after a failed submit (Ring.Submit returns when all have completed)
			l.close(cn) // whether the read took bytes is unknown
			continue
		}
		n, rerr := ringResult(res)
		n, full := l.readDone(cn, rr.big, rr.room, n, rerr)
		if full && cn.lp == l && !cn.wantWrite && n < turnBytes {
			l.readOn(cn, turnReads-1, turnBytes-n)
		}
	}
	lr.reads = lr.reads[:0]
	if err != nil {
		l.ringFailed()
	}
}

// ringWrites writes the batches queued by answer (flush), ringEntries to
// an io_uring_enter.
func (l *loop) ringWrites() {
	lr := l.ring
	for i, cn := range l.pending {
		l.pending[i] = nil
		cn.queued = false
		if cn.lp != l || cn.wantWrite || !cn.out.pending() { // closed or handed off meanwhile
			continue
		}
		if l.ring == nil { // failed below
			l.write(cn)
			continue
		}
		if len(lr.wr) == ringEntries {
			l.ringSend()
			if l.ring == nil {
				l.write(cn)
				continue
			}
		}
		k := len(lr.wr)
		m := &lr.msgs[k]
		if !cn.out.ringMsg(m) { // nothing to write after all
			continue
		}
		if err := lr.r.PrepSendmsg(cn.fd, m, uint64(k)); err != nil { // unreachable: at most ringEntries prepared
			clear(cn.out.sys.vecs)
			l.write(cn)
			continue
		}
		lr.wr = append(lr.wr, cn)
	}
	l.pending = l.pending[:0]
	if l.ring != nil {
		l.ringSend()
	}
}

// ringSend submits the writes prepared by ringWrites and goes on with
// each as writeFD would.
func (l *loop) ringSend() {
	lr := l.ring
	if len(lr.wr) == 0 {
		return
	}
	err := lr.submit(len(lr.wr))
	for k, cn := range lr.wr {
		lr.wr[k], lr.msgs[k] = nil, unix.Msghdr{}
		o := &cn.out
		clear(o.sys.vecs) // drop the pointers into the batch
		res := lr.res[k]
		switch {
		case res == resNone: // only after a failed submit
			l.close(cn) // whether the write took bytes is unknown
		case res == -int32(unix.EAGAIN):
			l.waitWritable(cn)
		case res < 0:
			l.close(cn)
		default:
			o.advance(int(res))
			if o.ipos == len(o.iov) {
				o.done()
			} else {
				l.write(cn) // the rest, as writeFD
			}
		}
	}
	lr.wr = lr.wr[:0]
	if err != nil {
		l.ringFailed()
	}
}

// ringMsg prepares the batch's first write (writeFD's first writev) as
// m's iovecs, in the output's own iovec array; false (the batch done)
// when it has no bytes.
func (o *output) ringMsg(m *unix.Msghdr) bool {
	o.iovecs()
	o.ipos, o.writing = 0, true
	if len(o.iov) == 0 {
		o.done()
		return false
	}
	vecs := o.fillVecs(o.iov[:min(len(o.iov), maxIov)])
	*m = unix.Msghdr{Iov: &vecs[0]}
	m.SetIovlen(len(vecs))
	return true
}
