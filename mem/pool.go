package mem

import (
	"bytes"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// PoolConfig configures NewPool. The zero value is a valid configuration.
type PoolConfig struct {
	// Name identifies the pool in errors and stats.
	Name string
	// MinClass and MaxClass are the smallest and largest item sizes, powers
	// of two in [MinClassLimit, MaxClassLimit] (defaults DefaultMinClass,
	// DefaultMaxClass; MinClass defaults to MaxClass when that is smaller).
	MinClass, MaxClass int
	// RegionSize is the bytes per region, a power of two >= SlotSize
	// (default DefaultRegionSize). A class whose item is larger uses
	// regions of one item.
	RegionSize int
	// MaxBytes limits the pool's region memory across classes (default
	// DefaultMaxBytes). Alloc beyond it returns an *ExhaustedError.
	MaxBytes int64
	// Concurrent selects atomic reference counts and a locked free list so
	// that the pool and its Bufs may be used from several goroutines. When
	// false (the default) everything about the pool must happen on one
	// goroutine and the hot paths use no atomics and no locks.
	Concurrent bool
	// Space is the address space to carve regions from (nil: DefaultSpace).
	Space *Space
}

// Pool hands out reference-counted items of registered memory in
// power-of-two size classes. See the package documentation for its
// concurrency rules.
type Pool struct {
	name        string
	space       *Space
	conc        bool
	minShift    uint8
	maxSize     int
	regionSize  int
	maxBytes    int64
	mu          sync.Mutex // Concurrent pools: guards everything below; others: Close/Stats only
	classes     []class
	bytes       int64
	inUse       int
	closed      bool
	exhaustions uint64
	decommitted int64        // bytes of regions whose memory Trim returned to the OS
	decommits   uint64       // regions Trim decommitted
	recommits   uint64       // decommitted regions committed again for an Alloc
	busy        atomic.Int32 // checked build: detects concurrent use of a single-goroutine pool
}

// class is one size class: its regions and a LIFO stack of free item ids.
// An item id is regionIndex<<perShift | itemIndex.
type class struct {
	size     int
	shift    uint8 // log2(size)
	perShift uint8 // log2(items per region)
	free     []uint32
	regions  []*region
	inUse    int
	allocs   uint64
	parked   []*region // decommitted regions (their items are off the free list), reused first by grow
}

// region is an array of equal items in 2 MiB-aligned slots of a space,
// with out-of-line reference counts and generations.
type region struct {
	ptr    unsafe.Pointer // first byte, SlotSize aligned
	length uintptr        // nitems << shift == nslots << SlotShift
	shift  uint8          // log2(item size)
	atomic bool           // refs and gen use atomics (Concurrent pools, and every pool in the checked build)
	idBase uint32         // class id of item 0
	refs   []int32        // per item; 0 = free
	gen    []uint32       // per item; incremented when the item is freed
	pool   *Pool
	class  *class
	slot   int // first slot in the space
	nslots int

	// Trim's bookkeeping (owner goroutine, or under Pool.mu).
	inUse       int32 // items allocated from this region
	touched     bool  // an item was allocated since the last Trim
	idleSince   int64 // Trim's clock when it first saw the region unused (0: not idle)
	decommitted bool  // its memory went back to the OS; its items are off the free list
	dropping    bool  // Trim is decommitting it
}

// NewPool makes a pool. It reserves no memory until the first Alloc of
// each class.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if cfg.Name == "" {
		cfg.Name = "pool"
	}
	if cfg.MaxClass == 0 {
		cfg.MaxClass = DefaultMaxClass
	}
	if cfg.MinClass == 0 {
		cfg.MinClass = min(DefaultMinClass, cfg.MaxClass)
	}
	if cfg.RegionSize == 0 {
		cfg.RegionSize = DefaultRegionSize
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	pow2 := func(n int) bool { return n > 0 && n&(n-1) == 0 }
	switch {
	case !pow2(cfg.MinClass) || cfg.MinClass < MinClassLimit || cfg.MinClass > MaxClassLimit:
		return nil, fmt.Errorf("%w: MinClass %d is not a power of two in [%d, %d]", ErrConfig, cfg.MinClass, MinClassLimit, MaxClassLimit)
	case !pow2(cfg.MaxClass) || cfg.MaxClass < cfg.MinClass || cfg.MaxClass > MaxClassLimit:
		return nil, fmt.Errorf("%w: MaxClass %d is not a power of two in [MinClass %d, %d]", ErrConfig, cfg.MaxClass, cfg.MinClass, MaxClassLimit)
	case !pow2(cfg.RegionSize) || cfg.RegionSize < SlotSize || cfg.RegionSize > MaxClassLimit:
		return nil, fmt.Errorf("%w: RegionSize %d is not a power of two in [%d, %d]", ErrConfig, cfg.RegionSize, SlotSize, MaxClassLimit)
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("%w: MaxBytes %d < 0", ErrConfig, cfg.MaxBytes)
	case cfg.MaxBytes/int64(cfg.MinClass) > 1<<32:
		return nil, fmt.Errorf("%w: MaxBytes %d allows more than 2^32 items of MinClass %d", ErrConfig, cfg.MaxBytes, cfg.MinClass)
	}
	if cfg.Space == nil {
		s, err := DefaultSpace()
		if err != nil {
			return nil, err
		}
		cfg.Space = s
	}
	p := &Pool{
		name:       cfg.Name,
		space:      cfg.Space,
		conc:       cfg.Concurrent,
		minShift:   uint8(bits.TrailingZeros(uint(cfg.MinClass))),
		maxSize:    cfg.MaxClass,
		regionSize: cfg.RegionSize,
		maxBytes:   cfg.MaxBytes,
	}
	for size := cfg.MinClass; size <= cfg.MaxClass; size <<= 1 {
		rb := max(size, cfg.RegionSize)
		p.classes = append(p.classes, class{
			size:     size,
			shift:    uint8(bits.TrailingZeros(uint(size))),
			perShift: uint8(bits.TrailingZeros(uint(rb / size))),
		})
	}
	return p, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Space returns the space the pool's regions live in.
func (p *Pool) Space() *Space { return p.space }

// Concurrent reports whether the pool may be used from several goroutines.
func (p *Pool) Concurrent() bool { return p.conc }

// MaxSize is the largest Alloc the pool serves (its MaxClass).
func (p *Pool) MaxSize() int { return p.maxSize }

// Alloc returns one reference (refs=1) to an item of the smallest class
// >= n, with a window of n bytes at its start. The contents are undefined
// (not zeroed; PoisonByte in the checked build). It returns ErrTooLarge if
// n > MaxSize(), an *ExhaustedError when the class cannot grow, ErrClosed
// after Close. The caller owns the reference and must Release it.
func (p *Pool) Alloc(n int) (Buf, error) {
	if uint(n) > uint(p.maxSize) {
		return Buf{}, p.sizeErr(n)
	}
	ci := 0
	if n > 1<<p.minShift {
		ci = bits.Len(uint(n-1)) - int(p.minShift)
	}
	if p.conc {
		p.mu.Lock()
		defer p.mu.Unlock() // also when the checked build panics
		return p.alloc(ci, n)
	}
	if checked {
		p.enter()
		defer p.exit()
	}
	return p.alloc(ci, n)
}

// Reserve grows the class that serves Alloc(size) until it has at least n
// free items, so that later Allocs do not pay for growth (mmap, mlock) on a
// latency-sensitive path. It returns the errors of Alloc (ErrTooLarge,
// *ExhaustedError, ErrClosed); items added before an error stay in the pool.
func (p *Pool) Reserve(size, n int) error {
	if uint(size) > uint(p.maxSize) {
		return p.sizeErr(size)
	}
	ci := 0
	if size > 1<<p.minShift {
		ci = bits.Len(uint(size-1)) - int(p.minShift)
	}
	if p.conc {
		p.mu.Lock()
		defer p.mu.Unlock()
	} else if checked {
		p.enter()
		defer p.exit()
	}
	if p.closed {
		return ErrClosed
	}
	c := &p.classes[ci]
	for len(c.free) < n {
		if err := p.grow(c); err != nil {
			return err
		}
	}
	return nil
}

// AllocCopy allocates len(data) bytes and copies data into them.
func (p *Pool) AllocCopy(data []byte) (Buf, error) {
	b, err := p.Alloc(len(data))
	if err != nil {
		return Buf{}, err
	}
	copy(b.Bytes(), data)
	return b, nil
}

func (p *Pool) sizeErr(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: Alloc(%d)", ErrInvalidSize, n)
	}
	return fmt.Errorf("%w: Alloc(%d) in pool %q (largest class %d)", ErrTooLarge, n, p.name, p.maxSize)
}

func (p *Pool) alloc(ci, n int) (Buf, error) {
	c := &p.classes[ci]
	if len(c.free) == 0 {
		if err := p.grow(c); err != nil {
			return Buf{}, err
		}
	}
	id := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	r := c.regions[id>>c.perShift]
	i := int32(id & (1<<c.perShift - 1))
	if checked {
		r.verifyPoison(i)
	}
	r.inUse++
	r.touched = true
	c.inUse++
	c.allocs++
	p.inUse++
	var gen uint32
	if r.atomic {
		atomic.StoreInt32(&r.refs[i], 1)
		gen = atomic.LoadUint32(&r.gen[i])
	} else {
		r.refs[i] = 1
		gen = r.gen[i]
	}
	return Buf{r: r, item: i, gen: gen, win: makeWin(0, uint32(n))}, nil
}

// grow adds one region to class c: a region Trim decommitted, committed
// again, or a new one.
func (p *Pool) grow(c *class) error {
	if p.closed {
		return ErrClosed
	}
	if k := len(c.parked); k > 0 {
		return p.recommit(c, c.parked[k-1])
	}
	rb := max(c.size, p.regionSize)
	if p.bytes+int64(rb) > p.maxBytes {
		p.exhaustions++
		return &ExhaustedError{Pool: p.name, Class: c.size, Limit: p.maxBytes}
	}
	nslots := rb >> SlotShift
	first, err := p.space.claim(nslots)
	if err != nil {
		p.exhaustions++
		return &ExhaustedError{Pool: p.name, Class: c.size, Limit: p.maxBytes, Cause: err}
	}
	nitems := rb >> c.shift
	r := &region{
		ptr:    unsafe.Add(p.space.base, uintptr(first)<<SlotShift),
		length: uintptr(rb),
		shift:  c.shift,
		atomic: p.conc || checked,
		idBase: uint32(len(c.regions)) << c.perShift,
		refs:   make([]int32, nitems),
		gen:    make([]uint32, nitems),
		pool:   p,
		class:  c,
		slot:   first,
		nslots: nslots,
	}
	c.regions = append(c.regions, r)
	items := len(c.regions) << c.perShift
	if cap(c.free) < items {
		// Capacity for every item of the class, so Release never allocates.
		nf := make([]uint32, len(c.free), items)
		copy(nf, c.free)
		c.free = nf
	}
	for j := nitems - 1; j >= 0; j-- {
		c.free = append(c.free, r.idBase+uint32(j))
	}
	if checked {
		fill(unsafe.Slice((*byte)(r.ptr), r.length), PoisonByte)
	}
	p.bytes += int64(rb)
	p.space.publish(first, nslots, r)
	return nil
}

// free returns item i to its class's free list. Its count just reached 0.
func (r *region) free(i int32) {
	p := r.pool
	if r.atomic {
		atomic.AddUint32(&r.gen[i], 1)
	} else {
		r.gen[i]++
	}
	if checked {
		r.poison(i)
	}
	if p.conc {
		p.mu.Lock()
		r.push(i)
		p.mu.Unlock()
		return
	}
	if checked {
		p.enter()
	}
	r.push(i)
	if checked {
		p.exit()
	}
}

func (r *region) push(i int32) {
	c := r.class
	c.free = append(c.free, r.idBase+uint32(i)) // never reallocates: see grow
	r.inUse--
	c.inUse--
	r.pool.inUse--
}

func (r *region) item(i int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(r.ptr, uintptr(i)<<r.shift)), 1<<r.shift)
}

func (r *region) poison(i int32) { fill(r.item(i), PoisonByte) }

// verifyPoison panics with a *UseAfterReleaseError when a free item's poison
// was overwritten (a write through a stale handle or slice).
func (r *region) verifyPoison(i int32) {
	item := r.item(i)
	if bytes.Count(item, poison[:]) != len(item) {
		panic(&UseAfterReleaseError{Op: "Alloc", Pool: r.pool.name, ItemSize: 1 << r.shift, Item: int(i)})
	}
}

var poison = [1]byte{PoisonByte}

func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// enter and exit detect overlapping use of a single-goroutine pool in the
// checked build.
func (p *Pool) enter() {
	if !p.busy.CompareAndSwap(0, 1) {
		panic(fmt.Errorf("%w: pool %q", ErrConcurrentUse, p.name))
	}
}

func (p *Pool) exit() { p.busy.Store(0) }

// InUse returns the number of items currently allocated (refs > 0). Tests
// assert it is back to 0 when they end.
func (p *Pool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse
}

// Close unmaps the pool's regions and returns their address space to the
// space; Recover then fails for them. It returns an *InUseError (ErrInUse)
// and changes nothing while items are still allocated, ErrClosed when
// already closed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.inUse > 0 {
		e := &InUseError{Pool: p.name, InUse: p.inUse}
		for i := range p.classes {
			if c := &p.classes[i]; c.inUse > 0 {
				e.Classes = append(e.Classes, c.stats())
			}
		}
		return e
	}
	p.closed = true
	var firstErr error
	for i := range p.classes {
		c := &p.classes[i]
		for _, r := range c.regions {
			unclaim := p.space.unclaim
			if r.decommitted {
				unclaim = p.space.unclaimDecommitted
			}
			if err := unclaim(r.slot, r.nslots); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		c.regions, c.free, c.parked = nil, nil, nil
	}
	p.bytes, p.decommitted = 0, 0
	return firstErr
}

// ClassStats describes one size class.
type ClassStats struct {
	Size    int    // item size
	Items   int    // items in the class's regions
	Free    int    // items on the free list
	InUse   int    // items allocated
	Regions int    // regions
	Bytes   int64  // region bytes
	Allocs  uint64 // Alloc calls served since the pool was made
	// Decommitted is the regions whose memory Trim returned to the OS
	// (their items count in Items, not in Free).
	Decommitted int
}

func (c *class) stats() ClassStats {
	items := len(c.regions) << c.perShift
	return ClassStats{
		Size:    c.size,
		Items:   items,
		Free:    len(c.free),
		InUse:   c.inUse,
		Regions: len(c.regions),
		Bytes:   int64(items) * int64(c.size),
		Allocs:  c.allocs,

		Decommitted: len(c.parked),
	}
}

// PoolStats describes a pool; Space describes the space it lives in
// (shared with other pools), including hugepage and mlock status.
type PoolStats struct {
	Name       string
	Concurrent bool
	Closed     bool
	InUse      int   // items allocated
	Items      int   // items in all regions
	Regions    int   // regions
	Bytes      int64 // region bytes (reserved: committed or decommitted)
	MaxBytes   int64 // limit
	// UsedBytes is the bytes of the items allocated now (item sizes, not
	// the windows asked for); CommittedBytes the region bytes backed by
	// memory (Bytes minus what Trim returned to the OS: DecommittedBytes).
	UsedBytes, CommittedBytes, DecommittedBytes int64
	// Decommits and Recommits count regions Trim returned to the OS and
	// regions committed again for an Alloc.
	Decommits, Recommits uint64
	Exhaustions          uint64       // Allocs that failed to grow
	Classes              []ClassStats // every class, smallest first
	Space                SpaceStats
}

// Stats returns a snapshot of the pool's accounting. For a single-goroutine
// pool, call it on the owner goroutine.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	st := PoolStats{
		Name:        p.name,
		Concurrent:  p.conc,
		Closed:      p.closed,
		InUse:       p.inUse,
		Bytes:       p.bytes,
		MaxBytes:    p.maxBytes,
		Exhaustions: p.exhaustions,
		Classes:     make([]ClassStats, len(p.classes)),

		CommittedBytes:   p.bytes - p.decommitted,
		DecommittedBytes: p.decommitted,
		Decommits:        p.decommits,
		Recommits:        p.recommits,
	}
	for i := range p.classes {
		cs := p.classes[i].stats()
		st.Classes[i] = cs
		st.Items += cs.Items
		st.Regions += cs.Regions
		st.UsedBytes += int64(cs.InUse) * int64(cs.Size)
	}
	p.mu.Unlock()
	st.Space = p.space.Stats()
	return st
}
