package mem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A shared space (SpaceConfig.Shared) is backed by one memfd
// (memfd_create) as large as the space, instead of anonymous memory: a
// region committed at offset off of the space is the file's bytes [off,
// off+len), mapped MAP_SHARED. Another process that receives the file
// descriptor (SharedFd, passed with SCM_RIGHTS) and maps it read-only sees
// every byte the pools of the space hold, at the same offsets (Offset), and
// nothing else of this process.
//
// The file is sealed at creation (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL):
// its size never changes, so a peer's mapping can never fault with SIGBUS
// (uncommitted parts read as zeros). Decommitting a region punches a hole
// (FALLOC_FL_PUNCH_HOLE), which returns the memory to the kernel without
// changing the size. Explicit hugepages (MFD_HUGETLB) are used when the
// mode asks for them and the system has enough free 2 MiB pages reserved
// for the whole space; otherwise the file has ordinary pages and each
// region is advised MADV_HUGEPAGE (shmem transparent hugepages, when
// /sys/kernel/mm/transparent_hugepage/shmem_enabled allows it).

// SharedSeals are the seals every shared space's memfd carries; a peer that
// maps a received descriptor should check them (F_GET_SEALS) first.
const SharedSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

type sharedBacking struct {
	fd   int // -1: not shared
	huge bool
}

// newSharedBacking creates the sealed memfd of a shared space of size
// bytes.
func newSharedBacking(size uintptr, mode HugepageMode) (sharedBacking, error) {
	huge := mode == HugepagesRequired ||
		(mode == HugepagesAuto && freeHugepages() >= int64(size>>SlotShift))
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := -1, error(nil)
	if huge {
		fd, err = unix.MemfdCreate("cornflakes-space", flags|unix.MFD_HUGETLB|unix.MFD_HUGE_2MB)
		if err != nil {
			if mode == HugepagesRequired {
				return sharedBacking{fd: -1}, fmt.Errorf("%w: memfd_create(MFD_HUGETLB): %v", ErrHugepages, err)
			}
			huge = false
		}
	}
	if !huge {
		fd, err = unix.MemfdCreate("cornflakes-space", flags)
		if err != nil {
			return sharedBacking{fd: -1}, fmt.Errorf("mem: memfd_create: %w", err)
		}
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		_ = unix.Close(fd)
		return sharedBacking{fd: -1}, fmt.Errorf("mem: sizing the shared space's memfd to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, SharedSeals); err != nil {
		_ = unix.Close(fd)
		return sharedBacking{fd: -1}, fmt.Errorf("mem: sealing the shared space's memfd: %w", err)
	}
	return sharedBacking{fd: fd, huge: huge}, nil
}

// Shared reports whether the space has a shared backing (SpaceConfig.Shared).
func (s *Space) Shared() bool { return s.shm.fd >= 0 }

// SharedFd returns the memfd backing a shared space, or -1. The descriptor
// stays owned by the space (closed by Close): pass it to a peer (SCM_RIGHTS
// duplicates it) but do not close it. The peer should map it PROT_READ
// only; it is sealed against resizing (SharedSeals).
func (s *Space) SharedFd() int { return s.shm.fd }

// commitShared maps [off, off+length) of the space to the same range of
// its memfd. Called with s.mu held.
func (s *Space) commitShared(off, length uintptr) error {
	addr := unsafe.Add(s.base, off)
	const rw = unix.PROT_READ | unix.PROT_WRITE
	flags := unix.MAP_SHARED | unix.MAP_FIXED
	if s.cfg.Commit || s.shm.huge {
		flags |= unix.MAP_POPULATE
	}
	if _, err := unix.MmapPtr(s.shm.fd, int64(off), addr, length, rw, flags); err != nil {
		s.restore(off, length)
		if s.shm.huge {
			s.stats.HugetlbErrors++
			return fmt.Errorf("%w: mapping %d bytes of a hugetlb memfd: %v", ErrHugepages, length, err)
		}
		return fmt.Errorf("mem: committing %d shared bytes: %w", length, err)
	}
	var f uint8
	if s.shm.huge {
		f |= flagHuge
	} else if s.cfg.Hugepages == HugepagesAuto || s.cfg.Hugepages == HugepagesTransparent {
		if unix.Madvise(unsafe.Slice((*byte)(addr), length), unix.MADV_HUGEPAGE) == nil {
			f |= flagTHP
		}
	}
	s.lockAndAccount(addr, off, length, f)
	return nil
}

// punch returns the memfd's pages of [off, off+length) to the kernel
// (they read as zeros afterwards, in every mapping).
func (s *Space) punch(off, length uintptr) error {
	if err := unix.Fallocate(s.shm.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(length)); err != nil {
		return fmt.Errorf("mem: releasing %d shared bytes: %w", length, err)
	}
	return nil
}

// closeShared closes the memfd (the memory lives on while a peer maps it).
func (s *Space) closeShared() {
	if s.shm.fd >= 0 {
		_ = unix.Close(s.shm.fd)
		s.shm.fd = -1
	}
}
