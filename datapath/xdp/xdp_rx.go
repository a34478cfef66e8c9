package xdp

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
)

// refill tops up the fill ring with fresh RX frames from the pool.
func (e *Endpoint) refill() {
	free := e.fill.prodFree(e.fill.size)
	if free < refillBatch {
		return
	}
	n := uint32(0)
	for ; n < free; n++ {
		b, err := e.pool.Alloc(ChunkSize)
		if err != nil {
			break // exhausted: the kernel drops when the fill ring runs dry
		}
		off, ok := e.space.Offset(b.Bytes())
		if !ok || off%ChunkSize != 0 || !e.rxHeld[off/ChunkSize].IsZero() {
			_ = b.Release()
			e.st.Errors++
			break
		}
		e.rxHeld[off/ChunkSize] = b
		*e.fill.addr(e.fill.cachedProd) = off
		e.fill.cachedProd++
	}
	if n > 0 {
		e.fill.publish()
		e.ct.FillPosts += uint64(n)
		e.ct.FillBatches++
		if e.fill.needWakeup() {
			e.ct.RxWakeups++
			wakeRX(e.fd)
		}
	}
}

// Recv implements datapath.Endpoint. A packet that fits in one RX frame is
// delivered zero-copy: Packet.Buf is a window of that frame. A packet that
// spans several frames (multi-buffer RX, MTU above a page) is copied into
// one buffer from the pool and its frames are recycled.
func (e *Endpoint) Recv(pkts []datapath.Packet) (int, error) {
	if err := e.guard.Enter(); err != nil {
		return 0, err
	}
	defer e.guard.Exit()
	n := 0
	avail := e.rx.consAvail()
	for n < len(pkts) && avail > 0 {
		// Find the packet's descriptors.
		k := uint32(0)
		for k < avail && k < maxRxFrags && e.rx.desc(e.rx.cachedCons+k).Options&unix.XDP_PKT_CONTD != 0 {
			k++
		}
		if k == avail {
			break // incomplete packet: wait for the rest
		}
		k++
		ok := e.recvOne(&pkts[n], k)
		e.rx.cachedCons += k
		avail -= k
		if ok {
			n++
		}
	}
	e.rx.release()
	e.refill()
	if n == 0 {
		e.reap()
	}
	return n, nil
}

// rxFrame detaches the frame of RX descriptor d: its data and the
// reference held for it.
func (e *Endpoint) rxFrame(d *unix.XDPDesc) ([]byte, mem.Buf, int, bool) {
	base := d.Addr & (1<<48 - 1)
	off := d.Addr >> 48
	idx := base / ChunkSize
	if base%ChunkSize != 0 || idx >= uint64(len(e.rxHeld)) || e.rxHeld[idx].IsZero() || off+uint64(d.Len) > ChunkSize {
		return nil, mem.Buf{}, 0, false
	}
	b := e.rxHeld[idx]
	e.rxHeld[idx] = mem.Buf{}
	return b.Bytes()[off : off+uint64(d.Len)], b, int(off), true
}

func (e *Endpoint) recvOne(p *datapath.Packet, k uint32) bool {
	if k == 1 {
		data, b, off, ok := e.rxFrame(e.rx.desc(e.rx.cachedCons))
		if !ok {
			e.st.Errors++
			return false
		}
		fi, err := parseFrame(data, len(data))
		if err != nil || fi.Dst != e.local || (e.verify && !verifyUDPChecksum(data, fi, [][]byte{data[fi.PayloadOff : fi.PayloadOff+fi.PayloadLen]})) {
			_ = b.Release()
			e.st.Drops++
			return false
		}
		e.learn(fi)
		p.Buf, p.From = b.Slice(off+fi.PayloadOff, fi.PayloadLen), fi.Src // field by field (see udp's emit)
		e.st.RxPackets++
		e.st.RxBytes += uint64(fi.PayloadLen)
		return true
	}
	// Multi-buffer: gather the frames, parse, copy the payload out.
	var frames [maxRxFrags]mem.Buf
	e.rxParts = e.rxParts[:0]
	total := 0
	good := k <= maxRxFrags
	for i := uint32(0); i < k; i++ {
		data, b, _, ok := e.rxFrame(e.rx.desc(e.rx.cachedCons + i))
		if !ok {
			good = false
			continue
		}
		frames[i] = b
		e.rxParts = append(e.rxParts, data)
		total += len(data)
	}
	defer func() {
		for i := range k {
			_ = frames[i].Release()
		}
		clear(e.rxParts)
	}()
	if !good || len(e.rxParts) == 0 {
		e.st.Errors++
		return false
	}
	fi, err := parseFrame(e.rxParts[0], total)
	if err != nil || fi.Dst != e.local || fi.PayloadOff > len(e.rxParts[0]) {
		e.st.Drops++
		return false
	}
	out, err := e.pool.Alloc(fi.PayloadLen)
	if err != nil {
		e.st.Drops++
		return false
	}
	dst := out.Bytes()
	skip, w := fi.PayloadOff, 0
	for _, part := range e.rxParts {
		if skip >= len(part) {
			skip -= len(part)
			continue
		}
		w += copy(dst[w:], part[skip:])
		skip = 0
		if w == len(dst) {
			break
		}
	}
	if e.verify && !verifyUDPChecksum(e.rxParts[0], fi, [][]byte{dst}) {
		_ = out.Release()
		e.st.Drops++
		return false
	}
	e.learn(fi)
	p.Buf, p.From = out, fi.Src
	e.st.RxPackets++
	e.st.RxBytes += uint64(fi.PayloadLen)
	return true
}

func (e *Endpoint) learn(fi frameInfo) {
	if e.neigh != nil {
		e.neigh.learn(fi.Src.Addr(), fi.SrcMAC)
	}
}

// Wait implements datapath.Endpoint: poll(2) for the RX ring, or, with
// Config.BusyPoll, spin on the ring until timeout.
func (e *Endpoint) Wait(timeout time.Duration) error {
	if err := e.guard.Enter(); err != nil {
		return err
	}
	defer e.guard.Exit()
	if e.rx.consAvail() > 0 || timeout <= 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	if e.busyPoll {
		for e.rx.consAvail() == 0 && time.Now().Before(deadline) && !e.woken.Load() {
			e.reap()
		}
		e.woken.Store(false)
		return nil
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		e.pollfd[0] = unix.PollFd{Fd: int32(e.fd), Events: unix.POLLIN}
		e.pollfd[1] = unix.PollFd{Fd: int32(e.wake.Fd()), Events: unix.POLLIN}
		_, err := unix.Ppoll(e.pollfd[:], &ts, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("xdp: poll: %w", err)
		}
		if e.pollfd[1].Revents != 0 {
			e.wake.Drain()
		}
		e.woken.Store(false)
		return nil
	}
}

// Wake makes a Wait in progress (or the next one) return. It is safe from
// any goroutine, including while the owner goroutine uses the endpoint (it
// does not take the ownership guard): one eventfd write. After Close it
// returns datapath.ErrClosed.
func (e *Endpoint) Wake() error {
	e.woken.Store(true)
	err := e.wake.Wake()
	if err != nil && !errors.Is(err, datapath.ErrClosed) {
		return fmt.Errorf("xdp: wake: %w", err)
	}
	return err
}
