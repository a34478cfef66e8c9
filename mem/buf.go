package mem

import (
	"math"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Buf is a small value handle to ONE reference on an item of registered
// memory, with a window (offset, length) into the item. The zero Buf means
// "no buffer". Copying a Buf does not add a reference: use Clone, and
// Release every reference exactly once.
type Buf struct {
	r    *region
	item int32
	gen  uint32 // the item's generation when the reference was taken
	// win is the window within the item: its start in the high 32 bits,
	// its length in the low 32. One field rather than two keeps Buf at
	// four fields, the most the compiler keeps in registers (SSA); with
	// five, every copy of a Buf goes through the stack (docs/MEMORY.md,
	// "Moved from godoc"; TestBufFitsInRegisters keeps the shape).
	win uint64
}

// window returns the window's start and length.
func (b Buf) window() (off, n uint32) { return uint32(b.win >> 32), uint32(b.win) }

func makeWin(off, n uint32) uint64 { return uint64(off)<<32 | uint64(n) }

// maxWin is the length of the array type through which Bytes slices a
// window: 2^32 on a 64-bit platform (every window length fits),
// math.MaxInt on a 32-bit one (the largest array it can declare; a longer
// window panics there, as unsafe.Slice would).
const maxWin = min(1<<32, math.MaxInt)

// Bytes returns the window. The slice aliases registered memory and is
// valid only while this reference (or another on the same item) is held;
// its capacity equals its length. The checked build panics with a
// *UseAfterReleaseError when the reference was released.
func (b Buf) Bytes() []byte {
	r := b.r
	if r == nil {
		return nil
	}
	if checked {
		b.mustLive("Bytes")
	}
	off, n := b.window()
	// shift is a log2 below 64: the mask only spares the compiler's
	// oversized-shift handling. The window is sliced through an array type
	// of maxWin bytes: on a 64-bit platform n (a uint32) is within it, so
	// no check is emitted (unsafe.Slice checks the length against the
	// address space).
	return (*[maxWin]byte)(unsafe.Add(r.ptr, uintptr(b.item)<<(r.shift&63)+uintptr(off)))[:n:n]
}

// Len is the window length.
func (b Buf) Len() int { return int(uint32(b.win)) }

// IsZero reports whether b is the zero Buf (no buffer).
func (b Buf) IsZero() bool { return b.r == nil }

// Slice returns a narrower window [off, off+n) of b's window on the SAME
// reference (no refcount change: release either b or the result, not both).
// It panics when the range is outside the window, like a slice expression;
// check untrusted values first.
//
// Slice is small enough to be inlined (the checked build's liveness check
// and the panic stay out of line).
func (b Buf) Slice(off, n int) Buf {
	start, length := b.window()
	if uint(off) > uint(length) || uint(n) > uint(length)-uint(off) {
		panic(sliceError{off, n, int(length)})
	}
	if checked && b.r != nil {
		b.mustLive("Slice")
	}
	b.win = makeWin(start+uint32(off), uint32(n))
	return b
}

// SliceTrusted is Slice for a range [off, off+n) that the caller has
// already checked to lie within b's window (a decoder that checked an
// entry against the bytes of b's window): the same narrower window on the
// SAME reference, small enough to be inlined into a decoder's hot path. The
// unchecked build does not check the range again, so a range outside the
// window gives a Buf whose Bytes lie outside it: use Slice for any range
// not checked first. The checked build (-tags cfcheck) checks it, and the
// reference's liveness, and panics like Slice.
func (b Buf) SliceTrusted(off, n int) Buf {
	if checked {
		return b.Slice(off, n)
	}
	b.win += uint64(off)<<32 - uint64(uint32(b.win)) + uint64(uint32(n))
	return b
}

// sliceError is the panic value of an out-of-range Buf.Slice (a value, so
// that Slice stays inlinable; it is built only when panicking).
type sliceError struct{ off, n, length int }

func (e sliceError) Error() string {
	return "mem: Buf.Slice(" + strconv.Itoa(e.off) + ", " + strconv.Itoa(e.n) + ") out of range for length " + strconv.Itoa(e.length)
}

// Clone adds a reference to the item and returns a handle to it with the
// same window. Both handles must be released. Clone of the zero Buf returns
// the zero Buf. Clone panics with a *UseAfterReleaseError when the item's
// count is zero (the reference was already released).
//
// The common case (a single-goroutine pool, a live item) is a short fast
// path (over the inliner's budget, so still a call); the checked build,
// Concurrent pools and the panic take cloneSlow.
func (b Buf) Clone() Buf {
	if r := b.r; !checked && r != nil && !r.atomic && r.refs[b.item] > 0 {
		r.refs[b.item]++
		return b
	}
	return b.cloneSlow()
}

// TryClone is Clone's common case, small enough to be inlined: when b is
// a live reference of a single-goroutine pool it adds a reference to the
// item and reports true (b is then a handle of its own, to be released
// like Clone's result); otherwise it changes nothing and reports false,
// and the caller calls Clone (the zero Buf, Concurrent pools, the checked
// build, a released reference).
func (b Buf) TryClone() bool {
	if r := b.r; !checked && r != nil && !r.atomic {
		if p := &r.refs[b.item]; *p > 0 {
			*p++
			return true
		}
	}
	return false
}

// TryCloneLive is TryClone with Check folded in, small enough to be
// inlined: when b is a live reference (its item's count above zero and
// its generation b's) of a single-goroutine pool it adds a reference to
// the item and reports true (b is then a handle of its own, to be released
// like Clone's result); otherwise it changes nothing and reports false.
// False does not mean that b is stale: the zero Buf, Concurrent pools and
// the checked build always report false, so the caller then calls Check
// (which tells a stale handle apart) and Clone.
func (b Buf) TryCloneLive() bool {
	if r := b.r; !checked && r != nil && !r.atomic {
		if p := &r.refs[b.item]; *p > 0 && r.gen[b.item] == b.gen {
			*p++
			return true
		}
	}
	return false
}

// SameItem reports whether b and o are handles on the same item of
// registered memory taken in the same generation of it (their windows may
// differ): while one of them is a live reference, so is the other's item,
// and a reference taken through either keeps both windows' bytes valid.
// Two zero Bufs are the same item. It reads no counts and is inlinable.
func (b Buf) SameItem(o Buf) bool {
	return b.r == o.r && b.item == o.item && b.gen == o.gen
}

// Follows reports whether b's window starts where o's ends, on the same
// item in the same generation (SameItem): the two windows are adjacent in
// memory, o's bytes then b's, and while a reference on the item is held
// both are valid. A zero Buf follows no Buf. It reads no counts and is
// inlinable (a sender merges such windows into one descriptor without
// resolving b's address).
func (b Buf) Follows(o Buf) bool {
	return b.r != nil && b.r == o.r && b.item == o.item && b.gen == o.gen &&
		uint32(b.win>>32) == uint32(o.win>>32)+uint32(o.win)
}

// cloneSlow is Clone outside its fast path.
func (b Buf) cloneSlow() Buf {
	r := b.r
	if r == nil {
		return b
	}
	if checked {
		b.mustLive("Clone")
	}
	if r.atomic {
		return b.cloneAtomic()
	}
	p := &r.refs[b.item]
	if *p <= 0 {
		b.panicStale("Clone")
	}
	*p++
	return b
}

func (b Buf) cloneAtomic() Buf {
	r := b.r
	if atomic.AddInt32(&r.refs[b.item], 1) <= 1 {
		atomic.AddInt32(&r.refs[b.item], -1)
		b.panicStale("Clone")
	}
	return b
}

// Release drops this reference. When the item's count reaches zero the
// item returns to its pool's free list and any slice of it must no longer
// be used. Release of the zero Buf is a no-op. Release returns
// ErrDoubleRelease when the item's count is already zero and a
// *UseAfterReleaseError (ErrUseAfterRelease) when the item was released and
// allocated again since this handle was made; neither changes any count.
//
// Dropping a live reference of a single-goroutine pool (the common case)
// is a short fast path (over the inliner's budget, so still a call; the
// last reference frees the item from it); Concurrent pools, the checked
// build and errors take releaseSlow.
func (b Buf) Release() error {
	if r := b.r; r != nil && !r.atomic && r.gen[b.item] == b.gen {
		if p := &r.refs[b.item]; *p > 1 {
			*p--
			return nil
		} else if *p == 1 {
			*p = 0
			r.free(b.item)
			return nil
		}
	}
	return b.releaseSlow()
}

// TryRelease is Release's common case, small enough to be inlined: when
// b is one of several live references of a single-goroutine pool it drops
// it and reports true; otherwise it changes nothing and reports false, and
// the caller calls Release (the last reference, the zero Buf, Concurrent
// pools, the checked build, errors).
func (b Buf) TryRelease() bool {
	if r := b.r; !checked && r != nil && !r.atomic {
		if p := &r.refs[b.item]; *p > 1 && r.gen[b.item] == b.gen {
			*p--
			return true
		}
	}
	return false
}

// ReleaseAll releases every reference in bufs, as Release would one by
// one, and sets each to the zero Buf. It returns the first error (see
// Release) after releasing all the others. Dropping a reference of a
// single-goroutine pool is done inline, without a call per reference (a
// call to free the item when it was the last).
func ReleaseAll(bufs []Buf) error {
	// The common cases without a spill: every reference live, of a
	// single-goroutine pool, dropped in place (its item freed when it was
	// the last); the first other one (an error, a Concurrent pool, the
	// checked build) hands the rest to releaseAll.
	for i := range bufs {
		b := &bufs[i]
		r := b.r
		if r == nil || r.atomic || r.gen[b.item] != b.gen {
			return releaseAll(bufs[i:])
		}
		rc := &r.refs[b.item]
		if *rc > 1 {
			*rc--
		} else if *rc == 1 {
			*rc = 0
			r.free(b.item)
		} else {
			return releaseAll(bufs[i:])
		}
		*b = Buf{}
	}
	return nil
}

// releaseAll is ReleaseAll from the first reference outside its common
// case on.
func releaseAll(bufs []Buf) error {
	var first error
	for i := range bufs {
		b := &bufs[i]
		if r := b.r; r != nil && !r.atomic && r.refs[b.item] > 1 && r.gen[b.item] == b.gen {
			r.refs[b.item]--
		} else if err := b.releaseSlow(); err != nil && first == nil {
			first = err
		}
		*b = Buf{}
	}
	return first
}

// releaseSlow is Release outside its fast path.
func (b Buf) releaseSlow() error {
	r := b.r
	if r == nil {
		return nil
	}
	if r.atomic {
		return b.releaseAtomic()
	}
	p := &r.refs[b.item]
	if *p <= 0 {
		return ErrDoubleRelease
	}
	if r.gen[b.item] != b.gen {
		return b.staleRelease()
	}
	*p--
	if *p == 0 {
		r.free(b.item)
	}
	return nil
}

func (b Buf) releaseAtomic() error {
	r := b.r
	p := &r.refs[b.item]
	for {
		old := atomic.LoadInt32(p)
		if old <= 0 {
			return ErrDoubleRelease
		}
		if atomic.LoadUint32(&r.gen[b.item]) != b.gen {
			return b.staleErr("Release")
		}
		if atomic.CompareAndSwapInt32(p, old, old-1) {
			if old == 1 {
				r.free(b.item)
			}
			return nil
		}
	}
}

// Refs returns the item's current reference count (0 for the zero Buf or
// a released item).
func (b Buf) Refs() int {
	r := b.r
	if r == nil {
		return 0
	}
	if r.atomic {
		return int(atomic.LoadInt32(&r.refs[b.item]))
	}
	return int(r.refs[b.item])
}

// Check reports, without panicking, whether b is still a live reference:
// nil for live handles and the zero Buf, a *UseAfterReleaseError otherwise.
// It works in every build.
func (b Buf) Check() error {
	if b.r == nil || b.live() {
		return nil
	}
	return b.staleErr("Check")
}

// Live reports whether b is a live reference: not the zero Buf, its
// item's count above zero and its generation b's. It is Check's test
// without building an error, small enough to be inlined.
func (b Buf) Live() bool { return b.r != nil && b.live() }

func (b Buf) live() bool {
	r := b.r
	if r.atomic {
		return atomic.LoadInt32(&r.refs[b.item]) > 0 && atomic.LoadUint32(&r.gen[b.item]) == b.gen
	}
	return r.refs[b.item] > 0 && r.gen[b.item] == b.gen
}

func (b Buf) mustLive(op string) {
	if !b.live() {
		b.panicStale(op)
	}
}

//go:noinline
func (b Buf) panicStale(op string) { panic(b.staleErr(op)) }

//go:noinline
func (b Buf) staleRelease() error { return b.staleErr("Release") }

func (b Buf) staleErr(op string) *UseAfterReleaseError {
	r := b.r
	e := &UseAfterReleaseError{Op: op, Pool: r.pool.name, ItemSize: 1 << r.shift, Item: int(b.item), Gen: b.gen}
	if r.atomic {
		e.Want, e.Refs = atomic.LoadUint32(&r.gen[b.item]), int(atomic.LoadInt32(&r.refs[b.item]))
	} else {
		e.Want, e.Refs = r.gen[b.item], int(r.refs[b.item])
	}
	return e
}

// Recover returns a NEW reference (+1) to the live item of registered
// memory that contains all of p, with a window of exactly p. It reports
// false, taking nothing, when p is empty, is not registered memory (Go
// heap, stack, other mappings), straddles two items, or lies in a free
// item. It is O(1): a range check per space and one table lookup. The
// reference follows the concurrency rules of the item's pool.
func Recover(p []byte) (Buf, bool) {
	// find and lookupRegion inline for the default space (the common
	// case): one range check, one slot load, the item's count.
	if len(p) != 0 && !checked {
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
		if s := defaultFast.Load(); s != nil {
			if off := addr - uintptr(s.base); off < s.size {
				r := s.slots[off>>SlotShift].Load()
				if r == nil || r.atomic {
					return recoverSlow(p)
				}
				off = addr - uintptr(r.ptr)
				if off >= r.length {
					return Buf{}, false
				}
				sh := r.shift & 63 // a log2 below 64: the mask spares the oversized-shift handling
				item := int32(off >> sh)
				ioff := off & (1<<sh - 1)
				if uintptr(len(p)) > 1<<sh-ioff {
					return Buf{}, false
				}
				rp := &r.refs[item]
				if *rp <= 0 {
					return Buf{}, false
				}
				*rp++
				return Buf{r: r, item: item, gen: r.gen[item], win: makeWin(uint32(ioff), uint32(len(p)))}, true
			}
		}
	}
	return recoverSlow(p)
}

// recoverSlow is Recover outside its inline case (other spaces, Concurrent
// pools, the checked build).
func recoverSlow(p []byte) (Buf, bool) {
	b, ok := find(p)
	if !ok {
		return Buf{}, false
	}
	r := b.r
	if r.atomic {
		rp := &r.refs[b.item]
		for {
			old := atomic.LoadInt32(rp)
			if old <= 0 {
				return Buf{}, false
			}
			if atomic.CompareAndSwapInt32(rp, old, old+1) {
				break
			}
		}
		b.gen = atomic.LoadUint32(&r.gen[b.item])
		return b, true
	}
	rp := &r.refs[b.item]
	if *rp <= 0 {
		return Buf{}, false
	}
	*rp++
	b.gen = r.gen[b.item]
	return b, true
}

// IsRegistered reports whether Recover(p) would succeed, taking no reference.
func IsRegistered(p []byte) bool {
	b, ok := find(p)
	if !ok {
		return false
	}
	if b.r.atomic {
		return atomic.LoadInt32(&b.r.refs[b.item]) > 0
	}
	return b.r.refs[b.item] > 0
}

// RefsOf returns the reference count of the live item of registered
// memory that contains all of p, taking no reference: 0 where Recover(p)
// would report false (p empty, not registered, straddling two items, or in
// a free item). The count is a snapshot: references of other goroutines
// may come and go right after it; a caller that alone can hand out new
// references to the item (holding the lock its readers take to Recover
// it) may rely on a count of 1 meaning it holds the only one.
func RefsOf(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	r := lookupRegion(addr)
	if r == nil {
		return 0
	}
	off := addr - uintptr(r.ptr)
	if off >= r.length {
		return 0
	}
	sh := r.shift & 63
	if ioff := off & (1<<sh - 1); uintptr(len(p)) > 1<<sh-ioff {
		return 0
	}
	n := atomic.LoadInt32(&r.refs[off>>sh])
	return int(max(n, 0))
}

// find locates the item holding p (without checking that it is live).
func find(p []byte) (Buf, bool) {
	if len(p) == 0 {
		return Buf{}, false
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	r := lookupRegion(addr)
	if r == nil {
		return Buf{}, false
	}
	off := addr - uintptr(r.ptr)
	if off >= r.length {
		return Buf{}, false
	}
	ioff := off & (1<<r.shift - 1)
	if uintptr(len(p)) > 1<<r.shift-ioff {
		return Buf{}, false
	}
	return Buf{r: r, item: int32(off >> r.shift), win: makeWin(uint32(ioff), uint32(len(p)))}, true
}
