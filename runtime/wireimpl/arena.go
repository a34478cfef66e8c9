package wireimpl

import (
	"sync/atomic"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Arena owns everything a batch of messages needs: the bytes of copied
// fields, the message structs and list backing arrays, and the mem.Buf
// references that zero-copy fields and decoded messages hold. It is reset
// in one step per batch (Reset), which releases every reference; after
// warm-up a steady workload allocates nothing from the Go heap, because
// chunks and slabs are kept and reused across resets.
//
// An Arena is used by one goroutine at a time. Every message made by a New
// function, every value it returns (slices from getters, lists, nested
// messages) and every decoded field is valid only until the next Reset.
type Arena struct {
	// Threshold is the copy threshold: a bytes or string value shorter than
	// Threshold is copied into the arena; a value of at least Threshold
	// bytes that lies in registered memory (mem.Recover) is held zero-copy.
	// 0 zero-copies every non-empty registered value; CopyAll copies
	// everything. NewArena sets DefaultThreshold. It may be changed between
	// batches; each field is decided when it is set (or decoded).
	Threshold int
	// Limit bounds the memory (bytes) that decoding may make the arena
	// grow to; exceeding it fails the decode with ErrArenaLimit.
	// NewArena sets DefaultArenaLimit; 0 means no limit.
	Limit int
	// WriteTyped makes every message made by New after it is set write
	// itself in the typed header form (docs/WIRE_FORMAT.md), so that a
	// reader of an older schema can keep the fields it does not know and
	// write them back. Messages with kept unknown fields are written typed
	// regardless.
	WriteTyped bool
	// BorrowInput makes Decode (and a generated message's Decode) borrow
	// the caller's reference on the input instead of taking the arena's
	// own: the caller promises to keep its reference on every input it
	// decodes, unreleased, until the arena's next Reset (as an aliasing
	// decoder such as vtprotobuf's UnmarshalVTUnsafe requires), and the
	// decode does no reference-count work. Zero-copy fields and values
	// sent from them rely on the caller's reference exactly as they would
	// on the arena's. DecodeBytes, DecodeSegments and Hold are unchanged.
	// The checked build (-tags cfcheck) verifies the promise: Reset
	// returns an error wrapping mem's use-after-release error when a
	// borrowed input was released before it.
	BorrowInput bool

	// copied bytes: bump allocation over reused chunks
	chunks [][]byte
	cur    []byte // chunks[ci] (nil before the first chunk)
	ci     int
	// batch: off (the bytes of cur handed out) and szFor, which every
	// Reset clears (one store of the struct: Reset's inlining budget).
	batch

	refs  []mem.Buf  // references released at Reset
	in    mem.Buf    // the reference of the batch's first decoded input (BeginDecode), released at Reset
	slabs []*slabHdr // the header of a *slab[T] by Type id (ids are unique per T); &noSlab until used
	made  []*slabHdr // every slab with a chunk (reset rewinds them)
	epoch uint64     // advanced by Reset
	grown int        // bytes of chunks and slabs allocated so far
	// moved: a slab or the copied bytes moved past their first chunk
	// since the last Reset (set by their slow paths); Reset must then
	// rewind them (reset).
	moved bool

	// borrowed: the inputs decoded under BorrowInput in this batch, in the
	// checked build only (Reset checks that they are still live).
	borrowed []mem.Buf
	// lent: the values set with SetBorrowed or AppendBorrowed in this
	// batch and their checksums, in the checked build only (borrow.go).
	lent []lentValue
	// lentAt: the index in lent of each field's record (checked build), so
	// that re-setting a field replaces its record instead of adding one.
	lentAt map[*Bytes]int
	// opBase, opFix, opZFix: the one-pass SerializeSGA's provisional base
	// of the copied values and its scratch of entry offsets, kept for
	// their capacity (fast_encode_onepass.go).
	opBase int
	opZFix []uint32

	silentN, silentBytes uint64 // see SilentCopies

	// lastSrc: the most recent registered decoded input (see Bytes.Set);
	// its buf's window is exactly its data (Bytes.Set and BytesList.Append
	// narrow it with SliceTrusted to a range they checked within data).
	lastSrc *source
	srcs    slab[source] // decoded inputs (one per Decode): a slab of its own, no Type lookup
	// src0 is the record of the batch's first registered input when
	// BeginDecode's common case decodes it; in use exactly when lastSrc
	// points to it (its a is a once set, its segs always nil).
	src0 source

	// szDirect: szFor's sizes came from the direct path (fast_encode.go),
	// so its Serialize may take it (a message tree with kept unknown fields
	// is sized, and must be written, by the Sizer/Encoder path).
	szDirect bool
	sz       Sizes
	szErr    error

	sizer   Sizer
	enc     Encoder
	dec     Decoder
	busyEnc bool
}

// batch is part of the state that every Reset clears (with Arena.lastSrc).
type batch struct {
	off   int   // the bytes of the current chunk (cur) handed out
	szFor *Core // the message whose Sizes were computed last, for Serialize
}

// NewArena returns an arena with DefaultThreshold and DefaultArenaLimit.
func NewArena() *Arena {
	return &Arena{Threshold: DefaultThreshold, Limit: DefaultArenaLimit}
}

// Reset ends a batch: it releases every reference the arena holds
// (zero-copy fields, decoded input buffers, Hold), and makes all copied
// bytes, messages and lists of the batch available for reuse. Messages and
// every slice obtained from them must not be used after Reset. It returns
// the first release error (a reference released twice elsewhere), after
// releasing all the others.
func (a *Arena) Reset() error { return a.resetWith((*Arena).reset) }

// resetWith is Reset, written so that it is inlined into its callers
// (TestResetInlinable): its common case is straight-line code in the
// caller, and everything else is slow (always reset), which it takes as a
// parameter because Go's inliner charges a call of a parameter 17 against
// its budget of 80 where it charges 57 for a call of a named function;
// with a direct call of reset the common case would not fit, nor would
// the callers that wrap Reset (wire.Arena.Reset, service's resetArena).
// Inlined with Reset's constant argument, the call is a call of reset
// through its static function value, on the uncommon path only. For the
// same budget the common case has one test for the slabs and the copied
// bytes (moved), clears off and szFor with one store (batch), and the
// checked build's test is a constant if (the inliner counts only the
// branch that is compiled).
//
// The common batch holds no reference (a decode under BorrowInput, a batch
// whose values all alias its input) and stayed on the first chunk of each
// slab and of the copied bytes: Reset then only advances the epoch, which
// rewinds every slab (a slab counts what it handed out in the epoch it
// records: see slabHdr.ep) and rewinds the copied bytes.
func (a *Arena) resetWith(slow func(*Arena) error) error {
	if mem.Checked {
		return slow(a)
	}
	if a.in.IsZero() && len(a.refs) == 0 && !a.moved {
		a.epoch++
		a.batch, a.lastSrc = batch{}, nil
		return nil
	}
	return slow(a)
}

// reset is Reset outside its common case: references to release, a slab
// or the copied bytes past their first chunk, or the checked build.
func (a *Arena) reset() error {
	var first error
	if !a.in.IsZero() {
		first = a.releaseInput()
	}
	if len(a.refs) != 0 {
		if err := mem.ReleaseAll(a.refs); err != nil && first == nil {
			first = err
		}
		a.refs = a.refs[:0] // the length only: no pointer store
	}
	if mem.Checked && len(a.borrowed) != 0 { // decode_begin.go (compiled out of the unchecked build)
		first = a.checkBorrowed(first) // after the releases: a borrowed input released early is then stale
	}
	if mem.Checked && len(a.lent) != 0 { // borrow.go (compiled out of the unchecked build)
		first = a.resetLent(first)
	}
	a.epoch++
	// Rewind every slab: a slab still on its first chunk only forgets what
	// it handed out (the new epoch does that; base and lim are already the
	// first chunk's).
	if a.moved || mem.Checked {
		for _, h := range a.made {
			if h.ci != 0 || mem.Checked {
				h.rewind()
			}
		}
		a.moved = false
	}
	if a.ci != 0 {
		a.ci, a.cur = 0, a.chunks[0]
	}
	a.batch, a.lastSrc = batch{}, nil
	return first
}

// releaseInput is Reset's release of the input's reference (BeginDecode),
// out of line, so that a batch without one (a decode under BorrowInput, a
// builder's batch) does not pay for it.
func (a *Arena) releaseInput() error {
	in := a.in
	a.in = mem.Buf{}
	if !in.TryRelease() {
		return in.Release()
	}
	return nil
}

// Hold gives the arena one reference that it releases at Reset. The caller
// must not release b itself.
func (a *Arena) Hold(b mem.Buf) {
	if !b.IsZero() {
		a.refs = append(a.refs, b)
	}
}

// Held is the number of references the arena holds (released at Reset).
func (a *Arena) Held() int {
	if a.in.IsZero() {
		return len(a.refs)
	}
	return len(a.refs) + 1
}

// Grown is the number of bytes of chunks and slabs the arena has allocated
// from the Go heap since it was made (it does not shrink at Reset).
func (a *Arena) Grown() int { return a.grown }

// Copy returns a copy of p in arena memory, valid until Reset.
func (a *Arena) Copy(p []byte) []byte {
	dst := a.alloc(len(p))
	copy(dst, p)
	return dst
}

// copyInChunk is Copy's inlinable fast path: a copy of a non-empty p in
// the room left in the current chunk, or ok false (nothing done) when p is
// empty or does not fit.
func (a *Arena) copyInChunk(p []byte) (d []byte, ok bool) {
	n, off := len(p), a.off
	if n == 0 || n > len(a.cur)-off {
		return nil, false
	}
	d = a.cur[off : off+n : off+n]
	a.off = off + n
	copy(d, p)
	return d, true
}

// CopyString returns a copy of s in arena memory, valid until Reset.
func (a *Arena) CopyString(s string) []byte {
	dst := a.alloc(len(s))
	copy(dst, s)
	return dst
}

const (
	minChunk = 16 << 10
	maxChunk = 1 << 20
)

// alloc returns n bytes (len == cap == n, contents undefined) of arena memory.
func (a *Arena) alloc(n int) []byte {
	if off := a.off; n <= len(a.cur)-off && n > 0 {
		a.off = off + n
		return a.cur[off : off+n : off+n]
	}
	return a.allocSlow(n)
}

func (a *Arena) allocSlow(n int) []byte {
	if n == 0 {
		return nil
	}
	// Move on to a later chunk that fits (chunks are kept across resets).
	for a.ci+1 < len(a.chunks) {
		a.ci++
		a.cur, a.off = a.chunks[a.ci], 0
		a.moved = true // Reset must rewind the copied bytes
		if n <= len(a.cur) {
			a.off = n
			return a.cur[:n:n]
		}
	}
	size := minChunk
	if k := len(a.chunks); k > 0 {
		size = min(2*len(a.chunks[k-1]), maxChunk)
	}
	size = max(size, n)
	c := make([]byte, size)
	a.grown += size
	a.chunks = append(a.chunks, c)
	a.ci = len(a.chunks) - 1
	if a.ci != 0 {
		a.moved = true // Reset must rewind the copied bytes
	}
	a.cur, a.off = c, n
	return c[:n:n]
}

// Type is the allocation key of a message type (or any type) in arenas:
// generated code declares one per message, e.g.
//
//	var fooType = wire.NewType[Foo]()
//	func NewFoo(a *wire.Arena) *Foo { x := fooType.New(a); x.cf.Init(a); return x }
//
// Values of T come from per-arena slabs that are reused across Reset, so
// New allocates nothing in steady state.
type Type[T any] struct{ id uint } // uint: TryNew's bounds test needs no conversion

var typeCount atomic.Int64

// NewType registers T and returns its key. Call it once per type, at
// package initialization.
func NewType[T any]() *Type[T] { return &Type[T]{id: uint(typeCount.Add(1) - 1)} }

// New returns a zeroed *T from a's slab for T, valid until a's Reset.
func (t *Type[T]) New(a *Arena) *T {
	if p := t.TryNew(a); p != nil {
		return p
	}
	return t.NewSlow(a)
}

// TryNew is New's fast path, small enough to be inlined into a generated
// constructor: it returns a zeroed *T from the current chunk of a's slab
// for T, or nil when that cannot serve it (the slab is not made yet, its
// chunk is used up, or it was not used since the last Reset), and then the
// caller calls NewSlow.
func (t *Type[T]) TryNew(a *Arena) *T {
	if id := t.id; id < uint(len(a.slabs)) {
		h := a.slabs[id]
		n := h.n // h.used(a) written out (TryNew's inlining budget)
		if h.ep != a.epoch {
			n = 0
		}
		if n < h.lim {
			h.n, h.ep = n+1, a.epoch
			var z T
			p := (*T)(unsafe.Add(h.base, uintptr(n)*unsafe.Sizeof(z)))
			*p = z
			return p
		}
	}
	return nil
}

// TryNewRaw is TryNew without the zeroing: the *T it returns holds
// whatever the slab's memory held (a value of an earlier batch, or zeros).
// Generated constructors of messages that hold their lists' elements
// (BytesList.InitIn) call it and then zero every field but that storage,
// which no one reads before writing it. NewSlow's values are zeroed.
func (t *Type[T]) TryNewRaw(a *Arena) *T {
	if id := t.id; id < uint(len(a.slabs)) {
		h := a.slabs[id]
		n := h.n // h.used(a) written out (TryNew's inlining budget)
		if h.ep != a.epoch {
			n = 0
		}
		if n < h.lim {
			h.n, h.ep = n+1, a.epoch
			var z T
			return (*T)(unsafe.Add(h.base, uintptr(n)*unsafe.Sizeof(z)))
		}
	}
	return nil
}

// take is the type-independent fast path of every slab allocation: n > 0
// values of size bytes from the current chunk of the slab with Type id id,
// contents as the chunk holds them (the caller zeroes them when needed), or
// nil when that chunk cannot serve them (no slab yet, chunk used up, n 0).
// It is small enough to be inlined (newSliceRaw, the lists' Init).
func (a *Arena) take(id uint, n int, size uintptr) unsafe.Pointer {
	if id < uint(len(a.slabs)) {
		h := a.slabs[id]
		if k := h.used(a); n <= h.lim-k && n > 0 {
			h.n, h.ep = k+n, a.epoch
			return unsafe.Add(h.base, uintptr(k)*size)
		}
	}
	return nil
}

// NewSlow is New without the fast path (TryNew); it makes the slab, moves
// to the next chunk or rewinds after a Reset as needed.
func (t *Type[T]) NewSlow(a *Arena) *T {
	return &slabOf[T](a, int(t.id)).alloc(a, 1, true)[0]
}

// NewSlice returns a zeroed []T of length n from a's slab (len == cap == n),
// valid until a's Reset.
func (t *Type[T]) NewSlice(a *Arena, n int) []T {
	return slabOf[T](a, int(t.id)).alloc(a, n, true)
}

// newSliceRaw is NewSlice without zeroing: for list backing arrays whose
// elements are always fully assigned before they are read (Init returns
// them with length 0; Append assigns every field of the new element).
func (t *Type[T]) newSliceRaw(a *Arena, n int) []T {
	if p := a.take(t.id, n, unsafe.Sizeof(*new(T))); p != nil {
		return unsafe.Slice((*T)(p), n)
	}
	return t.newSliceRawSlow(a, n)
}

// newSliceRawSlow is newSliceRaw outside its fast path (take), out of line
// so that newSliceRaw stays inlinable.
//
//go:noinline
func (t *Type[T]) newSliceRawSlow(a *Arena, n int) []T {
	return slabOf[T](a, int(t.id)).alloc(a, n, false)
}

// tryNewSlice is NewSlice that respects a.Limit (for decoding).
func (t *Type[T]) tryNewSlice(a *Arena, n int) ([]T, bool) {
	s := slabOf[T](a, int(t.id))
	if a.Limit > 0 && s.used(a)+n > s.lim {
		var z T
		need := max(n, s.nextChunk()) * int(unsafe.Sizeof(z))
		if s.merge { // mergeChunks grows the slab only beyond its total
			need = max(n-s.vals, 0) * int(unsafe.Sizeof(z))
		}
		if a.grown+need > a.Limit {
			return nil, false
		}
	}
	return s.alloc(a, n, true), true
}

// slabHdr is the type-independent part of a slab, which Type.New's fast
// path and Reset use: n values of the current chunk (chunks[ci], lim
// values from base) are handed out in the arena's epoch ep; in a later
// epoch (after a Reset) none is (see used). A Reset rewinds a slab still on
// its first chunk by advancing the epoch, and rewinds a slab that moved
// past it to its first chunk (base0, lim0), so the first value after a
// Reset takes the fast path too; a slab that needed several chunks in the
// batch is merged into one by its next allocation instead (see merge).
type slabHdr struct {
	n    int
	lim  int
	base unsafe.Pointer
	ci   int
	ep   uint64 // the arena epoch that n counts in

	base0 unsafe.Pointer
	lim0  int
	// drop: the checked build's Reset left the slab without a chunk; its
	// next allocation forgets the old chunks (new values get new memory,
	// so that a value kept past Reset is detected).
	drop bool
	// merge: the batch before the last Reset needed more than the first
	// chunk; Reset left the slab without a current chunk, and its next
	// allocation replaces the chunks by one of their total size, so that a
	// steady workload's batches take New's fast path throughout.
	merge bool
	made  bool // in the arena's made list
	vals  int  // values of all the chunks
}

// used is the number of values of the current chunk handed out in a's
// current epoch: n when the slab recorded it in this epoch, else 0. A fast
// path that hands values out stores n and ep together; a slow path calls
// sync first.
func (h *slabHdr) used(a *Arena) int {
	n := h.n
	if h.ep != a.epoch {
		n = 0
	}
	return n
}

// sync makes n count in a's current epoch (0 after a Reset): the slow
// paths' first step, before they read or write n.
func (h *slabHdr) sync(a *Arena) {
	if h.ep != a.epoch {
		h.n, h.ep = 0, a.epoch
	}
}

// rewind makes the first chunk current again, with no value handed out
// (in the checked build: no chunk, see drop). Reset calls it for a slab
// that moved past its first chunk: unless its chunks hold more than
// maxMerge values, it is left with no current chunk, to be merged (see
// merge).
func (h *slabHdr) rewind() {
	if mem.Checked {
		h.n, h.ci = 0, 0
		h.base, h.lim, h.drop = nil, 0, true
		return
	}
	h.n, h.ci = 0, 0
	if h.vals <= maxMerge {
		h.base, h.lim, h.merge = nil, 0, true
		return
	}
	h.base, h.lim = h.base0, h.lim0 // too large to merge: chunk by chunk
}

// noSlab stands for every Type id whose slab an arena has not made yet: its
// lim is 0, so New takes the slow path, which makes the slab. It is never
// written.
var noSlab slabHdr

// slab is a bump allocator of T values over chunks reused across resets.
// Reset rewinds every slab the arena has made (an O(1) step per slab); a
// slab zeroes each value when it hands it out (lists' raw backing arrays
// aside), and Reset does not zero (each value is zeroed once per batch).
type slab[T any] struct {
	slabHdr // first: a *slabHdr of a slab[T] converts back to it
	chunks  [][]T
}

func slabOf[T any](a *Arena, id int) *slab[T] {
	if id < len(a.slabs) {
		if h := a.slabs[id]; h != &noSlab {
			return (*slab[T])(unsafe.Pointer(h))
		}
	}
	return newSlab[T](a, id)
}

func newSlab[T any](a *Arena, id int) *slab[T] {
	if id >= len(a.slabs) {
		k := max(id+1, int(typeCount.Load()))
		for len(a.slabs) < k {
			a.slabs = append(a.slabs, &noSlab)
		}
	}
	s := &slab[T]{}
	a.slabs[id] = &s.slabHdr
	return s
}

// setCur makes chunk ci current with n values handed out.
func (s *slab[T]) setCur(ci, n int) {
	c := s.chunks[ci]
	s.ci, s.n = ci, n
	s.lim, s.base = len(c), unsafe.Pointer(unsafe.SliceData(c))
}

func (s *slab[T]) nextChunk() int {
	if k := len(s.chunks); k > 0 {
		return min(2*len(s.chunks[k-1]), maxSlab)
	}
	return minSlab
}

const (
	minSlab = 16
	maxSlab = 4096
	// maxMerge bounds the values of a slab whose chunks are merged into one
	// (slabHdr.merge): a larger slab's batches move chunk by chunk (one
	// slow path per chunk of at least maxSlab values), without one
	// allocation of their total.
	maxMerge = 16 * maxSlab
	// maxSlabLen is the array length through which an inlined fast path
	// slices a slab chunk (a chunk of more values would not fit in memory;
	// the slice expression would panic, never reach past it).
	maxSlabLen = 1 << 32
)

// zero clears p: small slices element by element (inline stores), larger
// ones with clear.
func zero[T any](p []T) {
	if len(p) <= 4 {
		var z T
		for i := range p {
			p[i] = z
		}
		return
	}
	clear(p)
}

// alloc returns n values, zeroed when z is set.
func (s *slab[T]) alloc(a *Arena, n int, z bool) []T {
	if k := s.used(a); n <= s.lim-k && n > 0 {
		s.n, s.ep = k+n, a.epoch
		p := unsafe.Slice((*T)(unsafe.Add(s.base, uintptr(k)*unsafe.Sizeof(*new(T)))), n)
		if z {
			zero(p)
		}
		return p
	}
	return s.allocSlow(a, n, z)
}

func (s *slab[T]) allocSlow(a *Arena, n int, z bool) []T {
	if n == 0 {
		return nil
	}
	s.sync(a)
	if s.drop {
		var zt T
		for _, c := range s.chunks {
			a.grown -= len(c) * int(unsafe.Sizeof(zt))
		}
		clear(s.chunks)
		s.chunks, s.drop, s.vals = s.chunks[:0], false, 0
	}
	if s.merge {
		s.merge = false
		if s.n == 0 && s.ci == 0 {
			return s.mergeChunks(a, n) // new memory: zeroed
		}
	}
	// Move on to a later chunk that fits (chunks are kept across resets).
	for s.lim != 0 && s.ci+1 < len(s.chunks) {
		s.setCur(s.ci+1, 0)
		a.moved = true // Reset must rewind it
		if n <= s.lim {
			s.n = n
			p := s.chunks[s.ci][:n:n]
			if z {
				zero(p)
			}
			return p
		}
	}
	size := max(s.nextChunk(), n)
	c := make([]T, size)
	var zt T
	a.grown += size * int(unsafe.Sizeof(zt))
	s.chunks = append(s.chunks, c)
	s.vals += size
	s.setCur(len(s.chunks)-1, n)
	if s.ci == 0 {
		s.base0, s.lim0 = s.base, s.lim
	} else {
		a.moved = true // Reset must rewind it
	}
	if !s.made {
		s.made = true
		a.made = append(a.made, &s.slabHdr)
	}
	return c[:n:n]
}

// mergeChunks replaces the slab's chunks, none of whose values is handed
// out (the first allocation after Reset), by one chunk of their total size
// (at least n values), and returns its first n values (zeroed).
func (s *slab[T]) mergeChunks(a *Arena, n int) []T {
	var zt T
	size := max(s.vals, n)
	c := make([]T, size)
	a.grown += (size - s.vals) * int(unsafe.Sizeof(zt))
	clear(s.chunks)
	s.chunks, s.vals = append(s.chunks[:0], c), size
	s.setCur(0, n)
	s.base0, s.lim0 = s.base, s.lim
	return c[:n:n]
}
