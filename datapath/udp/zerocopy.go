package udp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/mem"
)

// zcTracker holds the references of MSG_ZEROCOPY sends until the kernel's
// completion notice for them is reaped. The kernel numbers a socket's
// zero-copy sends 0, 1, 2, ... (one id per successful sendmsg; failed sends
// take none) and reports completed inclusive ranges on the error queue.
type zcTracker struct {
	ring  []zcPending
	head  int
	n     int
	next  uint32
	stats ZeroCopyStats
}

type zcPending struct {
	id   uint32
	done bool
	refs []mem.Buf
}

func newZCTracker(n, maxSeg int) *zcTracker {
	z := &zcTracker{ring: make([]zcPending, n)}
	for i := range z.ring {
		z.ring[i].refs = make([]mem.Buf, 0, maxSeg)
	}
	return z
}

func (z *zcTracker) free() int { return len(z.ring) - z.n }

// add records the next send id with refs (ownership moves to the tracker).
func (z *zcTracker) add(refs []mem.Buf) {
	p := &z.ring[(z.head+z.n)%len(z.ring)]
	p.id, p.done = z.next, false
	p.refs = append(p.refs[:0], refs...)
	z.next++
	z.n++
	z.stats.Sends++
}

// complete marks the sends in nt's range done and releases the references
// of the completed prefix (notices can arrive out of order).
func (z *zcTracker) complete(nt zcNotice) error {
	span := nt.hi - nt.lo
	for i := 0; i < z.n; i++ {
		p := &z.ring[(z.head+i)%len(z.ring)]
		if p.id-nt.lo <= span && !p.done {
			p.done = true
			z.stats.Completed++
			if nt.copied {
				z.stats.Copied++
			} else {
				z.stats.NotCopied++
			}
		}
	}
	var errs []error
	for z.n > 0 && z.ring[z.head].done {
		p := &z.ring[z.head]
		for i := range p.refs {
			if err := p.refs[i].Release(); err != nil {
				errs = append(errs, err)
			}
			p.refs[i] = mem.Buf{}
		}
		p.refs = p.refs[:0]
		z.head = (z.head + 1) % len(z.ring)
		z.n--
	}
	return errors.Join(errs...)
}

// forceAll releases every pending reference (Close after its wait).
func (z *zcTracker) forceAll() error {
	var errs []error
	for ; z.n > 0; z.n-- {
		p := &z.ring[z.head]
		if !p.done {
			z.stats.Forced++
		}
		for i := range p.refs {
			if err := p.refs[i].Release(); err != nil {
				errs = append(errs, err)
			}
			p.refs[i] = mem.Buf{}
		}
		p.refs = p.refs[:0]
		z.head = (z.head + 1) % len(z.ring)
	}
	return errors.Join(errs...)
}

// zcRoom is how many zero-copy sends may be issued now; when none, it
// reaps and waits (up to ~100 ms) for notices first.
func (e *Endpoint) zcRoom() int {
	for tries := 0; e.zc.free() == 0 && tries < 10; tries++ {
		e.pollfd[0].Events, e.pollfd[0].Revents = 0, 0
		poll(e.pollfd[:1], 10)
		e.reap()
	}
	return min(e.zc.free(), len(e.msgs))
}

// trackZC moves packet i's references to the tracker after its
// MSG_ZEROCOPY send succeeded.
func (e *Endpoint) trackZC(i int) {
	p := &e.tx[i]
	refs := e.refs[p.ref0 : p.ref0+p.refN]
	e.zc.add(refs)
	for k := range refs {
		refs[k] = mem.Buf{}
	}
}

// reap reads every pending error-queue message and applies the zero-copy
// notices. It never blocks.
func (e *Endpoint) reap() error {
	var errs []error
	for range 1024 {
		e.errIov[0] = iovec(e.errBuf[:])
		setMsg(&e.errMsg, &e.errName, unix.SizeofSockaddrInet6, e.errIov[:], e.errCtrl)
		_, errno := recvmsg(e.fd, &e.errMsg, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return errors.Join(errs...)
		default:
			return errors.Join(append(errs, fmt.Errorf("udp: recvmsg(MSG_ERRQUEUE): %w", errno))...)
		}
		cl := min(int(e.errMsg.Controllen), len(e.errCtrl))
		nt, ok, err := parseErrQueue(e.errCtrl[:cl])
		if err != nil {
			e.stats.Errors++
			errs = append(errs, err)
			continue
		}
		if ok {
			if err := e.zc.complete(nt); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
