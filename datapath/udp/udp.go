// Package udp is the portable kernel-UDP datapath: non-blocking sockets
// driven with raw recvmmsg/sendmmsg over preallocated header and iovec
// arrays, scatter-gather iovecs that point straight at registered memory,
// UDP GSO/GRO when the kernel has them, and an optional MSG_ZEROCOPY mode
// whose references are released only when the kernel's completion notice
// arrives on the socket error queue.
//
// An Endpoint belongs to one goroutine; for the lowest latency run that
// goroutine with runtime.LockOSThread and busy-poll Recv, or call Wait to
// sleep in poll(2) when idle. Several endpoints can share one port with
// Config.ReusePort (one per core).
//
// Buffer lifetimes: received Packet.Bufs are windows of RX items from the
// endpoint's pool, owned by the caller; with GRO several packets share one
// item through separate references. Send copies its payload into TX
// memory: in the default mode one staging buffer per endpoint, reused
// after every Flush (sendmmsg has copied the bytes when it returns); with
// MSG_ZEROCOPY, or when a batch's copies outgrow the stage, a pool buffer
// per packet. SendSegments and SendObject clone every zero-copy entry; in the
// default mode the kernel copies during sendmmsg, so the clones are released
// as soon as Flush's sendmmsg returns; in MSG_ZEROCOPY mode they are held
// until the completion notice for that send is reaped (by Flush, Recv, Wait
// or Close).
package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/internal/wakefd"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Limits and defaults.
const (
	// HybridThresholdUDP is the hybrid threshold on kernel UDP: the kernel
	// copies every iovec, so a value's own iovec saves one warm user-space
	// copy and costs reference counting and iovec setup; `cornflakes
	// calibrate --datapath udp` (docs/PERFORMANCE.md §3) found copying
	// cheaper at every size it measured, up to 16 KB per field.
	HybridThresholdUDP = 16384
	// DefaultBatch is the number of packets per sendmmsg/recvmmsg.
	DefaultBatch = 32
	// MaxBatch bounds Config.Batch.
	MaxBatch = 1024
	// DefaultMaxSegments is the per-packet scatter-gather limit (head
	// included) unless Config.MaxSegments says otherwise.
	DefaultMaxSegments = 64
	// MaxSegmentsLimit is UIO_MAXIOV, the kernel's iovec limit per message.
	MaxSegmentsLimit = 1024
	// DefaultSocketBuffer is the SO_SNDBUF/SO_RCVBUF size requested.
	DefaultSocketBuffer = 4 << 20
	// DefaultZeroCopyPending is the number of MSG_ZEROCOPY sends that may
	// await their completion notice at once.
	DefaultZeroCopyPending = 128
	// MaxObjectEntries bounds the zero-copy entries of one object passed
	// to SendObject (more is an error).
	MaxObjectEntries = 1 << 14

	maxUDPPayload = 65507 // 65535 - IPv4 header - UDP header
	// maxStage bounds the TX staging buffer (Endpoint.stage): a batch of
	// full jumbo frames fits (32 × 8972 B); beyond it copies take pool
	// buffers.
	maxStage       = 1 << 20
	maxGSOSegments = 64    // UDP_MAX_SEGMENTS on older kernels
	rxBufSize      = 65536 // RX item size: any datagram or GRO super-packet fits
	rxCtrlSpace    = 64
	errCtrlSpace   = 128
	closeZCWait    = 2 * time.Second
	sendWaitMS     = 20 // poll(POLLOUT) per attempt when the socket buffer is full
	sendWaitTries  = 5
)

// Errors of this package (besides the datapath sentinels).
var (
	// ErrAddrFamily is returned when a destination cannot be reached from
	// the endpoint's socket family (an IPv6 peer from an IPv4 endpoint).
	ErrAddrFamily = errors.New("udp: destination address family does not match the endpoint")
	// ErrBadObject (the datapath package's sentinel) is returned when an
	// object's Serialize disagrees with its Sizes.
	ErrBadObject = datapath.ErrBadObject
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("udp: invalid config")
)

// Config configures Open. Only Addr is required.
type Config struct {
	// Addr is the local address to bind (port 0 picks a free port). Its
	// family selects IPv4 or IPv6.
	Addr netip.AddrPort
	// Pool provides RX and TX buffers. nil: the endpoint creates a
	// single-goroutine pool and closes it in Close. A shared pool must
	// outlive the endpoint.
	Pool *mem.Pool
	// Batch is the number of packets per sendmmsg/recvmmsg (DefaultBatch).
	Batch int
	// MaxSegments is the scatter-gather limit per packet, head included
	// (DefaultMaxSegments, at most MaxSegmentsLimit, at least 2).
	MaxSegments int
	// MaxPayload is the largest payload per packet (default and maximum
	// 65507). Packets larger than the path MTU are fragmented by IP.
	MaxPayload int
	// SocketBuffer is the requested SO_SNDBUF and SO_RCVBUF
	// (DefaultSocketBuffer; the *FORCE variants are tried first).
	SocketBuffer int
	// ReusePort sets SO_REUSEPORT so several endpoints share Addr.
	ReusePort bool
	// DisableGSO and DisableGRO turn off UDP segmentation offload on send
	// and generic receive offload, which are otherwise used when the
	// kernel supports them.
	DisableGSO, DisableGRO bool
	// ZeroCopyMin > 0 enables MSG_ZEROCOPY for packets that carry a
	// zero-copy entry of at least this many bytes; their references are
	// released when the kernel's completion notice is reaped.
	ZeroCopyMin int
	// ZeroCopyPending bounds outstanding MSG_ZEROCOPY sends
	// (DefaultZeroCopyPending); beyond it Flush waits for notices and then
	// falls back to copying sends.
	ZeroCopyPending int
}

// Features reports what the endpoint detected and uses.
type Features struct {
	GSO, GRO, ZeroCopy bool
	// GSOMaxSegment is the largest GSO segment size currently used (it
	// shrinks when the kernel refuses a size larger than the path MTU).
	GSOMaxSegment int
}

// ZeroCopyStats counts MSG_ZEROCOPY sends and their completion notices.
type ZeroCopyStats struct {
	Sends     uint64 // sendmsg calls made with MSG_ZEROCOPY
	Completed uint64 // sends whose notice was reaped
	Copied    uint64 // completed with SO_EE_CODE_ZEROCOPY_COPIED (kernel copied)
	NotCopied uint64 // completed without copying
	Fallbacks uint64 // packets sent copying because too many were pending or optmem ran out
	Forced    uint64 // references released at Close without a notice (timed out)
}

type txPkt struct {
	dst        netip.AddrPort
	nameLen    uint32
	iov0, iovN int
	ref0, refN int
	stage0     int // e.stageOff when the packet was reserved
	size       int
	zc         bool
	zcEntries  int
	zcBytes    int
	cpEntries  int
	cpBytes    int
}

// Endpoint is one UDP socket. See the package documentation.
type Endpoint struct {
	guard   datapath.Guard
	fd      int
	v6      bool
	local   netip.AddrPort
	pool    *mem.Pool
	ownPool bool
	batch   int
	maxSeg  int
	maxPay  int
	gso     bool
	gro     bool
	gsoMax  int
	zcMin   int

	// TX: queued packets, their iovecs and the references to release.
	tx       []txPkt
	txn      int
	names    []unix.RawSockaddrInet6
	iov      []unix.Iovec
	iovN     int
	refs     []mem.Buf
	refN     int
	msgs     []unix.Mmsghdr
	msgPkt0  []int
	msgPktN  []int
	msgBytes []int
	msgSeg   []int
	ctrl     []byte
	// Copied bytes of the queued packets (headers, small payloads) when
	// MSG_ZEROCOPY is off: one buffer reused after every flush, since
	// sendmmsg has copied them by the time it returns. Cheaper than a
	// pool buffer per packet (an allocation, a reference to track and a
	// release); copies that do not fit take pool buffers as before.
	stage    []byte
	stageOff int
	pollfd   [2]unix.PollFd // the socket and the wake-up eventfd (Wait polls both)
	pollTS   unix.Timespec  // Wait's timeout (a field so ppoll does not allocate)

	// Wake: an eventfd in Wait's poll set that another goroutine writes to
	// cut a Wait short.
	wake wakefd.FD

	// SendObject state.
	sink      *txPkt
	sinkLimit int
	collect   bool
	scratch   []mem.Buf
	sizes     []int
	sel       *datapath.Selector

	// RX.
	rxBufs  []mem.Buf
	rxIov   []unix.Iovec
	rxNames []unix.RawSockaddrInet6
	rxCtrl  []byte
	rxMsgs  []unix.Mmsghdr
	over    []datapath.Packet
	overH   int
	overN   int

	// MSG_ZEROCOPY.
	zc      *zcTracker
	errMsg  unix.Msghdr
	errName unix.RawSockaddrInet6
	errCtrl []byte
	errIov  [1]unix.Iovec
	errBuf  [64]byte

	stats datapath.Stats
	sys   SyscallStats
}

var _ datapath.Endpoint = (*Endpoint)(nil)

// SyscallStats counts the endpoint's batched system calls, to compare the
// batching of two loops (packets per call): Stats' TxPackets / SendCalls
// is the packets per sendmmsg.
type SyscallStats struct {
	SendCalls uint64 // sendmmsg calls
	SendMsgs  uint64 // messages they sent (a GSO message carries several packets)
	RecvCalls uint64 // recvmmsg calls
	RecvEmpty uint64 // recvmmsg calls that found nothing (EAGAIN)
	RecvMsgs  uint64 // messages received (a GRO message carries several packets)
}

// Open creates, configures and binds a socket and preallocates every array
// the hot paths use.
func Open(cfg Config) (*Endpoint, error) {
	if !cfg.Addr.IsValid() {
		return nil, fmt.Errorf("%w: Addr %v", ErrConfig, cfg.Addr)
	}
	e := &Endpoint{fd: -1, batch: cfg.Batch, maxSeg: cfg.MaxSegments, maxPay: cfg.MaxPayload, zcMin: cfg.ZeroCopyMin}
	if e.batch == 0 {
		e.batch = DefaultBatch
	}
	if e.maxSeg == 0 {
		e.maxSeg = DefaultMaxSegments
	}
	if e.maxPay == 0 {
		e.maxPay = maxUDPPayload
	}
	switch {
	case e.batch < 1 || e.batch > MaxBatch:
		return nil, fmt.Errorf("%w: Batch %d not in [1,%d]", ErrConfig, e.batch, MaxBatch)
	case e.maxSeg < 2 || e.maxSeg > MaxSegmentsLimit:
		return nil, fmt.Errorf("%w: MaxSegments %d not in [2,%d]", ErrConfig, e.maxSeg, MaxSegmentsLimit)
	case e.maxPay < 1 || e.maxPay > maxUDPPayload:
		return nil, fmt.Errorf("%w: MaxPayload %d not in [1,%d]", ErrConfig, e.maxPay, maxUDPPayload)
	case cfg.ZeroCopyMin < 0 || cfg.ZeroCopyPending < 0 || cfg.SocketBuffer < 0:
		return nil, fmt.Errorf("%w: negative size", ErrConfig)
	}
	if cfg.Pool == nil {
		p, err := mem.NewPool(mem.PoolConfig{Name: "udp " + cfg.Addr.String()})
		if err != nil {
			return nil, err
		}
		e.pool, e.ownPool = p, true
	} else {
		e.pool = cfg.Pool
	}
	err := e.openSocket(cfg)
	if err == nil {
		if err = e.wake.Open(); err != nil {
			err = fmt.Errorf("udp: %w", err)
		}
	}
	if err != nil {
		if e.fd >= 0 {
			unix.Close(e.fd)
		}
		if e.ownPool {
			e.pool.Close()
		}
		return nil, err
	}
	b, s := e.batch, e.maxSeg
	e.tx = make([]txPkt, b)
	e.names = make([]unix.RawSockaddrInet6, b)
	e.iov = make([]unix.Iovec, b*s)
	e.refs = make([]mem.Buf, b*s)
	e.msgs = make([]unix.Mmsghdr, b)
	e.msgPkt0 = make([]int, b)
	e.msgPktN = make([]int, b)
	e.msgBytes = make([]int, b)
	e.msgSeg = make([]int, b)
	e.ctrl = make([]byte, b*segCmsgSpace)
	if e.zcMin == 0 {
		e.stage = make([]byte, min(b*e.maxPay, maxStage))
	}
	e.rxBufs = make([]mem.Buf, b)
	e.rxIov = make([]unix.Iovec, b)
	e.rxNames = make([]unix.RawSockaddrInet6, b)
	e.rxCtrl = make([]byte, b*rxCtrlSpace)
	e.rxMsgs = make([]unix.Mmsghdr, b)
	e.over = make([]datapath.Packet, b*maxGSOSegments)
	// Grow the pool for the receive ring now rather than in the first
	// Recv: committing (and locking) a region took 8-14 ms on the
	// benchmark VM, a stall in the caller's event loop. Best effort: a
	// pool too small for the ring still works, and Recv reports the
	// shortage.
	_ = e.pool.Reserve(rxBufSize, b)
	e.pollfd[0] = unix.PollFd{Fd: int32(e.fd)}
	e.pollfd[1] = unix.PollFd{Fd: int32(e.wake.Fd())}
	if e.zcMin > 0 {
		n := cfg.ZeroCopyPending
		if n == 0 {
			n = DefaultZeroCopyPending
		}
		e.zc = newZCTracker(n, s)
		e.errCtrl = make([]byte, errCtrlSpace)
	}
	return e, nil
}

func (e *Endpoint) openSocket(cfg Config) error {
	fam := unix.AF_INET
	addr := cfg.Addr
	if addr.Addr().Is4() || addr.Addr().Is4In6() {
		addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	} else {
		fam = unix.AF_INET6
		e.v6 = true
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return fmt.Errorf("udp: socket: %w", err)
	}
	e.fd = fd
	if cfg.ReusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fmt.Errorf("udp: SO_REUSEPORT: %w", err)
		}
	}
	sb := cfg.SocketBuffer
	if sb == 0 {
		sb = DefaultSocketBuffer
	}
	for _, o := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], sb) != nil {
			// Not privileged: the plain option is capped by net.core.*mem_max.
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], sb); err != nil {
				return fmt.Errorf("udp: socket buffer: %w", err)
			}
		}
	}
	var sa unix.Sockaddr
	if e.v6 {
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	} else {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("udp: bind %v: %w", cfg.Addr, err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fmt.Errorf("udp: getsockname: %w", err)
	}
	switch g := got.(type) {
	case *unix.SockaddrInet4:
		e.local = netip.AddrPortFrom(netip.AddrFrom4(g.Addr), uint16(g.Port))
	case *unix.SockaddrInet6:
		e.local = netip.AddrPortFrom(netip.AddrFrom16(g.Addr), uint16(g.Port))
	}
	// Run-time feature detection: the options exist since Linux 4.18 (GSO)
	// and 5.0 (GRO); older kernels answer ENOPROTOOPT.
	if !cfg.DisableGSO {
		if _, err := unix.GetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT); err == nil {
			e.gso = true
			e.gsoMax = e.maxPay
		}
	}
	if !cfg.DisableGRO {
		if unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) == nil {
			e.gro = true
		}
	}
	if cfg.ZeroCopyMin > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1); err != nil {
			return fmt.Errorf("udp: SO_ZEROCOPY: %w", err)
		}
	}
	return nil
}

func (e *Endpoint) enter() error { return e.guard.Enter() }

func (e *Endpoint) exit() { e.guard.Exit() }

// LocalAddr is the bound address (with the port the kernel picked).
func (e *Endpoint) LocalAddr() netip.AddrPort { return e.local }

// MaxPayload is the largest payload of one packet.
func (e *Endpoint) MaxPayload() int { return e.maxPay }

// HybridThreshold is the field size from which Cornflakes' hybrid mode sends
// a value as its own iovec rather than copying it next to the header:
// HybridThresholdUDP (datapath.HybridThresholder).
func (e *Endpoint) HybridThreshold() int { return HybridThresholdUDP }

// TimelyParams returns datapath.BatchedTimely with the line rate of the
// interface the endpoint is bound to (datapath.TimelyTuner):
// datapath.UnlimitedLinkRate on loopback, the speed the kernel reports in
// /sys/class/net/<if>/speed otherwise, 0 (eRPC's default) when the address
// is a wildcard or the device reports none, as veth.
func (e *Endpoint) TimelyParams() datapath.TimelyParams {
	p := datapath.BatchedTimely
	p.LinkRate = linkRate(e.local.Addr())
	return p
}

// MaxSegments is the scatter-gather limit per packet, head included.
func (e *Endpoint) MaxSegments() int { return e.maxSeg }

// Features reports the offloads in use.
func (e *Endpoint) Features() Features {
	return Features{GSO: e.gso, GRO: e.gro, ZeroCopy: e.zc != nil, GSOMaxSegment: e.gsoMax}
}

// Pool is the pool RX and TX buffers come from.
func (e *Endpoint) Pool() *mem.Pool { return e.pool }

// Stats returns the endpoint's counters (zero Stats when another call is
// in progress on the endpoint).
func (e *Endpoint) Stats() datapath.Stats {
	if e.enter() != nil {
		return datapath.Stats{}
	}
	defer e.exit()
	return e.stats
}

// SyscallStats returns the system-call counters (zero when another call is
// in progress on the endpoint).
func (e *Endpoint) SyscallStats() SyscallStats {
	if e.enter() != nil {
		return SyscallStats{}
	}
	defer e.exit()
	return e.sys
}

// ZeroCopyStats returns the MSG_ZEROCOPY counters.
func (e *Endpoint) ZeroCopyStats() ZeroCopyStats {
	if e.zc == nil || e.enter() != nil {
		return ZeroCopyStats{}
	}
	defer e.exit()
	return e.zc.stats
}

// PendingZeroCopy is the number of MSG_ZEROCOPY sends whose references
// are held until their completion notice arrives.
func (e *Endpoint) PendingZeroCopy() int {
	if e.zc == nil {
		return 0
	}
	return e.zc.n
}

// reserve queues an empty packet to dst with room for nseg iovecs,
// flushing first when the batch is full.
func (e *Endpoint) reserve(dst netip.AddrPort, nseg, size int) (*txPkt, error) {
	if size > e.maxPay {
		return nil, datapath.ErrTooLarge
	}
	if nseg > e.maxSeg {
		return nil, datapath.ErrTooManySegments
	}
	if !dst.IsValid() {
		return nil, fmt.Errorf("udp: invalid destination %v", dst)
	}
	if e.txn == e.batch || e.iovN+nseg > len(e.iov) {
		if err := e.flush(); err != nil {
			return nil, err
		}
	}
	nl, ok := putSockaddr(&e.names[e.txn], e.v6, dst)
	if !ok {
		return nil, ErrAddrFamily
	}
	// Field by field, not as one composite literal: a literal is built on
	// the stack and copied with 16-byte loads that stall on the narrower
	// stores that just wrote dst there (store forwarding, ~10 ns a packet).
	p := &e.tx[e.txn]
	p.dst, p.nameLen, p.size = dst, nl, size
	p.iov0, p.iovN, p.ref0, p.refN, p.stage0 = e.iovN, 0, e.refN, 0, e.stageOff
	p.zc, p.zcEntries, p.zcBytes, p.cpEntries, p.cpBytes = false, 0, 0, 0, 0
	return p, nil
}

// push adds b (an owned reference) as the packet's next segment.
func (e *Endpoint) push(p *txPkt, b mem.Buf) {
	e.pushIov(p, b.Bytes())
	e.refs[e.refN] = b
	e.refN++
	p.refN++
}

// pushIov adds b as the packet's next segment without a reference to
// hold (bytes in the TX stage).
func (e *Endpoint) pushIov(p *txPkt, b []byte) {
	e.iov[e.iovN] = iovec(b)
	e.iovN++
	p.iovN++
}

// commit makes the reserved packet part of the batch.
func (e *Endpoint) commit(p *txPkt) {
	e.txn++
	e.stats.ZeroCopyEntries += uint64(p.zcEntries)
	e.stats.ZeroCopyBytes += uint64(p.zcBytes)
	e.stats.CopiedEntries += uint64(p.cpEntries)
	e.stats.CopiedBytes += uint64(p.cpBytes)
}

// abort drops the reserved packet, releasing what it took.
func (e *Endpoint) abort(p *txPkt) {
	for i := p.ref0; i < p.ref0+p.refN; i++ {
		e.refs[i].Release()
		e.refs[i] = mem.Buf{}
	}
	e.iovN, e.refN, e.stageOff = p.iov0, p.ref0, p.stage0
}

// copyHead takes n bytes of TX memory (from the stage, or else a pool
// buffer), copies src into its start and appends it to the packet. n may
// exceed len(src) (room for an object). The result is valid until the
// next flush.
func (e *Endpoint) copyHead(p *txPkt, src []byte, n int) ([]byte, error) {
	var b []byte
	if o := e.stageOff; n <= len(e.stage)-o {
		b = e.stage[o : o+n : o+n]
		e.stageOff += n
		e.pushIov(p, b)
	} else {
		tb, err := e.pool.Alloc(n)
		if err != nil {
			return nil, fmt.Errorf("udp: TX buffer: %w", err)
		}
		b = tb.Bytes()
		e.push(p, tb)
	}
	copy(b, src)
	p.cpEntries++
	p.cpBytes += n
	return b, nil
}

// Send queues a packet whose payload is a copy of b.
func (e *Endpoint) Send(dst netip.AddrPort, b []byte) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	p, err := e.reserve(dst, 1, len(b))
	if err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err := e.copyHead(p, b, len(b)); err != nil {
			e.abort(p)
			return err
		}
	}
	e.commit(p)
	return nil
}

// AppendPacket queues a packet of n payload bytes to dst and returns the
// payload for the caller to fill: Send without the caller's staging copy
// (the RPC encodes header and small data straight into it). The slice
// aliases a TX buffer the queue owns; it is valid only until the next
// call on e (the next Send, SendSegments, AppendPacket, Flush, Recv or
// Close may transmit or release it), so fill it at once. Its contents are
// not zeroed.
func (e *Endpoint) AppendPacket(dst netip.AddrPort, n int) ([]byte, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	b, err := e.appendPacket(dst, n)
	e.exit() // not deferred (the RPC's per-packet path): appendPacket does not panic
	return b, err
}

func (e *Endpoint) appendPacket(dst netip.AddrPort, n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("udp: AppendPacket of %d bytes", n)
	}
	p, err := e.reserve(dst, 1, n)
	if err != nil {
		return nil, err
	}
	b, err := e.copyHead(p, nil, n)
	if err != nil {
		e.abort(p)
		return nil, err
	}
	e.commit(p)
	return b, nil
}

// SendSegments queues head (copied) followed by segs (zero-copy; borrowed:
// the endpoint clones them and releases the clones when the send is
// complete).
func (e *Endpoint) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	if len(segs) > e.maxSeg-1 {
		return datapath.ErrTooManySegments
	}
	size := len(head)
	for _, s := range segs {
		if err := s.Check(); err != nil {
			return fmt.Errorf("udp: segment: %w", err)
		}
		size += s.Len()
	}
	p, err := e.reserve(dst, 1+len(segs), size)
	if err != nil {
		return err
	}
	if len(head) > 0 {
		if _, err := e.copyHead(p, head, len(head)); err != nil {
			e.abort(p)
			return err
		}
	}
	for _, s := range segs {
		e.addEntry(p, s.Clone())
	}
	e.commit(p)
	return nil
}

func (e *Endpoint) addEntry(p *txPkt, c mem.Buf) {
	e.push(p, c)
	p.zcEntries++
	p.zcBytes += c.Len()
	if e.zcMin > 0 && c.Len() >= e.zcMin {
		p.zc = true
	}
}

// objSink receives an object's zero-copy entries during SendObject.
type objSink Endpoint

func (s *objSink) ZeroCopyEntry(b mem.Buf) error {
	e := (*Endpoint)(s)
	if err := b.Check(); err != nil {
		return fmt.Errorf("udp: object entry: %w", err)
	}
	if e.collect {
		if len(e.scratch) >= MaxObjectEntries {
			return fmt.Errorf("%w: more than %d entries", ErrBadObject, MaxObjectEntries)
		}
		e.scratch = append(e.scratch, b.Clone())
		return nil
	}
	if e.iovN >= e.sinkLimit {
		return fmt.Errorf("%w: more entries than Sizes().Entries", ErrBadObject)
	}
	e.addEntry(e.sink, b.Clone())
	return nil
}

// SendObject queues head followed by obj, serialized in place: one TX
// buffer holds head, the object header and its copied fields; each
// zero-copy entry is one more iovec (cloned, released at completion). When
// the object has more entries than MaxSegments-1, the smallest are copied
// into TX buffers so that the packet fits.
func (e *Endpoint) SendObject(dst netip.AddrPort, head []byte, obj wire.Object) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	sz := obj.Sizes()
	if sz.Header < 0 || sz.Copied < 0 || sz.ZeroCopy < 0 || sz.Entries < 0 {
		return fmt.Errorf("%w: negative sizes %+v", ErrBadObject, sz)
	}
	size := len(head) + sz.Total()
	if size > e.maxPay || size < 0 {
		return datapath.ErrTooLarge
	}
	if sz.Entries > e.maxSeg-1 {
		return e.sendObjectCopying(dst, head, obj, sz, size)
	}
	p, err := e.reserve(dst, 1+sz.Entries, size)
	if err != nil {
		return err
	}
	hn := len(head) + sz.Head()
	var hb []byte
	if hn > 0 {
		if hb, err = e.copyHead(p, head, hn); err != nil {
			e.abort(p)
			return err
		}
	}
	e.sink, e.sinkLimit, e.collect = p, e.iovN+sz.Entries, false
	err = obj.Serialize(hb[len(head):hn], (*objSink)(e))
	e.sink = nil
	if err == nil && (p.zcEntries != sz.Entries || p.zcBytes != sz.ZeroCopy) {
		err = fmt.Errorf("%w: %d entries of %d bytes, Sizes says %d of %d", ErrBadObject, p.zcEntries, p.zcBytes, sz.Entries, sz.ZeroCopy)
	}
	if err != nil {
		e.abort(p)
		return err
	}
	e.commit(p)
	return nil
}

// sendObjectCopying is SendObject for objects with more entries than
// MaxSegments-1. It collects the entries, lets datapath.Selector keep the
// largest zero-copy within the budget and copies the others into the same
// TX buffer as the head: the leading run of copied entries extends the head
// segment, every later run is one more segment pointing into that buffer.
func (e *Endpoint) sendObjectCopying(dst netip.AddrPort, head []byte, obj wire.Object, sz wire.Sizes, size int) error {
	if sz.Entries > MaxObjectEntries {
		return fmt.Errorf("%w: %d entries (limit %d)", ErrBadObject, sz.Entries, MaxObjectEntries)
	}
	hn := len(head) + sz.Head()
	// Room for the head and, at worst, every entry copied.
	tbuf, err := e.pool.Alloc(size)
	if err != nil {
		return fmt.Errorf("udp: TX buffer: %w", err)
	}
	tb := tbuf.Bytes()
	copy(tb, head)
	e.scratch = e.scratch[:0]
	e.collect = true
	err = obj.Serialize(tb[len(head):hn], (*objSink)(e))
	e.collect = false
	ents := e.scratch
	defer func() {
		for i := range ents {
			ents[i].Release()
			ents[i] = mem.Buf{}
		}
		e.scratch = e.scratch[:0]
	}()
	e.sizes = e.sizes[:0]
	total := 0
	for _, b := range ents {
		e.sizes = append(e.sizes, b.Len())
		total += b.Len()
	}
	if err == nil && (len(ents) != sz.Entries || total != sz.ZeroCopy) {
		err = fmt.Errorf("%w: %d entries of %d bytes, Sizes says %d of %d", ErrBadObject, len(ents), total, sz.Entries, sz.ZeroCopy)
	}
	if err != nil {
		tbuf.Release()
		return err
	}
	if e.sel == nil || e.sel.MaxSegments() != e.maxSeg {
		e.sel = datapath.NewSelector(e.maxSeg)
	}
	keep := e.sel.Select(e.sizes)
	p, err := e.reserve(dst, datapath.CountSegments(len(ents), keep), size)
	if err != nil {
		tbuf.Release()
		return err
	}
	// Segment layout: tb[0:off] grows with copied bytes; each zero-copy
	// entry closes the current TX segment.
	segStart, off, k := 0, hn, 0
	p.cpEntries++
	p.cpBytes += hn
	for i := range ents {
		if k < len(keep) && keep[k] == i {
			k++
			if off > segStart {
				e.pushTX(p, tbuf, segStart, off)
			}
			segStart = off
			e.addEntry(p, ents[i])
			ents[i] = mem.Buf{}
			continue
		}
		off += copy(tb[off:], ents[i].Bytes())
		p.cpEntries++
		p.cpBytes += ents[i].Len()
	}
	if off > segStart {
		e.pushTX(p, tbuf, segStart, off)
	}
	tbuf.Release() // every segment holds its own clone
	e.commit(p)
	return nil
}

// pushTX appends tbuf[from:to] as a segment holding its own reference.
func (e *Endpoint) pushTX(p *txPkt, tbuf mem.Buf, from, to int) {
	e.push(p, tbuf.Clone().Slice(from, to-from))
}

// Flush sends every queued packet and reaps zero-copy completions. Packets
// that cannot be sent (socket buffer full for longer than ~100 ms, route
// errors) are dropped and counted; the first such error is returned.
func (e *Endpoint) Flush() error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	return e.flush()
}

func (e *Endpoint) flush() error {
	var first error
	if e.zc != nil && e.zc.n > 0 {
		first = e.reap()
	}
	if e.txn == 0 {
		return first
	}
	for i := 0; i < e.txn; {
		zc := e.tx[i].zc
		limit := len(e.msgs)
		if zc {
			if room := e.zcRoom(); room > 0 {
				limit = room
			} else {
				zc = false // no notice arrived in time: copying sends for this run
			}
		}
		m, j := 0, i
		for j < e.txn && e.tx[j].zc == e.tx[i].zc && m < limit {
			j = e.planMsg(m, j)
			m++
		}
		flags := 0
		if zc {
			flags = unix.MSG_ZEROCOPY
		} else if e.tx[i].zc {
			e.zc.stats.Fallbacks += uint64(j - i)
		}
		next := j
		tries := 0
	send:
		for s := 0; s < m; {
			n, errno := sendmmsg(e.fd, e.msgs[s:m], flags)
			e.sys.SendCalls++
			switch {
			case errno == 0:
				e.sys.SendMsgs += uint64(n)
				for k := s; k < s+n; k++ {
					e.stats.TxPackets += uint64(e.msgPktN[k])
					e.stats.TxBytes += uint64(e.msgBytes[k])
					if zc {
						e.trackZC(e.msgPkt0[k])
					}
				}
				s += n
				tries = 0
			case errno == unix.EINTR:
			case errno == unix.EMSGSIZE && zc:
				// More pages than one skb may pin (MAX_SKB_FRAGS): send
				// this one copying.
				k, errno := sendmmsg(e.fd, e.msgs[s:s+1], 0)
				if k == 1 {
					e.stats.TxPackets += uint64(e.msgPktN[s])
					e.stats.TxBytes += uint64(e.msgBytes[s])
					e.zc.stats.Fallbacks++
				} else {
					e.stats.Errors++
					e.stats.Drops += uint64(e.msgPktN[s])
					if first == nil {
						first = fmt.Errorf("udp: send to %v: %w", e.tx[e.msgPkt0[s]].dst, errno)
					}
				}
				s++
			case errno == unix.ENOBUFS && zc:
				// Out of optmem for zero-copy notices: copy the rest.
				flags, zc = 0, false
				e.zc.stats.Fallbacks += uint64(m - s)
			case errno == unix.EAGAIN || errno == unix.ENOBUFS:
				if tries++; tries > sendWaitTries {
					for k := s; k < m; k++ {
						e.stats.Drops += uint64(e.msgPktN[k])
					}
					if first == nil {
						first = fmt.Errorf("udp: send: %w (socket buffer full, %d packets dropped)", errno, m-s)
					}
					break send
				}
				e.pollfd[0].Events, e.pollfd[0].Revents = unix.POLLOUT, 0
				poll(e.pollfd[:1], sendWaitMS)
			case e.msgPktN[s] > 1 && (errno == unix.EINVAL || errno == unix.EMSGSIZE || errno == unix.EIO):
				// The kernel refused this GSO segment size (larger than
				// the path MTU) or GSO on this route: stop using it and
				// re-plan from this message.
				if errno == unix.EIO {
					e.gso = false
				} else {
					e.gsoMax = e.msgSeg[s] - 1
				}
				next = e.msgPkt0[s]
				break send
			default:
				e.stats.Errors++
				e.stats.Drops += uint64(e.msgPktN[s])
				if first == nil {
					first = fmt.Errorf("udp: send to %v: %w", e.tx[e.msgPkt0[s]].dst, errno)
				}
				s++
			}
		}
		i = next
	}
	for k := 0; k < e.refN; k++ {
		if !e.refs[k].IsZero() {
			if err := e.refs[k].Release(); err != nil && first == nil {
				first = err
			}
			e.refs[k] = mem.Buf{}
		}
	}
	e.txn, e.iovN, e.refN, e.stageOff = 0, 0, 0, 0
	return first
}

// planMsg builds message m from packet i, merging the following packets to
// the same peer into one GSO send when sizes allow; it returns the index of
// the first packet not included.
func (e *Endpoint) planMsg(m, i int) int {
	p := &e.tx[i]
	iovEnd := p.iov0 + p.iovN
	total := p.size
	j := i + 1
	if e.gso && !p.zc && p.size > 0 && p.size <= e.gsoMax {
		for j < e.txn && j-i < maxGSOSegments {
			q := &e.tx[j]
			if q.zc || q.dst != p.dst || e.tx[j-1].size != p.size || q.size > p.size || q.size == 0 ||
				total+q.size > e.maxPay || q.iov0+q.iovN-p.iov0 > MaxSegmentsLimit {
				break
			}
			total += q.size
			iovEnd = q.iov0 + q.iovN
			j++
		}
	}
	var ctrl []byte
	if j-i > 1 {
		ctrl = e.ctrl[m*segCmsgSpace : (m+1)*segCmsgSpace]
		putSegmentCmsg(ctrl, uint16(p.size))
	}
	setMsg(&e.msgs[m].Hdr, &e.names[i], p.nameLen, e.iov[p.iov0:iovEnd], ctrl)
	e.msgs[m].Len = 0
	e.msgPkt0[m], e.msgPktN[m], e.msgBytes[m], e.msgSeg[m] = i, j-i, total, p.size
	return j
}

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

// Close flushes, waits up to 2 s for outstanding zero-copy notices,
// releases every reference the endpoint holds, closes the socket and, when
// the endpoint created its pool, the pool.
func (e *Endpoint) Close() error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.guard.ExitClosed()
	errs := []error{e.flush()}
	if e.zc != nil {
		deadline := time.Now().Add(closeZCWait)
		for e.zc.n > 0 && time.Now().Before(deadline) {
			e.pollfd[0].Events, e.pollfd[0].Revents = 0, 0
			poll(e.pollfd[:1], 10)
			if err := e.reap(); err != nil {
				errs = append(errs, err)
				break
			}
		}
		errs = append(errs, e.zc.forceAll())
	}
	for i := range e.rxBufs {
		errs = append(errs, e.rxBufs[i].Release())
		e.rxBufs[i] = mem.Buf{}
	}
	for ; e.overN > 0; e.overN-- {
		errs = append(errs, e.over[e.overH].Buf.Release())
		e.over[e.overH] = datapath.Packet{}
		e.overH = (e.overH + 1) % len(e.over)
	}
	errs = append(errs, unix.Close(e.fd))
	errs = append(errs, e.wake.Close())
	if e.ownPool {
		errs = append(errs, e.pool.Close())
	}
	return errors.Join(errs...)
}
