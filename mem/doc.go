// Package mem is registered (DMA-safe) memory for zero-copy I/O: size-class
// pools of items carved out of large mmap'd regions, with reference counts
// kept out of line so that any interior slice of an item can be recovered
// in O(1) by address arithmetic (Recover).
//
// # Model
//
// A Space is one contiguous virtual address reservation (PROT_NONE,
// MAP_NORESERVE). Regions are committed inside it on demand, in 2 MiB
// aligned slots: explicit 2 MiB hugepages when the kernel has free ones,
// transparent hugepages (MADV_HUGEPAGE) otherwise, and mlock'ed when
// permitted. The process default space (DefaultSpace) is created lazily;
// NewSpace makes more (for example a fully committed space that an AF_XDP
// socket registers as its UMEM).
//
// A Pool owns regions of one space, split into power-of-two size classes
// (PoolConfig.MinClass..MaxClass). Each region belongs to one class and is an
// array of equal items; items never straddle regions. Per item the region
// keeps a reference count and a generation number in Go-heap arrays, so the
// data itself carries no header.
//
// A Buf is a small value handle to ONE reference on an item plus a window
// (offset, length) into it. Every Buf an API hands out is a reference the
// receiver owns and must Release exactly once, unless the API documents it
// as borrowed. Clone adds a reference; Recover turns a []byte that points
// into a live item back into a new reference.
//
// # Concurrency
//
// A pool made with PoolConfig.Concurrent == false (the default) belongs to
// one goroutine at a time: Alloc, Clone, Release and Recover of its items
// use plain loads and stores, no atomics and no locks. "The owner" is
// whichever goroutine uses the pool now; ownership may move (a pool filled
// by main and then used only by an endpoint's loop goroutine) when the move
// is synchronized, as starting a goroutine, a channel send or a mutex
// synchronizes it, and the previous owner stops. Handing a Buf to another
// goroutine transfers it, but its Release (and any Clone or Recover, which
// decoding a message from its bytes does) must still happen on the owner;
// other goroutines may read through it (Bytes, Len, Slice) while they hold
// it. Memory that several goroutines reference-count at once (a worker
// decoding a request, a value shared by endpoints) belongs in a Concurrent
// pool. In the checked build every pool
// uses atomic counts, so those cross-goroutine checks stay race-free. With Concurrent == true, reference
// counts are atomic and free lists are guarded by a mutex, so Bufs of the
// pool may be cloned, recovered and released from any goroutine.
//
// Recover and IsRegistered themselves may be called from any goroutine; the
// reference they take follows the rules of the item's pool.
//
// # Checked build
//
// Built with -tags cfcheck, the package poisons released items (fills them
// with PoisonByte), verifies the poison when an item is reused (a write
// after release panics), and turns every use of a stale handle (one whose
// reference was already released) into a *UseAfterReleaseError: a panic from
// Bytes, Clone and Slice, an error from Release and Check. Without the tag
// these checks compile away, except that Release always reports
// ErrDoubleRelease for an item whose count is already zero and
// ErrUseAfterRelease for a handle whose item was released and reused, and
// Clone always panics on an item whose count is zero.
//
// A reference count cannot tell which reference is being released: one
// handle released twice while other references are alive steals one of
// them. That is caught later, when the item is freed early and the real
// owner's handle turns out stale (ErrDoubleRelease, ErrUseAfterRelease, or a
// checked-build panic).
//
// # Limits
//
// All limits are constants of this package: MaxSpaces, DefaultSpaceSize,
// SlotSize, MinClassLimit, MaxClassLimit, DefaultMinClass, DefaultMaxClass,
// DefaultRegionSize, DefaultMaxBytes.
package mem

// Limits and defaults.
const (
	// SlotShift is log2(SlotSize).
	SlotShift = 21
	// SlotSize is the granularity of regions in a space (2 MiB, the x86-64
	// hugepage size); region and space sizes are multiples of it.
	SlotSize = 1 << SlotShift

	// MaxSpaces is how many spaces (including the default one) may exist at
	// once; Recover checks each live space's range, so this bounds its cost.
	MaxSpaces = 16
	// DefaultSpaceSize is the address space reserved for the default space.
	// It is virtual only: memory is committed region by region.
	DefaultSpaceSize = 64 << 30
	// MaxSpaceSize bounds SpaceConfig.Size (the slot table is 8 bytes per 2 MiB).
	MaxSpaceSize = 1 << 40

	// MinClassLimit is the smallest allowed item size.
	MinClassLimit = 8
	// MaxClassLimit is the largest allowed item size.
	MaxClassLimit = 1 << 30
	// DefaultMinClass is the default smallest item size.
	DefaultMinClass = 64
	// DefaultMaxClass is the default largest item size.
	DefaultMaxClass = 8 << 20
	// DefaultRegionSize is the default region size (one region holds
	// DefaultRegionSize/itemSize items, or one item when it is larger).
	DefaultRegionSize = SlotSize
	// DefaultMaxBytes is the default limit of region memory per pool.
	DefaultMaxBytes = 1 << 30

	// PoisonByte fills released items in the checked build (-tags cfcheck).
	PoisonByte = 0xCF
)

// Checked reports whether this is the checked build (-tags cfcheck): other
// packages turn on their own checks with it (wire's arena gives a Reset
// arena new memory), and tests expect poisoning and stale-handle panics
// only when they are compiled in.
const Checked = checked
