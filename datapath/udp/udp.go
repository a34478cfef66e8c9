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
// Options.ReusePort (one per core).
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

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/datapath/internal/wakefd"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Limits and defaults.
const (
	// HybridThresholdUDP is the hybrid threshold on kernel UDP: the kernel
	// copies every iovec, so a value's own iovec saves one warm user-space
	// copy and costs reference counting and iovec setup; the value comes
	// from `cornflakes calibrate --datapath udp` (docs/PERFORMANCE.md §3).
	HybridThresholdUDP = 16384
	// DefaultBatch is the number of packets per sendmmsg/recvmmsg.
	DefaultBatch = 32
	// MaxBatch bounds datapath.Config.Batch.
	MaxBatch = 1024
	// DefaultMaxSegments is the per-packet scatter-gather limit (head
	// included) unless datapath.Config.MaxSegments says otherwise.
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
	MaxObjectEntries = datapath.MaxObjectEntries

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
	// ErrConfig reports an invalid datapath.Config or Options.
	ErrConfig = errs.New("udp: invalid config", cornflakes.ErrConfig)
)

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
	guard   driver.Guard
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
	sel       *driver.Selector

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
// the hot paths use. It is what datapath.Open("udp", cfg) calls, except that
// Open requires cfg.Local (the registry binds DefaultLocal when it is unset).
//
// The common fields of cfg mean:
//   - Local: the address to bind (port 0 picks a free port); its family
//     selects IPv4 or IPv6.
//   - Pool: RX and TX buffers. nil: the endpoint creates a single-goroutine
//     pool and closes it in Close. A shared pool must outlive the endpoint.
//   - Batch: packets per sendmmsg/recvmmsg (DefaultBatch, at most MaxBatch).
//   - MaxSegments: the scatter-gather limit per packet, head included
//     (DefaultMaxSegments, at least 2, at most MaxSegmentsLimit).
//   - MaxPayload: the largest payload per packet (default and maximum
//     65507); packets larger than the path MTU are fragmented by IP.
//   - BusyPoll: ignored (Wait always sleeps in poll).
//
// cfg.Options may hold Options or *Options for the udp-specific settings;
// any other type is an ErrConfig. Errors wrap ErrConfig for an invalid
// configuration, or the system call's error.
func Open(cfg datapath.Config) (*Endpoint, error) {
	o, err := optionsOf(cfg.Options)
	if err != nil {
		return nil, err
	}
	if !cfg.Local.IsValid() {
		return nil, fmt.Errorf("%w: Local %v", ErrConfig, cfg.Local)
	}
	e := &Endpoint{fd: -1, batch: cfg.Batch, maxSeg: cfg.MaxSegments, maxPay: cfg.MaxPayload, zcMin: o.ZeroCopyMin}
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
	case o.ZeroCopyMin < 0 || o.ZeroCopyPending < 0 || o.SocketBuffer < 0:
		return nil, fmt.Errorf("%w: negative size", ErrConfig)
	}
	if cfg.Pool == nil {
		p, err := mem.NewPool(mem.PoolConfig{Name: "udp " + cfg.Local.String()})
		if err != nil {
			return nil, err
		}
		e.pool, e.ownPool = p, true
	} else {
		e.pool = cfg.Pool
	}
	err = e.openSocket(cfg.Local, o)
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
	// Recv: committing (and locking) a region takes milliseconds, a stall
	// in the caller's event loop (docs/RPC-NOTES.md). Best effort: a
	// pool too small for the ring still works, and Recv reports the
	// shortage.
	_ = e.pool.Reserve(rxBufSize, b)
	e.pollfd[0] = unix.PollFd{Fd: int32(e.fd)}
	e.pollfd[1] = unix.PollFd{Fd: int32(e.wake.Fd())}
	if e.zcMin > 0 {
		n := o.ZeroCopyPending
		if n == 0 {
			n = DefaultZeroCopyPending
		}
		e.zc = newZCTracker(n, s)
		e.errCtrl = make([]byte, errCtrlSpace)
	}
	return e, nil
}

func (e *Endpoint) openSocket(addr netip.AddrPort, cfg Options) error {
	fam := unix.AF_INET
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
		return fmt.Errorf("udp: bind %v: %w", addr, err)
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
