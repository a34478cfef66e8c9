package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Recv fills pkts with received packets without blocking. Each Packet.Buf
// is an owned reference into an RX item of the endpoint's pool.
func (e *Endpoint) Recv(pkts []datapath.Packet) (int, error) {
	if err := e.enter(); err != nil {
		return 0, err
	}
	defer e.exit()
	n := 0
	for n < len(pkts) && e.overN > 0 {
		pkts[n] = e.over[e.overH]
		e.over[e.overH] = datapath.Packet{}
		e.overH = (e.overH + 1) % len(e.over)
		e.overN--
		n++
	}
	if n == len(pkts) {
		return n, nil
	}
	var first error
	if e.zc != nil && e.zc.n > 0 {
		first = e.reap()
	}
	k := min(len(pkts)-n, e.batch)
	for i := 0; i < k; i++ {
		if e.rxBufs[i].IsZero() {
			b, err := e.pool.Alloc(rxBufSize)
			if err != nil {
				if i == 0 {
					return n, fmt.Errorf("udp: RX buffer: %w", err)
				}
				k = i
				break
			}
			e.rxBufs[i] = b
			e.rxIov[i] = iovec(b.Bytes())
		}
		setMsg(&e.rxMsgs[i].Hdr, &e.rxNames[i], unix.SizeofSockaddrInet6, e.rxIov[i:i+1], e.rxCtrl[i*rxCtrlSpace:(i+1)*rxCtrlSpace])
		e.rxMsgs[i].Len = 0
	}
	r, errno := recvmmsg(e.fd, e.rxMsgs[:k], 0)
	e.sys.RecvCalls++
	if errno != 0 {
		if errno == unix.EAGAIN || errno == unix.EINTR {
			e.sys.RecvEmpty++
			return n, first
		}
		e.stats.Errors++
		return n, fmt.Errorf("udp: recvmmsg: %w", errno)
	}
	e.sys.RecvMsgs += uint64(r)
	for i := 0; i < r; i++ {
		m := &e.rxMsgs[i]
		ln := int(m.Len)
		from, ok := getSockaddr(&e.rxNames[i])
		if m.Hdr.Flags&unix.MSG_TRUNC != 0 || !ok || ln > rxBufSize {
			e.stats.Drops++
			continue
		}
		seg := 0
		if e.gro && m.Hdr.Controllen > 0 {
			var err error
			cl := min(int(m.Hdr.Controllen), rxCtrlSpace)
			if seg, err = parseGRO(e.rxCtrl[i*rxCtrlSpace : i*rxCtrlSpace+cl]); err != nil {
				e.stats.Drops++
				continue
			}
		}
		buf := e.rxBufs[i]
		e.rxBufs[i] = mem.Buf{}
		if seg == 0 || ln <= seg {
			n = e.emit(pkts, n, buf.Slice(0, ln), from)
			continue
		}
		for off := 0; off < ln; off += seg {
			l := min(seg, ln-off)
			b := buf
			if off+l < ln {
				b = buf.Clone()
			}
			n = e.emit(pkts, n, b.Slice(off, l), from)
		}
	}
	return n, first
}

func (e *Endpoint) emit(pkts []datapath.Packet, n int, b mem.Buf, from netip.AddrPort) int {
	e.stats.RxPackets++
	e.stats.RxBytes += uint64(b.Len())
	if n < len(pkts) {
		// Field by field: a composite literal of this (non-SSA) struct is
		// built on the stack and reloaded in 16-byte pieces that stall on
		// store forwarding.
		p := &pkts[n]
		p.Buf, p.From = b, from
		return n + 1
	}
	// Only reachable with GRO (one message, many packets); the ring holds
	// batch*maxGSOSegments packets and Recv drains it before receiving.
	p := &e.over[(e.overH+e.overN)%len(e.over)]
	p.Buf, p.From = b, from
	e.overN++
	return n
}

// Wait blocks in ppoll(2) until the socket is readable (or has zero-copy
// notices), Wake is called, or timeout passes. Signals (EINTR) are retried
// with the time left. A negative timeout waits indefinitely. A Wake that
// arrives while no Wait runs makes the next Wait return at once.
func (e *Endpoint) Wait(timeout time.Duration) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	if e.overN > 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		var ts *unix.Timespec // nil: no timeout
		if timeout >= 0 {
			// ppoll has nanosecond resolution; poll(2) would round the
			// timeout up to whole milliseconds and oversleep a caller
			// that wakes up just before a deadline.
			left := time.Until(deadline)
			if left < 0 {
				left = 0
			}
			e.pollTS = unix.NsecToTimespec(int64(left))
			ts = &e.pollTS
		}
		e.pollfd[0].Events, e.pollfd[0].Revents = unix.POLLIN, 0
		e.pollfd[1].Events, e.pollfd[1].Revents = unix.POLLIN, 0
		_, errno := ppoll(e.pollfd[:], ts)
		switch errno {
		case 0:
			if e.pollfd[1].Revents != 0 {
				// Reset the counter (EAGAIN: a concurrent reader cannot
				// exist, but an empty counter is harmless).
				e.wake.Drain()
			}
			return nil
		case unix.EINTR:
			if timeout >= 0 && time.Now().After(deadline) {
				return nil
			}
		default:
			return fmt.Errorf("udp: poll: %w", errno)
		}
	}
}

// Wake makes a Wait in progress (or the next one) return. It is safe from
// any goroutine, including while the owner goroutine uses the endpoint
// (it does not take the ownership guard), and cheap enough to call for
// every hand-over to a sleeping endpoint (one eventfd write). After Close
// it returns ErrClosed.
func (e *Endpoint) Wake() error {
	err := e.wake.Wake()
	if err != nil && !errors.Is(err, datapath.ErrClosed) {
		return fmt.Errorf("udp: wake: %w", err)
	}
	return err
}
