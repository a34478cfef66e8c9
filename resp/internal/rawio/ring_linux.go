package rawio

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is a minimal io_uring used as a batch of system calls: the caller
// prepares receives and sends on sockets, Submit hands them to
// the kernel with one io_uring_enter and returns once every one has
// completed, and Next yields the results. Because every operation is on a
// socket with MSG_DONTWAIT (an operation that would block completes at
// once with -EAGAIN instead of being queued until the socket is ready,
// which io_uring does for read and writev even on an O_NONBLOCK socket),
// nothing is left in flight between Submit calls: the
// buffers and iovecs given to the kernel need only live until Submit
// returns, as with read(2) and writev(2).
//
// A Ring is used by one goroutine at a time.
type Ring struct {
	fd     int
	ring   []byte // the submission and completion rings (one mapping)
	sqeMem []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqes           []sqe
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []cqe

	tail    uint32 // our submission tail (published by Submit)
	waiting uint32 // completions Submit waits for
}

// The kernel's ABI (include/uapi/linux/io_uring.h).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	_           uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

const (
	opSendmsg = 9
	opRecvmsg = 10
	opRecv    = 27
	dontWait  = unix.MSG_DONTWAIT

	featSingleMmap = 1 << 0
	enterGetEvents = 1 << 0
	setupSubmitAll = 1 << 7 // IORING_SETUP_SUBMIT_ALL (5.18)
	setupCoopTask  = 1 << 8 // IORING_SETUP_COOP_TASKRUN (5.19)
	offSQRing      = 0
	offSQEs        = 0x10000000
	maxEntries     = 4096
)

// ErrRingFull is returned by the Prep methods when entries operations
// are already prepared: Submit first.
var ErrRingFull = errors.New("rawio: ring full")

// NewRing sets up a ring for at most entries (a power of two, 1 to 4096)
// operations per Submit. It fails where io_uring is unavailable (kernel
// before 5.19, io_uring_disabled, seccomp): the caller makes the system
// calls one by one instead.
func NewRing(entries uint32) (*Ring, error) {
	if entries == 0 || entries > maxEntries || entries&(entries-1) != 0 {
		return nil, errors.New("rawio: ring entries must be a power of two, 1 to 4096")
	}
	var p params
	p.flags = setupSubmitAll | setupCoopTask
	r1, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, e
	}
	fd := int(r1)
	if p.features&featSingleMmap == 0 || p.sqEntries != entries {
		_ = unix.Close(fd)
		return nil, errors.New("rawio: io_uring without IORING_FEAT_SINGLE_MMAP")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	ring, err := unix.Mmap(fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	sqeMem, err := unix.Mmap(fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Munmap(ring)
		_ = unix.Close(fd)
		return nil, err
	}
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&ring[off])) }
	r := &Ring{
		fd: fd, ring: ring, sqeMem: sqeMem,
		sqHead: u32(p.sqOff.head), sqTail: u32(p.sqOff.tail), sqMask: *u32(p.sqOff.ringMask),
		sqes:   unsafe.Slice((*sqe)(unsafe.Pointer(&sqeMem[0])), p.sqEntries),
		cqHead: u32(p.cqOff.head), cqTail: u32(p.cqOff.tail), cqMask: *u32(p.cqOff.ringMask),
		cqes: unsafe.Slice((*cqe)(unsafe.Pointer(&ring[p.cqOff.cqes])), p.cqEntries),
	}
	// The submission array maps ring slot i to entry i, once for all.
	arr := unsafe.Slice(u32(p.sqOff.array), p.sqEntries)
	for i := range arr {
		arr[i] = uint32(i)
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

// Close releases the ring. No operation may be prepared or in flight.
func (r *Ring) Close() error {
	_ = unix.Munmap(r.sqeMem)
	_ = unix.Munmap(r.ring)
	return unix.Close(r.fd)
}

// FD is the ring's descriptor.
func (r *Ring) FD() int { return r.fd }

// Space is how many more operations can be prepared before Submit.
func (r *Ring) Space() int { return len(r.sqes) - int(r.waiting) }

func (r *Ring) prep(op uint8, fd int, addr unsafe.Pointer, n int, flags uint32, user uint64) error {
	if r.Space() == 0 {
		return ErrRingFull
	}
	s := &r.sqes[r.tail&r.sqMask]
	*s = sqe{opcode: op, fd: int32(fd), addr: uint64(uintptr(addr)), len: uint32(n), opFlags: flags, userData: user}
	r.tail++
	r.waiting++
	return nil
}

// PrepRecv prepares recv(2) of fd into p (not empty), reported with user
// by Next; MSG_DONTWAIT, so that it completes within Submit.
func (r *Ring) PrepRecv(fd int, p []byte, user uint64) error {
	return r.prep(opRecv, fd, unsafe.Pointer(&p[0]), len(p), dontWait, user)
}

// PrepRecvmsg prepares recvmsg(2) of fd into msg's iovecs (msg and they
// unchanged until Submit returns); MSG_DONTWAIT.
func (r *Ring) PrepRecvmsg(fd int, msg *unix.Msghdr, user uint64) error {
	return r.prep(opRecvmsg, fd, unsafe.Pointer(msg), 1, dontWait, user)
}

// PrepSendmsg prepares sendmsg(2) of msg's iovecs (at most IOV_MAX; msg
// and they unchanged until Submit returns) to fd; MSG_DONTWAIT and
// MSG_NOSIGNAL: a full socket buffer completes with what fitted or with
// -EAGAIN, a closed peer with -EPIPE.
func (r *Ring) PrepSendmsg(fd int, msg *unix.Msghdr, user uint64) error {
	return r.prep(opSendmsg, fd, unsafe.Pointer(msg), 1, dontWait|unix.MSG_NOSIGNAL, user)
}

// Submit makes the prepared operations, with one io_uring_enter (more
// only if interrupted), and returns when all have completed: their
// results are read with Next. An error means the ring is unusable (not
// expected); operations already taken by the kernel may then have run.
func (r *Ring) Submit() error {
	atomic.StoreUint32(r.sqTail, r.tail)
	for {
		toSubmit := r.tail - atomic.LoadUint32(r.sqHead)
		ready := atomic.LoadUint32(r.cqTail) - *r.cqHead
		if toSubmit == 0 && ready >= r.waiting {
			return nil
		}
		var wait uint32
		if r.waiting > ready {
			wait = r.waiting - ready
		}
		_, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(wait), enterGetEvents, 0, 0)
		if e != 0 && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY {
			return e
		}
	}
}

// Next returns the next completion of the last Submit: the user value
// given to the Prep call and the result (bytes, or -errno); ok is false
// when there are no more.
func (r *Ring) Next() (user uint64, res int32, ok bool) {
	h := *r.cqHead
	if h == atomic.LoadUint32(r.cqTail) {
		return 0, 0, false
	}
	c := r.cqes[h&r.cqMask]
	atomic.StoreUint32(r.cqHead, h+1)
	if r.waiting > 0 {
		r.waiting--
	}
	return c.userData, c.res, true
}
