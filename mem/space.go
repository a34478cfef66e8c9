package mem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HugepageMode selects the page size of a space's committed memory.
type HugepageMode int

const (
	// HugepagesAuto uses explicit 2 MiB hugepages (MAP_HUGETLB) when the
	// kernel has free ones reserved, and transparent hugepages
	// (MADV_HUGEPAGE) otherwise. It never changes the system's reservation.
	HugepagesAuto HugepageMode = iota
	// HugepagesTransparent only asks for transparent hugepages.
	HugepagesTransparent
	// HugepagesNone uses ordinary pages.
	HugepagesNone
	// HugepagesRequired fails (ErrHugepages) unless explicit hugepages can be mapped.
	HugepagesRequired
)

// String returns the mode's name.
func (m HugepageMode) String() string {
	switch m {
	case HugepagesAuto:
		return "auto"
	case HugepagesTransparent:
		return "transparent"
	case HugepagesNone:
		return "none"
	case HugepagesRequired:
		return "required"
	}
	return "HugepageMode(" + strconv.Itoa(int(m)) + ")"
}

// SpaceConfig configures NewSpace.
type SpaceConfig struct {
	// Size is the bytes of address space to reserve, rounded up to SlotSize
	// (default DefaultSpaceSize, at most MaxSpaceSize).
	Size int64
	// Commit maps and populates the whole space at creation (for memory that
	// is registered with a device as one block, like an AF_XDP UMEM); regions
	// then only claim slots and are never decommitted. Otherwise regions are
	// committed when a pool grows and decommitted when it closes.
	Commit bool
	// Hugepages selects the page size.
	Hugepages HugepageMode
	// Mlock locks committed memory in RAM when permitted (best effort; see
	// SpaceStats.LockedBytes).
	Mlock bool
	// Shared backs the space with one sealed memfd that other processes
	// can map (SharedFd; see shared.go), instead of private anonymous
	// memory.
	Shared bool
}

// Space is one contiguous virtual address reservation from which pools
// carve 2 MiB-aligned regions. Recover finds a region by a range check on
// the space and one table lookup.
type Space struct {
	base  unsafe.Pointer // SlotSize aligned
	size  uintptr        // multiple of SlotSize
	slots []atomic.Pointer[region]
	cfg   SpaceConfig
	index int           // in the global table
	shm   sharedBacking // fd -1 unless cfg.Shared

	mu        sync.Mutex
	used      []bool // slot claimed by a region
	nused     int
	hint      int // no free slot below hint
	closed    bool
	hugeFail  bool // explicit hugepages failed once; stop trying
	committed bool
	flags     []uint8 // per slot: flagHuge, flagTHP, flagLocked
	stats     SpaceStats
}

// SpaceStats describes the memory of a space.
type SpaceStats struct {
	Size           int64 // reserved address space
	UsedBytes      int64 // bytes of slots claimed by regions
	CommittedBytes int64 // bytes mapped read-write
	HugetlbBytes   int64 // committed bytes backed by explicit 2 MiB hugepages
	THPBytes       int64 // committed bytes advised MADV_HUGEPAGE (transparent hugepages)
	LockedBytes    int64 // committed bytes mlock'ed
	MlockErrors    int64 // mlock calls that failed (not permitted / over limit)
	HugetlbErrors  int64 // MAP_HUGETLB attempts that failed
}

var (
	spaceMu     sync.Mutex
	spaceTable  [MaxSpaces]atomic.Pointer[Space]
	defaultOnce sync.Once
	defSpace    *Space
	defErr      error
	// defaultFast is the default space, checked first by Recover.
	defaultFast atomic.Pointer[Space]
	// others lists the live spaces other than the default one (copy on
	// write under spaceMu), so a Recover miss scans only live spaces.
	others atomic.Pointer[[]*Space]
)

// publishSpaces rebuilds the list of non-default spaces. Called with spaceMu held.
func publishSpaces() {
	var l []*Space
	def := defaultFast.Load()
	for i := range spaceTable {
		if s := spaceTable[i].Load(); s != nil && s != def {
			l = append(l, s)
		}
	}
	others.Store(&l)
}

// minDefaultSpaceSize is the smallest reservation DefaultSpace falls back to.
const minDefaultSpaceSize = 1 << 30

// DefaultSpace returns the process default space (DefaultSpaceSize of
// address space, committed on demand, HugepagesAuto, Mlock), creating it on
// first use. Pools with a nil PoolConfig.Space use it. When the process may
// not reserve that much address space, it reserves a quarter, down to 1 GiB.
func DefaultSpace() (*Space, error) {
	defaultOnce.Do(func() {
		// Under an address-space limit (ulimit -v) the full reservation can
		// fail; fall back to smaller ones before giving up.
		for size := int64(DefaultSpaceSize); size >= minDefaultSpaceSize; size /= 4 {
			defSpace, defErr = NewSpace(SpaceConfig{Size: size, Hugepages: HugepagesAuto, Mlock: true})
			if defErr == nil || errors.Is(defErr, ErrTooManySpaces) {
				break
			}
		}
		if defErr == nil {
			spaceMu.Lock()
			defaultFast.Store(defSpace)
			publishSpaces()
			spaceMu.Unlock()
		}
	})
	return defSpace, defErr
}

// NewSpace reserves a new address space. At most MaxSpaces may exist at
// once; Close a space to free its entry and its address range.
func NewSpace(cfg SpaceConfig) (*Space, error) {
	if cfg.Size == 0 {
		cfg.Size = DefaultSpaceSize
	}
	if cfg.Size < 0 || cfg.Size > MaxSpaceSize {
		return nil, fmt.Errorf("%w: space size %d not in (0, %d]", ErrConfig, cfg.Size, int64(MaxSpaceSize))
	}
	if cfg.Hugepages < HugepagesAuto || cfg.Hugepages > HugepagesRequired {
		return nil, fmt.Errorf("%w: hugepage mode %d", ErrConfig, int(cfg.Hugepages))
	}
	size := (uintptr(cfg.Size) + SlotSize - 1) &^ (SlotSize - 1)
	cfg.Size = int64(size)

	spaceMu.Lock()
	defer spaceMu.Unlock()
	idx := -1
	for i := range spaceTable {
		if spaceTable[i].Load() == nil {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, ErrTooManySpaces
	}

	// Reserve one extra slot so the base can be aligned to SlotSize.
	raw, err := unix.MmapPtr(-1, 0, nil, size+SlotSize, unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mem: reserving %d bytes of address space: %w", size, err)
	}
	head := (SlotSize - uintptr(raw)&(SlotSize-1)) & (SlotSize - 1)
	base := unsafe.Add(raw, head)
	if head > 0 {
		_ = unix.MunmapPtr(raw, head)
	}
	if tail := SlotSize - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(base, size), tail)
	}
	shm := sharedBacking{fd: -1}
	if cfg.Shared {
		if shm, err = newSharedBacking(size, cfg.Hugepages); err != nil {
			_ = unix.MunmapPtr(base, size)
			return nil, err
		}
	}
	s := &Space{
		shm:   shm,
		base:  base,
		size:  size,
		slots: make([]atomic.Pointer[region], size>>SlotShift),
		used:  make([]bool, size>>SlotShift),
		flags: make([]uint8, size>>SlotShift),
		cfg:   cfg,
		index: idx,
	}
	s.stats.Size = int64(size)
	if cfg.Commit {
		if err := s.commit(0, size); err != nil {
			_ = unix.MunmapPtr(base, size)
			s.closeShared()
			return nil, err
		}
		s.committed = true
	}
	spaceTable[idx].Store(s)
	publishSpaces()
	return s, nil
}

// Base is the address of the first byte of the space.
func (s *Space) Base() uintptr { return uintptr(s.base) }

// Len is the size of the space in bytes.
func (s *Space) Len() int { return int(s.size) }

// Config returns the configuration the space was made with (Size rounded up).
func (s *Space) Config() SpaceConfig { return s.cfg }

// Offset returns the offset of p within the space (for example its UMEM
// address) when p lies entirely inside it. A zero-length p is never inside.
func (s *Space) Offset(p []byte) (uint64, bool) {
	if len(p) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(s.base)
	if off >= s.size || uintptr(len(p)) > s.size-off {
		return 0, false
	}
	return uint64(off), true
}

// Slice returns the n bytes at offset off of the space (for example the
// frame an AF_XDP descriptor points at), or false when the range is not
// inside the space. Only committed memory may be touched.
func (s *Space) Slice(off uint64, n int) ([]byte, bool) {
	if n < 0 || off > uint64(s.size) || uint64(n) > uint64(s.size)-off {
		return nil, false
	}
	return unsafe.Slice((*byte)(unsafe.Add(s.base, uintptr(off))), n), true
}

// Bytes returns the whole space as a slice. Only committed parts may be
// touched (the whole of a space made with Commit); the rest faults.
func (s *Space) Bytes() []byte { return unsafe.Slice((*byte)(s.base), s.size) }

// Stats reports the space's memory use.
func (s *Space) Stats() SpaceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.UsedBytes = int64(s.nused) << SlotShift
	return st
}

// Close unmaps the space and frees its table entry. It fails with ErrInUse
// while pools still hold regions in it. The default space cannot be closed.
func (s *Space) Close() error {
	if s == defaultFast.Load() {
		return fmt.Errorf("%w: the default space cannot be closed", ErrConfig)
	}
	spaceMu.Lock()
	defer spaceMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.nused > 0 {
		return fmt.Errorf("%w: space has %d bytes of live regions", ErrInUse, int64(s.nused)<<SlotShift)
	}
	s.closed = true
	spaceTable[s.index].CompareAndSwap(s, nil)
	publishSpaces()
	s.closeShared()
	if err := unix.MunmapPtr(s.base, s.size); err != nil {
		return fmt.Errorf("mem: unmapping space: %w", err)
	}
	return nil
}

// lookupRegion returns the region containing addr, or nil.
func lookupRegion(addr uintptr) *region {
	if s := defaultFast.Load(); s != nil {
		if off := addr - uintptr(s.base); off < s.size {
			return s.slots[off>>SlotShift].Load()
		}
	}
	if l := others.Load(); l != nil {
		for _, s := range *l {
			if off := addr - uintptr(s.base); off < s.size {
				return s.slots[off>>SlotShift].Load()
			}
		}
	}
	return nil
}

// claim finds n contiguous free slots, commits them (unless the space is
// pre-committed) and returns the first slot index. It reports ErrSpaceFull
// when no run of n free slots exists.
func (s *Space) claim(n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	first := -1
	for i, run := s.hint, 0; i < len(s.used); i++ {
		if s.used[i] {
			run = 0
			continue
		}
		run++
		if run == n {
			first = i - n + 1
			break
		}
	}
	if first < 0 {
		return 0, ErrSpaceFull
	}
	if !s.committed {
		if err := s.commit(uintptr(first)<<SlotShift, uintptr(n)<<SlotShift); err != nil {
			return 0, err
		}
	}
	for i := first; i < first+n; i++ {
		s.used[i] = true
	}
	s.nused += n
	if first == s.hint {
		s.hint = first + n
	}
	return first, nil
}

// publish makes the region visible to Recover in slots [first, first+n).
func (s *Space) publish(first, n int, r *region) {
	for i := first; i < first+n; i++ {
		s.slots[i].Store(r)
	}
}

// unclaim removes a region from the lookup table, decommits its memory
// (unless the space is pre-committed) and frees its slots.
func (s *Space) unclaim(first, n int) error {
	for i := first; i < first+n; i++ {
		s.slots[i].Store(nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if !s.committed {
		err = s.decommit(uintptr(first)<<SlotShift, uintptr(n)<<SlotShift)
	}
	for i := first; i < first+n; i++ {
		s.used[i] = false
	}
	s.nused -= n
	if first < s.hint {
		s.hint = first
	}
	return err
}

// Per-slot page flags, so decommit keeps the stats right.
const (
	flagHuge   = 1 << iota // explicit hugetlb pages
	flagTHP                // MADV_HUGEPAGE accepted
	flagLocked             // mlock succeeded
)

// commit maps [off, off+length) of the space read-write. Called with s.mu
// held (or before the space is published).
func (s *Space) commit(off, length uintptr) error {
	if s.shm.fd >= 0 {
		return s.commitShared(off, length)
	}
	addr := unsafe.Add(s.base, off)
	const rw = unix.PROT_READ | unix.PROT_WRITE
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_FIXED
	var f uint8
	mode := s.cfg.Hugepages
	if mode == HugepagesRequired || (mode == HugepagesAuto && !s.hugeFail && freeHugepages() >= int64(length>>SlotShift)) {
		_, err := unix.MmapPtr(-1, 0, addr, length, rw, flags|unix.MAP_HUGETLB|unix.MAP_HUGE_2MB|unix.MAP_POPULATE)
		if err == nil {
			f |= flagHuge
		} else {
			s.stats.HugetlbErrors++
			if mode == HugepagesRequired {
				s.restore(off, length)
				return fmt.Errorf("%w: mmap MAP_HUGETLB of %d bytes: %v", ErrHugepages, length, err)
			}
			s.hugeFail = true
		}
	}
	if f&flagHuge == 0 {
		extra := 0
		if s.cfg.Commit {
			extra = unix.MAP_POPULATE
		}
		if _, err := unix.MmapPtr(-1, 0, addr, length, rw, flags|extra); err != nil {
			s.restore(off, length)
			return fmt.Errorf("mem: committing %d bytes: %w", length, err)
		}
		if mode == HugepagesAuto || mode == HugepagesTransparent {
			if unix.Madvise(unsafe.Slice((*byte)(addr), length), unix.MADV_HUGEPAGE) == nil {
				f |= flagTHP
			}
		}
	}
	s.lockAndAccount(addr, off, length, f)
	return nil
}

// lockAndAccount finishes a commit of [off, off+length) at addr, mapped
// with flags f: it mlocks the range when the space asks for it (a failure
// is counted, not returned) and records it in the statistics.
func (s *Space) lockAndAccount(addr unsafe.Pointer, off, length uintptr, f uint8) {
	if s.cfg.Mlock {
		if unix.Mlock(unsafe.Slice((*byte)(addr), length)) == nil {
			f |= flagLocked
		} else {
			s.stats.MlockErrors++
		}
	}
	s.account(off, length, f, +1)
}

// account records the flags of [off, off+length) and adds (sign=+1) or
// removes (sign=-1) its bytes from the stats.
func (s *Space) account(off, length uintptr, f uint8, sign int64) {
	n := sign * int64(length)
	s.stats.CommittedBytes += n
	if f&flagHuge != 0 {
		s.stats.HugetlbBytes += n
	}
	if f&flagTHP != 0 {
		s.stats.THPBytes += n
	}
	if f&flagLocked != 0 {
		s.stats.LockedBytes += n
	}
	for i := off >> SlotShift; i < (off+length)>>SlotShift; i++ {
		s.flags[i] = f
	}
}

// restore turns [off, off+length) back into a PROT_NONE reservation.
func (s *Space) restore(off, length uintptr) {
	_, _ = unix.MmapPtr(-1, 0, unsafe.Add(s.base, off), length, unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED)
}

// decommit releases the memory of [off, off+length), keeping the
// reservation. Regions are committed as a whole, so the first slot's flags
// describe the range.
func (s *Space) decommit(off, length uintptr) error {
	f := s.flags[off>>SlotShift]
	if _, err := unix.MmapPtr(-1, 0, unsafe.Add(s.base, off), length, unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED); err != nil {
		return fmt.Errorf("mem: decommitting %d bytes: %w", length, err)
	}
	s.account(off, length, f, -1)
	if s.shm.fd >= 0 {
		return s.punch(off, length)
	}
	return nil
}

// freeHugepages reports the free explicit 2 MiB hugepages of the system
// (0 when unknown).
func freeHugepages() int64 {
	b, err := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
