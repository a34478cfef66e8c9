package xdp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
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
	// HybridThresholdCopyMode is the hybrid threshold of a socket bound in
	// copy mode, where the kernel copies every descriptor (`cornflakes
	// calibrate --datapath xdp`, veth: 2048 bytes).
	HybridThresholdCopyMode = 2048
	// HybridThresholdZeroCopy is the threshold with XDP_ZEROCOPY, where the
	// NIC reads the UMEM: the paper's 512 bytes (not measured here: veth
	// cannot bind zero-copy).
	HybridThresholdZeroCopy = 512
	// ChunkSize is the UMEM chunk size: the capacity of one RX frame and
	// the largest length of one TX descriptor (larger buffers are split).
	ChunkSize = 4096
	// rxHeadroom is what the kernel reserves in front of received data
	// in every RX frame (XDP_PACKET_HEADROOM).
	rxHeadroom = 256
	// DefaultRingSize is the number of entries of each of the four rings.
	DefaultRingSize = 1024
	// MaxRingSize bounds Options.RingSize.
	MaxRingSize = 16384
	// DefaultUMEMSize is the size of the UMEM (registered memory space)
	// an endpoint creates when Options.Space is nil.
	DefaultUMEMSize = 64 << 20
	// DefaultMaxSegments is the scatter-gather limit per packet, head included.
	DefaultMaxSegments = 8
	// MaxDescs is the most TX descriptors one packet may use: the kernel's
	// copy-mode path puts the first in the skb's linear part and the rest
	// in at most MAX_SKB_FRAGS (17) page fragments; 16 keeps a margin.
	MaxDescs = 16
	// MaxFrame is the largest frame (headers included) sent or received.
	MaxFrame = 4 * ChunkSize
	// MaxObjectEntries bounds the zero-copy entries of one object.
	MaxObjectEntries = datapath.MaxObjectEntries
	// maxRxFrags bounds the RX descriptors of one received packet.
	maxRxFrags = MaxFrame/(ChunkSize-rxHeadroom) + 2
	// bindRetry bounds the retries of a bind that fails with EBUSY (the
	// kernel releases a previous socket's queue asynchronously).
	bindRetry = 3 * time.Second
	// closeWait bounds how long Close waits for outstanding completions.
	closeWait = 2 * time.Second
	// flushKicks bounds the sendto kicks of one Flush.
	flushKicks = 4096
	// refillBatch is the fewest free fill-ring slots refill tops up at
	// once (one atomic publication per batch instead of per frame).
	refillBatch = 32
)

// Errors of this package (besides the datapath sentinels and ErrAttach,
// ErrMalformed, ErrNoNeighbour).
var (
	// ErrConfig reports an invalid configuration.
	ErrConfig = errs.New("xdp: invalid config", cornflakes.ErrConfig)
	// ErrUnavailable reports that AF_XDP cannot be used here (not root,
	// kernel without AF_XDP, no such interface).
	ErrUnavailable = errors.New("xdp: AF_XDP unavailable")
	// ErrAddrFamily is returned for a non-IPv4 destination.
	ErrAddrFamily = errors.New("xdp: only IPv4 destinations are supported")
	// ErrBusy is returned by Open when the interface queue stays taken by
	// another AF_XDP socket (beyond the short EBUSY window after a socket on
	// it closed): one endpoint per interface queue.
	ErrBusy = errors.New("xdp: interface queue busy (another AF_XDP socket is bound to it)")
	// ErrRingFull is returned when the TX ring stays full although the
	// kernel was kicked repeatedly.
	ErrRingFull = errors.New("xdp: TX ring full")
	// ErrNoZeroCopy is returned by Open with Options.Bind = BindZeroCopy
	// when the driver has no AF_XDP zero-copy support (veth, most virtual
	// NICs): the bind with XDP_ZEROCOPY failed with EOPNOTSUPP.
	ErrNoZeroCopy = errors.New("xdp: zero-copy bind (XDP_ZEROCOPY) not supported by the driver")
)

// BindMode selects the AF_XDP bind: zero-copy (the NIC DMAs straight from
// and into the UMEM) or copy mode (the kernel copies every packet between
// the UMEM and an skb).
type BindMode uint8

const (
	// BindAuto tries XDP_ZEROCOPY and falls back to copy mode when the
	// driver does not support it (the default).
	BindAuto BindMode = iota
	// BindCopy binds in copy mode (XDP_COPY) without trying zero-copy.
	BindCopy
	// BindZeroCopy requires zero-copy: Open fails with ErrNoZeroCopy
	// instead of falling back to copy mode.
	BindZeroCopy
)

// String returns "auto", "copy" or "zerocopy".
func (m BindMode) String() string {
	switch m {
	case BindAuto:
		return "auto"
	case BindCopy:
		return "copy"
	case BindZeroCopy:
		return "zerocopy"
	}
	return fmt.Sprintf("BindMode(%d)", uint8(m))
}

// Options are the xdp-specific settings (datapath.Config.Options when
// opening through the registry, as Options or *Options).
type Options struct {
	// Interface is the network interface (required unless Config.Local's
	// address identifies it).
	Interface string
	// Queue is the interface RX/TX queue the socket binds (default 0).
	Queue int
	// PeerMAC, when set, is the destination MAC address of every packet
	// (a single peer, or a gateway). Otherwise the kernel's neighbour
	// table is consulted, and sources of received packets are learned.
	PeerMAC net.HardwareAddr
	// Space is the registered memory to use as UMEM. It must be a
	// committed space (mem.SpaceConfig.Commit) and outlive the endpoint;
	// several endpoints may share it. Nil: the endpoint creates one of
	// UMEMSize bytes and closes it in Close.
	Space *mem.Space
	// UMEMSize is the size of the space the endpoint creates (DefaultUMEMSize).
	UMEMSize int64
	// RingSize is the entries per ring, a power of two (DefaultRingSize).
	RingSize int
	// Attach selects native or generic XDP (AttachAuto: native, then generic).
	Attach AttachMode
	// Bind selects zero-copy or copy mode (BindAuto: zero-copy when the
	// driver supports it, else copy). Endpoint.Mode reports the result.
	Bind BindMode
	// UDPChecksum computes UDP checksums on send (default: 0, "no
	// checksum", which IPv4 allows; the IPv4 header checksum is always
	// computed).
	UDPChecksum bool
	// SendBuffer, when > 0, sets the socket send buffer in bytes
	// (SO_SNDBUFFORCE, else SO_SNDBUF, capped at net.core.wmem_max). In
	// copy mode every skb the kernel builds from TX descriptors is charged
	// to it until it is freed, and a full buffer stops a kick with EAGAIN
	// (Counters().KickRetries). 0 keeps the kernel default: on veth the
	// skbs are freed within the kick, and 8 KB multi-buffer bursts saw no
	// EAGAIN with the default 208 KiB.
	SendBuffer int
	// VerifyUDPChecksum drops received datagrams whose non-zero UDP
	// checksum is wrong. Off by default: datagrams that a kernel in
	// another namespace sends over veth carry only the partial
	// (pseudo-header) checksum of CHECKSUM_PARTIAL offload and would be
	// dropped; use it when every sender computes full checksums (xdp
	// endpoints with UDPChecksum, or a physical link).
	VerifyUDPChecksum bool
}

// Info describes how an endpoint is set up.
type Info struct {
	// Interface, Ifindex and Queue are where the socket is bound.
	Interface string
	Ifindex   int
	Queue     int
	// ZeroCopy reports an XDP_ZEROCOPY bind (false: copy mode, as on veth).
	ZeroCopy bool
	// Attach is the XDP attach mode in use (native or generic).
	Attach AttachMode
	// BusyPoll reports whether SO_PREFER_BUSY_POLL/SO_BUSY_POLL were set.
	BusyPoll bool
	// MTU and MAC are the interface's.
	MTU int
	MAC net.HardwareAddr
	// UMEMBase and UMEMSize describe the registered memory.
	UMEMBase uintptr
	UMEMSize int
	// Hugetlb reports explicit 2 MiB hugepages behind the UMEM.
	Hugetlb bool
	// TxBudget is the descriptors one copy-mode TX kick processes
	// (XDP_MAX_TX_SKB_BUDGET when the kernel has it, else 32).
	TxBudget int
	// SendBuffer is the socket's SO_SNDBUF as the kernel reports it
	// (twice the value set, for its bookkeeping overhead).
	SendBuffer int
	// ForeignPool reports that Config.Pool was not on a committed space
	// (so not usable as UMEM) and the endpoint uses its own pool instead.
	ForeignPool bool
}

// txRec is one TX descriptor in flight, with the reference it holds.
type txRec struct {
	addr uint64
	buf  mem.Buf
	done bool
}

// txDesc is a descriptor being assembled.
type txDesc struct {
	addr uint64
	n    uint32
	buf  mem.Buf // owned reference (for the tx head buffer: a clone)
}

// Endpoint is one AF_XDP socket on one interface queue. See the package
// documentation.
type Endpoint struct {
	guard   driver.Guard
	fd      int
	resFD   int // kernel UDP socket reserving the port
	local   netip.AddrPort
	mac     [6]byte
	peerMAC [6]byte
	hasPeer bool
	neigh   *neighTable
	prog    *program
	info    Info

	space    *mem.Space
	ownSpace bool
	pool     *mem.Pool
	ownPool  bool

	fill, comp, rx, tx *ring
	rxHeld             []mem.Buf // per UMEM chunk: references held for frames in the fill/RX rings

	batch, maxSeg, maxPay int
	csum, verify          bool
	pageSplit             bool // zero-copy bind without hugetlb: descriptors must not cross 4 KiB pages
	busyPoll              bool
	ipID                  uint16

	// TX state.
	inflight   []txRec // FIFO ring of descriptors awaiting completion
	ifHead     int
	ifLen      int
	queued     int // packets written to the TX ring since the last Flush
	descs      []txDesc
	coll       driver.EntryCollector
	sel        *driver.Selector
	zc         []bool
	lens       []int
	parts      [][]byte
	segScratch []mem.Buf

	// RX state.
	rxParts [][]byte
	pollfd  [2]unix.PollFd // the XSK socket and the wake-up eventfd (Wait polls both)

	// Wake: an eventfd in Wait's poll set that another goroutine writes to
	// cut a Wait short, and a flag for a busy-polling Wait.
	wake  wakefd.FD
	woken atomic.Bool

	st datapath.Stats
	ct Counters
	// txOwned is set while the TX buffer being assembled still holds the
	// reference Alloc returned: the first descriptor on it takes that
	// reference instead of a clone.
	txOwned bool
}

// Counters are the endpoint's ring and syscall counters (see
// Endpoint.Counters): they show what a send or receive costs beyond the
// per-packet datapath.Stats.
type Counters struct {
	// TxDescs is the TX descriptors submitted; TxDescs/Stats().TxPackets is
	// the descriptors per packet (each costs an skb fragment in copy mode).
	TxDescs uint64
	// Kicks is the sendto wakeups issued (only when the kernel set
	// XDP_RING_NEED_WAKEUP on the TX ring; in copy mode it always does).
	Kicks uint64
	// KickRetries is the kicks that returned EAGAIN, EBUSY or ENOBUFS (the
	// kernel stopped before draining the ring: TX budget, socket send
	// buffer, or the device queue).
	KickRetries uint64
	// Completions is the completion-ring entries reaped.
	Completions uint64
	// CompletionSkips is the pending in-flight records passed over while
	// matching completions to descriptors (0 when the kernel completes in
	// submission order, as it does on the paths tested here).
	CompletionSkips uint64
	// FillPosts is the RX frames posted to the fill ring, in FillBatches
	// publications (refill waits until refillBatch slots are free).
	FillPosts, FillBatches uint64
	// RxWakeups is the recvfrom wakeups issued for the fill ring (only when
	// the kernel asks for one).
	RxWakeups uint64
	// Linearized counts packets copied into one TX buffer because they
	// needed more than MaxDescs descriptors.
	Linearized uint64
	// Forced counts references released at Close without a completion
	// (the socket was closed with descriptors still in flight).
	Forced uint64
}

var _ datapath.Endpoint = (*Endpoint)(nil)

// Available reports nil when AF_XDP endpoints can be opened by this
// process (root or CAP_NET_ADMIN+CAP_BPF, a kernel with AF_XDP), and
// otherwise an error wrapping ErrUnavailable that says why.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not running as root (AF_XDP and XDP programs need CAP_NET_ADMIN and CAP_BPF)", ErrUnavailable)
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: socket(AF_XDP): %v (kernel without CONFIG_XDP_SOCKETS?)", ErrUnavailable, err)
	}
	unix.Close(fd)
	return nil
}

// Open creates an endpoint. It must run in the network namespace of the
// interface (for example inside netns.Do); the sockets it creates stay in
// that namespace, and the endpoint may then be used from any goroutine.
// datapath.Open("xdp", cfg) calls it, or Topology.Open when cfg names no
// interface and a loopback or unspecified address.
//
// The common fields of cfg mean:
//   - Local: the IPv4 address and UDP port of the endpoint. An unspecified
//     address takes the interface's first IPv4 address; port 0 picks a
//     free port (reserved with a kernel UDP socket for the endpoint's
//     lifetime, which also keeps other programs off the port).
//   - Pool: TX and RX buffers; it must be carved from the UMEM space
//     (Options.Space) and have classes from ChunkSize to MaxFrame. Nil: the
//     endpoint creates one on the UMEM and closes it in Close.
//   - Batch: the packets Send queues before it flushes by itself
//     (datapath.DefaultBatch, at most RingSize/MaxDescs).
//   - MaxPayload: caps the UDP payload (default and maximum: the interface
//     MTU minus 28, at most MaxFrame minus headers).
//   - MaxSegments: caps the scatter-gather segments per packet, head
//     included (DefaultMaxSegments; lowered so that chunk splits always
//     fit in MaxDescs descriptors).
//   - BusyPoll: sets the socket's busy-polling options and makes Wait spin
//     on the RX ring instead of sleeping in poll(2).
//
// cfg.Options may hold Options or *Options; any other type is an ErrConfig.
func Open(cfg datapath.Config) (*Endpoint, error) {
	c, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	return open(c)
}

func open(cfg config) (_ *Endpoint, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	e := &Endpoint{fd: -1, resFD: -1}
	defer func() {
		if err != nil {
			e.teardown()
		}
	}()
	if err := e.wake.Open(); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	if err := e.configure(&cfg); err != nil {
		return nil, err
	}
	if err := e.openSocket(&cfg); err != nil {
		return nil, err
	}
	attach := cfg.Attach
	if attach == AttachAuto {
		if di, err := unix.IoctlGetEthtoolDrvinfo(e.resFD, e.info.Interface); err == nil && unix.ByteSliceToString(di.Driver[:]) == "veth" {
			attach = AttachGeneric
		}
	}
	if e.prog, err = loadProgram(e.info.Ifindex, e.info.Queue, e.fd, e.local, attach); err != nil {
		return nil, err
	}
	e.info.Attach = e.prog.mode
	// In zero-copy mode the NIC DMAs from the UMEM pages directly, and the
	// kernel rejects (without completing them) descriptors that cross a
	// boundary between pages that are not DMA-contiguous; hugetlb pages are.
	e.pageSplit = e.info.ZeroCopy && !e.info.Hugetlb
	e.refill()
	return e, nil
}

// configure resolves the interface, addresses, limits and memory.
func (e *Endpoint) configure(cfg *config) error {
	if cfg.Local.IsValid() && !cfg.Local.Addr().Unmap().Is4() {
		return fmt.Errorf("%w: local address %v is not IPv4", ErrConfig, cfg.Local)
	}
	ifi, addr, err := findInterface(cfg.Interface, cfg.Local.Addr().Unmap())
	if err != nil {
		return err
	}
	if len(ifi.HardwareAddr) != 6 {
		return fmt.Errorf("%w: interface %s has no Ethernet address", ErrConfig, ifi.Name)
	}
	copy(e.mac[:], ifi.HardwareAddr)
	if cfg.PeerMAC != nil {
		if len(cfg.PeerMAC) != 6 {
			return fmt.Errorf("%w: PeerMAC %v is not an Ethernet address", ErrConfig, cfg.PeerMAC)
		}
		copy(e.peerMAC[:], cfg.PeerMAC)
		e.hasPeer = true
	}
	if cfg.Bind > BindZeroCopy {
		return fmt.Errorf("%w: Options.Bind %v", ErrConfig, cfg.Bind)
	}
	if cfg.Queue < 0 || cfg.Queue > 1<<16 {
		return fmt.Errorf("%w: queue %d", ErrConfig, cfg.Queue)
	}
	e.info = Info{Interface: ifi.Name, Ifindex: ifi.Index, Queue: cfg.Queue, MTU: ifi.MTU, MAC: ifi.HardwareAddr}

	// Limits.
	e.maxPay = min(ifi.MTU, MaxFrame-ethLen) - ipLen - udpLen
	if cfg.MaxPayload > 0 {
		e.maxPay = min(e.maxPay, cfg.MaxPayload)
	}
	if e.maxPay < 64 {
		return fmt.Errorf("%w: interface MTU %d leaves a payload of %d bytes", ErrConfig, ifi.MTU, e.maxPay)
	}
	extra := (e.maxPay + HeaderLen + ChunkSize - 1) / ChunkSize // descriptors added by splitting
	e.maxSeg = DefaultMaxSegments
	if cfg.MaxSegments > 0 {
		e.maxSeg = cfg.MaxSegments
	}
	e.maxSeg = max(min(e.maxSeg, MaxDescs-extra), 1)
	e.batch = datapath.DefaultBatch
	if cfg.Batch > 0 {
		e.batch = cfg.Batch
	}
	e.csum, e.verify = cfg.UDPChecksum, cfg.VerifyUDPChecksum
	rs := cfg.RingSize
	if rs == 0 {
		rs = DefaultRingSize
	}
	if rs < 64 || rs > MaxRingSize || rs&(rs-1) != 0 {
		return fmt.Errorf("%w: RingSize %d is not a power of two in [64, %d]", ErrConfig, rs, MaxRingSize)
	}
	e.batch = min(e.batch, rs/MaxDescs)

	// Port reservation (and ephemeral port choice) with a kernel socket.
	local := netip.AddrPortFrom(addr, cfg.Local.Port())
	if e.resFD, local, err = reservePort(local); err != nil {
		return err
	}
	e.local = local

	// Memory.
	e.space = cfg.Space
	if cfg.Pool != nil && !cfg.Pool.Space().Config().Commit {
		// A pool on an uncommitted space (the process default) cannot be
		// registered as UMEM: the endpoint uses its own pool instead.
		cfg.Pool = nil
		e.info.ForeignPool = true
	}
	if cfg.Pool != nil {
		if cfg.Space != nil && cfg.Pool.Space() != cfg.Space {
			return fmt.Errorf("%w: Pool is not carved from Options.Space", ErrConfig)
		}
		e.space = cfg.Pool.Space()
		if cfg.Pool.MaxSize() < MaxFrame {
			return fmt.Errorf("%w: Pool's largest class %d < MaxFrame %d", ErrConfig, cfg.Pool.MaxSize(), MaxFrame)
		}
	}
	if e.space == nil {
		size := cfg.UMEMSize
		if size == 0 {
			size = DefaultUMEMSize
		}
		e.space, err = mem.NewSpace(mem.SpaceConfig{Size: size, Commit: true, Hugepages: mem.HugepagesAuto, Mlock: true})
		if err != nil {
			return fmt.Errorf("xdp: creating the UMEM space: %w", err)
		}
		e.ownSpace = true
	}
	if !e.space.Config().Commit {
		return fmt.Errorf("%w: the UMEM space must be committed (mem.SpaceConfig.Commit)", ErrConfig)
	}
	e.pool = cfg.Pool
	if e.pool == nil {
		e.pool, err = mem.NewPool(mem.PoolConfig{Name: "xdp " + ifi.Name, Space: e.space, MaxClass: MaxFrame, MaxBytes: int64(e.space.Len())})
		if err != nil {
			return err
		}
		e.ownPool = true
	}
	ss := e.space.Stats()
	e.info.UMEMBase, e.info.UMEMSize, e.info.Hugetlb = e.space.Base(), e.space.Len(), ss.HugetlbBytes > 0
	e.rxHeld = make([]mem.Buf, e.space.Len()/ChunkSize)
	e.inflight = make([]txRec, 2*rs) // a power of two: indices are masked
	e.descs = make([]txDesc, 0, MaxDescs+1)
	e.sel = driver.NewSelector(e.maxSeg)
	e.parts = make([][]byte, 0, MaxDescs)
	e.rxParts = make([][]byte, 0, maxRxFrags)
	e.busyPoll = cfg.BusyPoll
	e.info.Queue = cfg.Queue
	if !e.hasPeer {
		if e.neigh, err = openNeighTable(ifi.Index); err != nil {
			return err
		}
	}
	return nil
}

// findInterface returns the interface named name, or the one holding addr,
// and the IPv4 address to use.
func findInterface(name string, addr netip.Addr) (*net.Interface, netip.Addr, error) {
	if name == "" {
		if !addr.IsValid() || addr.IsUnspecified() {
			return nil, addr, fmt.Errorf("%w: neither Options.Interface nor a local IPv4 address given", ErrConfig)
		}
		if ifi, ok := datapath.InterfaceOf(addr); ok && addr.Is4() {
			return ifi, addr, nil
		}
		return nil, addr, fmt.Errorf("%w: no interface has address %v", ErrConfig, addr)
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, addr, fmt.Errorf("%w: interface %q: %v", ErrUnavailable, name, err)
	}
	for _, ip := range datapath.InterfaceAddrs(ifi) {
		if ip.Is4() && (!addr.IsValid() || addr.IsUnspecified() || ip == addr) {
			return ifi, ip, nil
		}
	}
	return nil, addr, fmt.Errorf("%w: interface %s has no IPv4 address %v", ErrConfig, ifi.Name, addr)
}

// reservePort binds a kernel UDP socket to local (port 0: a free port) and
// returns it with the bound address.
func reservePort(local netip.AddrPort) (int, netip.AddrPort, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, local, fmt.Errorf("xdp: reserving the UDP port: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: local.Addr().As4(), Port: int(local.Port())}); err != nil {
		unix.Close(fd)
		return -1, local, fmt.Errorf("xdp: reserving UDP port %v: %w", local, err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, local, fmt.Errorf("xdp: getsockname: %w", err)
	}
	return fd, netip.AddrPortFrom(local.Addr(), uint16(sa.(*unix.SockaddrInet4).Port)), nil
}

// openSocket creates the AF_XDP socket, registers the UMEM, maps the rings
// and binds as Options.Bind asks (BindAuto: zero-copy first, then copy).
func (e *Endpoint) openSocket(cfg *config) error {
	var err error
	e.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: socket(AF_XDP): %v", ErrUnavailable, err)
	}
	if err := registerUMEM(e.fd, e.space.Base(), e.space.Len(), ChunkSize); err != nil {
		return fmt.Errorf("xdp: XDP_UMEM_REG of %d bytes: %w", e.space.Len(), err)
	}
	rs := cfg.RingSize
	if rs == 0 {
		rs = DefaultRingSize
	}
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(e.fd, unix.SOL_XDP, o, rs); err != nil {
			return fmt.Errorf("xdp: ring setsockopt %d: %w", o, err)
		}
	}
	off, err := mmapOffsets(e.fd)
	if err != nil {
		return fmt.Errorf("xdp: XDP_MMAP_OFFSETS: %w", err)
	}
	if e.fill, err = mapRing(e.fd, off.Fr, uint32(rs), 8, unix.XDP_UMEM_PGOFF_FILL_RING); err != nil {
		return err
	}
	if e.comp, err = mapRing(e.fd, off.Cr, uint32(rs), 8, unix.XDP_UMEM_PGOFF_COMPLETION_RING); err != nil {
		return err
	}
	if e.rx, err = mapRing(e.fd, off.Rx, uint32(rs), 16, unix.XDP_PGOFF_RX_RING); err != nil {
		return err
	}
	if e.tx, err = mapRing(e.fd, off.Tx, uint32(rs), 16, unix.XDP_PGOFF_TX_RING); err != nil {
		return err
	}
	// Let one copy-mode kick process a whole ring instead of 32
	// descriptors (kernel >= 6.17; older kernels keep their default).
	e.info.TxBudget = 32
	if unix.SetsockoptInt(e.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, rs) == nil {
		e.info.TxBudget = rs
	}
	if sb := cfg.SendBuffer; sb > 0 {
		if unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sb) != nil {
			_ = unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sb)
		}
	}
	if v, err := unix.GetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil {
		e.info.SendBuffer = v
	}
	if cfg.BusyPoll {
		ok := unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL, 1) == nil
		ok = unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, 20) == nil && ok
		ok = unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL_BUDGET, 64) == nil && ok
		e.info.BusyPoll = ok
	}
	var tries []uint16
	if cfg.Bind != BindCopy {
		tries = append(tries, unix.XDP_ZEROCOPY|unix.XDP_USE_SG|unix.XDP_USE_NEED_WAKEUP)
	}
	if cfg.Bind != BindZeroCopy {
		tries = append(tries, unix.XDP_COPY|unix.XDP_USE_SG|unix.XDP_USE_NEED_WAKEUP)
	}
	var errs []error
	for _, flags := range tries {
		err := bindRetrying(e.fd, &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(e.info.Ifindex), QueueID: uint32(cfg.Queue)})
		if err == nil {
			e.info.ZeroCopy = flags&unix.XDP_ZEROCOPY != 0
			if o, err := xdpOptions(e.fd); err == nil {
				e.info.ZeroCopy = o&1 != 0
			}
			return nil
		}
		errs = append(errs, fmt.Errorf("bind flags %#x: %w", flags, err))
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
			break
		}
	}
	err = errors.Join(errs...)
	if cfg.Bind == BindZeroCopy && errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%w: %s queue %d: %v", ErrNoZeroCopy, e.info.Interface, cfg.Queue, err)
	}
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("%w: %s queue %d (retried for %v): %v", ErrBusy, e.info.Interface, cfg.Queue, bindRetry, err)
	}
	return fmt.Errorf("xdp: binding to %s queue %d: %w", e.info.Interface, cfg.Queue, err)
}

// bindRetrying binds, retrying with backoff (bounded by bindRetry) while the
// kernel still tears down a previous socket on the queue (EBUSY).
func bindRetrying(fd int, sa *unix.SockaddrXDP) error {
	deadline := time.Now().Add(bindRetry)
	wait := 100 * time.Microsecond
	for {
		err := unix.Bind(fd, sa)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// Info describes the endpoint's setup (zero-copy or copy mode, attach mode).
func (e *Endpoint) Info() Info { return e.info }

// Mode reports the bind the endpoint got: BindZeroCopy (the driver DMAs
// from and into the UMEM) or BindCopy (the kernel copies every packet, as
// on veth). Safe to call from any goroutine.
func (e *Endpoint) Mode() BindMode {
	if e.info.ZeroCopy {
		return BindZeroCopy
	}
	return BindCopy
}

// Counters returns the endpoint's ring and syscall counters. Like Stats,
// call it from the goroutine that uses the endpoint.
func (e *Endpoint) Counters() Counters { return e.ct }

// Space is the endpoint's UMEM: values allocated from pools on this space
// are sent without a copy.
func (e *Endpoint) Space() *mem.Space { return e.space }

// Pool is the endpoint's buffer pool (on Space). Like the endpoint, it
// belongs to the endpoint's goroutine unless it is Concurrent.
func (e *Endpoint) Pool() *mem.Pool { return e.pool }

// LocalAddr implements datapath.Endpoint.
func (e *Endpoint) LocalAddr() netip.AddrPort { return e.local }

// MaxPayload implements datapath.Endpoint.
func (e *Endpoint) MaxPayload() int { return e.maxPay }

// HybridThreshold is the field size from which Cornflakes' hybrid mode sends
// a value as its own descriptor: HybridThresholdCopyMode when the socket is
// bound in copy mode, HybridThresholdZeroCopy otherwise
// (datapath.HybridThresholder).
func (e *Endpoint) HybridThreshold() int {
	if e.Mode() == BindZeroCopy {
		return HybridThresholdZeroCopy
	}
	return HybridThresholdCopyMode
}

// MaxSegments implements datapath.Endpoint.
func (e *Endpoint) MaxSegments() int { return e.maxSeg }

// Stats implements datapath.Endpoint.
func (e *Endpoint) Stats() datapath.Stats { return e.st }

// KernelStats returns the socket's XDP_STATISTICS (kernel-side drops and
// invalid descriptors).
func (e *Endpoint) KernelStats() (unix.XDPStatistics, error) {
	if err := e.guard.Enter(); err != nil {
		return unix.XDPStatistics{}, err
	}
	defer e.guard.Exit()
	return xdpStatistics(e.fd)
}

// Close implements datapath.Endpoint: it flushes, waits (bounded) for
// outstanding completions, detaches the XDP program, closes the socket and
// releases every reference the endpoint holds.
func (e *Endpoint) Close() error {
	if err := e.guard.Enter(); err != nil {
		return err
	}
	var errs []error
	if err := e.flush(); err != nil {
		errs = append(errs, err)
	}
	deadline := time.Now().Add(closeWait)
	for e.ifLen > 0 && time.Now().Before(deadline) {
		_ = kick(e.fd)
		e.reap()
		if e.ifLen > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	errs = append(errs, e.teardown())
	e.guard.ExitClosed()
	return errors.Join(errs...)
}

// teardown releases everything (also for a failed Open).
func (e *Endpoint) teardown() error {
	var errs []error
	if e.prog != nil {
		errs = append(errs, e.prog.close())
		e.prog = nil
	}
	if e.fd >= 0 {
		errs = append(errs, unix.Close(e.fd))
		e.fd = -1
	}
	errs = append(errs, e.wake.Close())
	for _, r := range []*ring{e.fill, e.comp, e.rx, e.tx} {
		r.unmap()
	}
	// The socket is gone: the kernel no longer writes RX frames or reads
	// TX descriptors, so the references held for them can go.
	for e.ifLen > 0 {
		r := &e.inflight[e.ifHead]
		if !r.done {
			_ = r.buf.Release()
			e.ct.Forced++
		}
		*r = txRec{}
		e.ifHead = (e.ifHead + 1) & (len(e.inflight) - 1)
		e.ifLen--
	}
	for i := range e.descs {
		_ = e.descs[i].buf.Release()
	}
	e.descs = e.descs[:0]
	for i := range e.rxHeld {
		if !e.rxHeld[i].IsZero() {
			_ = e.rxHeld[i].Release()
			e.rxHeld[i] = mem.Buf{}
		}
	}
	if e.resFD >= 0 {
		unix.Close(e.resFD)
		e.resFD = -1
	}
	if e.neigh != nil {
		e.neigh.close()
	}
	if e.ownPool && e.pool != nil {
		if err := e.pool.Close(); err != nil {
			errs = append(errs, fmt.Errorf("xdp: closing the endpoint's pool (received buffers still held?): %w", err))
		} else if e.ownSpace {
			errs = append(errs, e.space.Close())
		}
		e.pool = nil
	} else if e.ownSpace && e.space != nil {
		errs = append(errs, e.space.Close())
	}
	return errors.Join(errs...)
}
