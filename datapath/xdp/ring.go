package xdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file and socket.go are the only ones that use unsafe: they map the
// four AF_XDP rings and pass structs to setsockopt/getsockopt.

// ring is one mmap'd AF_XDP ring. The producer and consumer indices are
// shared with the kernel and accessed with sync/atomic (sequentially
// consistent loads and stores, which give the acquire/release ordering the
// ring protocol needs: descriptors are written before the producer index is
// published, and read after it is loaded). The cached copies are private.
type ring struct {
	mem        []byte
	prod, cons *atomic.Uint32
	flags      *atomic.Uint32
	descs      unsafe.Pointer
	mask, size uint32
	cachedProd uint32 // producer rings: our producer; consumer rings: last seen kernel producer
	cachedCons uint32 // producer rings: last seen kernel consumer; consumer rings: our consumer
}

// mapRing mmaps a ring of size entries of entSize bytes at page offset pgoff.
func mapRing(fd int, off unix.XDPRingOffset, size uint32, entSize uintptr, pgoff int64) (*ring, error) {
	length := int(off.Desc + uint64(size)*uint64(entSize))
	m, err := unix.Mmap(fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("xdp: mmap ring (offset %#x): %w", pgoff, err)
	}
	base := unsafe.Pointer(unsafe.SliceData(m))
	r := &ring{
		mem:   m,
		prod:  (*atomic.Uint32)(unsafe.Add(base, off.Producer)),
		cons:  (*atomic.Uint32)(unsafe.Add(base, off.Consumer)),
		flags: (*atomic.Uint32)(unsafe.Add(base, off.Flags)),
		descs: unsafe.Add(base, off.Desc),
		mask:  size - 1,
		size:  size,
	}
	r.cachedProd = r.prod.Load()
	r.cachedCons = r.cons.Load()
	return r, nil
}

func (r *ring) unmap() {
	if r != nil && r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem = nil
	}
}

// addr returns the address slot i of a fill or completion ring.
func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

// desc returns descriptor slot i of an RX or TX ring.
func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

// prodFree returns how many slots a producer ring has free (refreshing the
// kernel's consumer index when fewer than want are known to be free).
func (r *ring) prodFree(want uint32) uint32 {
	free := r.size - (r.cachedProd - r.cachedCons)
	if free >= want {
		return free
	}
	r.cachedCons = r.cons.Load()
	return r.size - (r.cachedProd - r.cachedCons)
}

// publish makes the entries written up to cachedProd visible to the kernel.
func (r *ring) publish() { r.prod.Store(r.cachedProd) }

// pending returns how many entries a producer ring has that the kernel has
// not consumed yet.
func (r *ring) pending() uint32 {
	r.cachedCons = r.cons.Load()
	return r.cachedProd - r.cachedCons
}

// consAvail returns how many entries a consumer ring has ready.
func (r *ring) consAvail() uint32 {
	n := r.cachedProd - r.cachedCons
	if n == 0 {
		r.cachedProd = r.prod.Load()
		n = r.cachedProd - r.cachedCons
	}
	return n
}

// release hands consumed entries back to the kernel.
func (r *ring) release() { r.cons.Store(r.cachedCons) }

// needWakeup reports whether the kernel asked to be kicked (XDP_USE_NEED_WAKEUP).
func (r *ring) needWakeup() bool { return r.flags.Load()&unix.XDP_RING_NEED_WAKEUP != 0 }

// sockopt helpers for structs.

func setsockoptPtr(fd, level, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockoptPtr(fd, level, opt int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func registerUMEM(fd int, base uintptr, length int, chunk uint32) error {
	reg := unix.XDPUmemReg{Addr: uint64(base), Len: uint64(length), Size: chunk, Flags: unix.XDP_UMEM_UNALIGNED_CHUNK_FLAG}
	return setsockoptPtr(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg))
}

func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	err := getsockoptPtr(fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off))
	return off, err
}

func xdpStatistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	err := getsockoptPtr(fd, unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

// xdpOptions returns struct xdp_options.flags (XDP_OPTIONS_ZEROCOPY = 1).
func xdpOptions(fd int) (uint32, error) {
	var flags uint32
	err := getsockoptPtr(fd, unix.SOL_XDP, unix.XDP_OPTIONS, unsafe.Pointer(&flags), unsafe.Sizeof(flags))
	return flags, err
}

// kick wakes the kernel's TX processing (copy mode needs it for every batch).
func kick(fd int) error {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// wakeRX asks the kernel to process RX when the fill ring needs a wakeup.
func wakeRX(fd int) {
	_, _, _ = unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}
