package naos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"unsafe"
)

// Limits bound what a receiver allocates for one message. Zero fields take
// the defaults.
type Limits struct {
	// MaxBytes bounds the data of one message: the bytes read after the
	// header and, separately, the bytes the receiver allocates for it
	// (default DefaultMaxBytes). The receiver's other memory for a message
	// (its traversal stack, the raw copies of arrays with pointers) is a
	// small multiple of it.
	MaxBytes int64
	// MaxElems bounds the length of any one slice, string or map (default
	// DefaultMaxElems), so that arrays of zero-size elements stay bounded.
	MaxElems int64
}

// Default limits.
const (
	DefaultMaxBytes = 1 << 30
	DefaultMaxElems = 1 << 28
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxElems <= 0 {
		l.MaxElems = DefaultMaxElems
	}
	return l
}

// ErrFormat is wrapped by every error about malformed input.
var ErrFormat = errors.New("naos: malformed message")

// MismatchError is returned by Recv when the message holds a value of
// another layout than the type asked for.
type MismatchError struct {
	Sent, Want     string // type names: the sender's, and the receiver's T
	SentFP, WantFP uint64
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("naos: type mismatch: message holds %s (fingerprint %016x), receiver wants %s (fingerprint %016x)", e.Sent, e.SentFP, e.Want, e.WantFP)
}

func formatErr(f string, a ...any) error {
	return fmt.Errorf("%w: "+f, append([]any{ErrFormat}, a...)...)
}

// recvOp is a pending step of the receiver's depth-first recovery; it
// mirrors the sender's sendOp, with the raw words the sender's memory held
// in the slot.
type recvOp struct {
	dst    unsafe.Pointer // the slot in the receiver's object, or the object (opValue), or the first element
	p      *plan
	w0, w1 uint64         // raw slot words: pointer/data/type word, length
	a, b   unsafe.Pointer // opValue: unused; opMap: key and value arrays; opIface: the concrete value; opElems: slab
	raw    []byte         // opElems: the raw bytes of the array
	i, n   int
	op     uint8
}

// decoder recovers one message.
type decoder struct {
	r        *reader
	lim      Limits
	sharing  bool
	compact  bool
	dense    bool  // flagDense: flat objects of pointer arrays come packed
	alloc    int64 // bytes allocated for this message
	stack    []recvOp
	seen     map[seenKey]unsafe.Pointer
	scratch  []byte
	strs     []byte // the rest of the current string chunk
	raws     [][]byte
	rawDepth int
	bits     []byte // ptrArray's bitmap
	own      reader // Decode's reader over a message in memory
	word     [8]byte
	head     [headerSize]byte
	name     [maxNameLen]byte

	// RecvInto's reusable array: a slice received into the slot at
	// reuseAt whose elements are pointer-free lands in reuseData if its
	// length is at most reuseCap (once per message).
	reuseAt   unsafe.Pointer
	reuseData unsafe.Pointer
	reuseCap  int
	// A reused array of pointers to flat objects (RecvInto): its old
	// length, and the run of distinct objects its elements pointed to,
	// which the new elements reuse.
	reuseLen  int
	reuseObjs []unsafe.Pointer
	// flatReuse: an array of pointers to flat objects is being received
	// into the caller's array, whose old length is flatOld; flatTargets
	// (or dropReuse) decides which of its objects are reused.
	flatReuse bool
	flatOld   int
}

// readHeader reads and checks a message header, returning the flags and
// the data length (streamedLen if unknown).
func (d *decoder) readHeader(want *plan) (flags byte, n uint64, err error) {
	h := d.head[:]
	if err := d.r.header(h); err != nil {
		return 0, 0, err
	}
	if binary.LittleEndian.Uint32(h[0:]) != magic {
		return 0, 0, formatErr("bad magic %#x", binary.LittleEndian.Uint32(h[0:]))
	}
	if h[4] != version {
		return 0, 0, formatErr("version %d, want %d", h[4], version)
	}
	flags = h[5]
	if flags&^(flagSharing|flagCompact|flagDense) != 0 {
		return 0, 0, formatErr("unknown flags %#x", flags)
	}
	nl := int(binary.LittleEndian.Uint16(h[6:]))
	if nl > maxNameLen {
		return 0, 0, formatErr("type name of %d bytes", nl)
	}
	name := d.name[:]
	if err := d.r.full(name[:nl]); err != nil {
		return 0, 0, err
	}
	fp := binary.LittleEndian.Uint64(h[8:])
	n = binary.LittleEndian.Uint64(h[16:])
	if fp != want.fp {
		if n != streamedLen && n <= uint64(d.lim.MaxBytes) {
			// Skip the message so that the stream stays usable.
			if err := d.r.skip(int64(n), d.buf); err != nil {
				return 0, 0, err
			}
		}
		return 0, 0, &MismatchError{Sent: string(name[:nl]), Want: want.name, SentFP: fp, WantFP: want.fp}
	}
	if n != streamedLen && n > uint64(d.lim.MaxBytes) {
		return 0, 0, formatErr("data of %d bytes exceeds the limit of %d", n, d.lim.MaxBytes)
	}
	if !(want.kind == kSlice && want.elem.ptrFree) {
		// A larger buffer pays for messages of many small objects; an
		// array of pointer-free elements is read straight into its
		// destination instead, past whatever the buffer holds.
		d.r.fit(n)
	}
	return flags, n, nil
}

// decode reads one message whose root is a value of plan p, into dst (a
// zeroed value of p's type).
func (d *decoder) decode(dst unsafe.Pointer, p *plan) error {
	flags, n, err := d.readHeader(p)
	if err != nil {
		return err
	}
	d.sharing = flags&flagSharing != 0
	d.compact = flags&flagCompact != 0
	d.dense = flags&flagDense != 0
	d.alloc = 0
	d.rawDepth = 0
	d.stack = d.stack[:0]
	if d.sharing {
		if d.seen == nil {
			d.seen = map[seenKey]unsafe.Pointer{}
		}
		clear(d.seen)
	}
	d.r.count = 0
	if n != streamedLen {
		d.r.limit = int64(n)
	} else {
		d.r.limit = d.lim.MaxBytes
	}
	if err := d.recover(dst, p); err != nil {
		d.stack = d.stack[:0]
		return err
	}
	if n != streamedLen && d.r.count != int64(n) {
		return formatErr("header says %d data bytes, the value used %d", n, d.r.count)
	}
	return nil
}

func (d *decoder) recover(root unsafe.Pointer, p *plan) error {
	if err := d.value(root, p); err != nil {
		return err
	}
	for len(d.stack) > 0 {
		op := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		var err error
		switch op.op {
		case opSlot:
			err = d.slot(op.dst, op.p, op.w0, op.w1)
		case opValue:
			err = d.value(op.dst, op.p)
		case opElems:
			err = d.elems(op)
		case opElemsPtrC:
			err = d.elemsCompact(op)
		case opMap:
			err = d.finishMap(op)
		case opIface:
			cp := (*plan)(op.b)
			reflect.NewAt(op.p.t, op.dst).Elem().Set(reflect.NewAt(cp.t, op.a).Elem())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// charge accounts n bytes (count elements) the receiver is about to
// allocate.
func (d *decoder) charge(count, size uintptr) error {
	if uint64(count) > uint64(d.lim.MaxElems) {
		return formatErr("length %d exceeds the limit of %d", count, d.lim.MaxElems)
	}
	hi, n := bits.Mul64(uint64(count), uint64(size))
	if hi != 0 || n > uint64(d.lim.MaxBytes-d.alloc) {
		return formatErr("allocation of %d x %d bytes exceeds the limit of %d", count, size, d.lim.MaxBytes)
	}
	if n > uint64(d.r.limit-d.r.count) {
		// Every allocated byte is a byte of data still to come.
		return formatErr("allocation of %d x %d bytes exceeds the %d bytes left in the message", count, size, d.r.limit-d.r.count)
	}
	d.alloc += int64(n)
	return nil
}

// chargeCompact is charge for the pointer array of a compact (NaosIt)
// slice of count elements, which the message carries as a bitmap: what
// must still come is its ceil(count/8) bytes (so a message can make the
// receiver allocate at most 64 bytes of pointers per byte, within
// MaxBytes).
func (d *decoder) chargeCompact(count uintptr) error {
	if uint64(count) > uint64(d.lim.MaxElems) {
		return formatErr("length %d exceeds the limit of %d", count, d.lim.MaxElems)
	}
	n := uint64(count) * uint64(ptrSize) // count ≤ MaxElems: no overflow
	if n > uint64(d.lim.MaxBytes-d.alloc) {
		return formatErr("allocation of %d x %d bytes exceeds the limit of %d", count, ptrSize, d.lim.MaxBytes)
	}
	if (uint64(count)+7)/8 > uint64(d.r.limit-d.r.count) {
		return formatErr("a bitmap of %d elements exceeds the %d bytes left in the message", count, d.r.limit-d.r.count)
	}
	d.alloc += int64(n)
	return nil
}

// value receives the object of plan p into dst: pointer-free objects land
// in dst with one read; others are read raw, their pointer-free bytes
// copied into dst and their slots queued.
func (d *decoder) value(dst unsafe.Pointer, p *plan) error {
	if p.size == 0 {
		return nil
	}
	if p.ptrFree {
		if err := d.r.full(unsafe.Slice((*byte)(dst), p.size)); err != nil {
			return err
		}
		return checkBools(dst, p, 1)
	}
	raw := d.buf(int(p.size))
	if err := d.r.full(raw); err != nil {
		return err
	}
	if p.inline {
		return d.inlineObj(dst, raw, p)
	}
	return d.fill(dst, raw, p)
}

// inlineObj is fill for an inline plan: it recovers the slots at once, in
// order, by recursion (their words are taken from raw first, so raw may be
// the scratch buffer the recursion reuses).
func (d *decoder) inlineObj(dst unsafe.Pointer, raw []byte, p *plan) error {
	for _, r := range p.runs {
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, r.off)), r.n), raw[r.off:r.off+r.n])
	}
	for _, off := range p.bools {
		if raw[off] > 1 {
			return formatErr("bool of value %d in %s", raw[off], p.name)
		}
	}
	var words [maxInlineSlots][2]uint64
	for i, s := range p.slots {
		words[i][0] = binary.LittleEndian.Uint64(raw[s.off:])
		if s.p.kind != kPtr {
			words[i][1] = binary.LittleEndian.Uint64(raw[s.off+8:])
		}
	}
	for i, s := range p.slots {
		if err := d.slot(unsafe.Add(dst, s.off), s.p, words[i][0], words[i][1]); err != nil {
			return err
		}
	}
	return nil
}

// fill copies the pointer-free bytes of raw (an object of plan p as the
// sender's memory held it) into dst and queues p's slots, last first.
func (d *decoder) fill(dst unsafe.Pointer, raw []byte, p *plan) error {
	for _, r := range p.runs {
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, r.off)), r.n), raw[r.off:r.off+r.n])
	}
	for _, off := range p.bools {
		if raw[off] > 1 {
			return formatErr("bool of value %d in %s", raw[off], p.name)
		}
	}
	for i := len(p.slots) - 1; i >= 0; i-- {
		s := p.slots[i]
		w0 := binary.LittleEndian.Uint64(raw[s.off:])
		var w1 uint64
		if s.p.kind == kSlice || s.p.kind == kString || s.p.kind == kIface {
			w1 = binary.LittleEndian.Uint64(raw[s.off+8:])
		}
		d.stack = append(d.stack, recvOp{dst: unsafe.Add(dst, s.off), p: s.p, w0: w0, w1: w1, op: opSlot})
	}
	return nil
}

func checkBools(dst unsafe.Pointer, p *plan, n int) error {
	if len(p.bools) == 0 {
		return nil
	}
	for i := 0; i < n; i++ {
		for _, off := range p.bools {
			if b := *(*byte)(unsafe.Add(dst, uintptr(i)*p.size+off)); b > 1 {
				// Leave no invalid bool behind in the value.
				*(*byte)(unsafe.Add(dst, uintptr(i)*p.size+off)) = 0
				return formatErr("bool of value %d in %s", b, p.name)
			}
		}
	}
	return nil
}

// Strings up to smallString bytes are carved out of shared chunks of
// stringChunk bytes, one allocation per chunk instead of one per string;
// such a string keeps its chunk reachable.
const (
	smallString = 128
	stringChunk = 8 << 10
)

// stringBytes returns n fresh bytes for a string's contents, never handed
// out again.
func (d *decoder) stringBytes(n int) []byte {
	if n > smallString {
		return make([]byte, n)
	}
	if len(d.strs) < n {
		d.strs = make([]byte, stringChunk)
	}
	b := d.strs[:n:n]
	d.strs = d.strs[n:]
	return b
}

// pushRaw returns a buffer of n bytes for the raw bytes of an array that
// is recovered by recursion; popRaw gives it back (last in, first out).
// Buffers up to rawKeep bytes are kept for the next messages.
func (d *decoder) pushRaw(n int) []byte {
	if d.rawDepth == len(d.raws) {
		d.raws = append(d.raws, nil)
	}
	b := d.raws[d.rawDepth]
	if cap(b) < n {
		b = make([]byte, n)
		if n <= rawKeep {
			d.raws[d.rawDepth] = b
		}
	}
	d.rawDepth++
	return b[:n]
}

func (d *decoder) popRaw() { d.rawDepth-- }

const rawKeep = 1 << 20

func (d *decoder) buf(n int) []byte {
	if cap(d.scratch) < n {
		d.scratch = make([]byte, n)
	}
	return d.scratch[:n]
}

func (d *decoder) sideWord() (uint64, error) {
	if err := d.r.full(d.word[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d.word[:]), nil
}

// newObject allocates a zeroed value of p's type.
func (d *decoder) newObject(p *plan) (unsafe.Pointer, error) {
	if err := d.charge(1, p.size); err != nil {
		return nil, err
	}
	return reflect.New(p.t).UnsafePointer(), nil
}

// slot recovers one slot whose sender-side words were w0, w1, writing the
// receiver's pointer into dst with a typed store (write barrier intact).
func (d *decoder) slot(dst unsafe.Pointer, p *plan, w0, w1 uint64) error {
	switch p.kind {
	case kPtr:
		if w0 == 0 {
			return nil
		}
		if d.sharing {
			if q, ok := d.seen[seenKey{uintptr(w0), p.elem}]; ok {
				*(*unsafe.Pointer)(dst) = q
				return nil
			}
		}
		q, err := d.newObject(p.elem)
		if err != nil {
			return err
		}
		if d.sharing {
			d.seen[seenKey{uintptr(w0), p.elem}] = q
		}
		*(*unsafe.Pointer)(dst) = q
		return d.value(q, p.elem)
	case kString:
		if w1 == 0 {
			return nil
		}
		if w1 > uint64(d.lim.MaxElems) {
			return formatErr("string of %d bytes exceeds the limit of %d", w1, d.lim.MaxElems)
		}
		if err := d.charge(uintptr(w1), 1); err != nil {
			return err
		}
		b := d.stringBytes(int(w1))
		if err := d.r.full(b); err != nil {
			return err
		}
		*(*string)(dst) = unsafe.String(&b[0], len(b))
		return nil
	case kSlice:
		if w0 == 0 {
			return nil
		}
		return d.slice(dst, p, w1)
	case kMap:
		if w0 == 0 {
			return nil
		}
		n, err := d.sideWord()
		if err != nil {
			return err
		}
		if n > uint64(d.lim.MaxElems) {
			return formatErr("map of %d entries exceeds the limit of %d", n, d.lim.MaxElems)
		}
		if n == 0 {
			reflect.NewAt(p.t, dst).Elem().Set(reflect.MakeMap(p.t))
			return nil
		}
		ks := reflect.New(p.keys.t).UnsafePointer()
		vs := reflect.New(p.vals.t).UnsafePointer()
		d.stack = append(d.stack,
			recvOp{dst: dst, p: p, a: ks, b: vs, n: int(n), op: opMap},
			recvOp{dst: vs, p: p.vals, w0: 1, w1: n, op: opSlot},
			recvOp{dst: ks, p: p.keys, w0: 1, w1: n, op: opSlot})
		return nil
	case kIface:
		if w0 == 0 {
			return nil
		}
		id, err := d.sideWord()
		if err != nil {
			return err
		}
		cp := registeredPlan(id)
		if cp == nil {
			return formatErr("interface %s: type id %#x is not registered", p.t, id)
		}
		if !cp.t.Implements(p.t) {
			return formatErr("interface %s: registered type %s does not implement it", p.t, cp.t)
		}
		q, err := d.newObject(cp)
		if err != nil {
			return err
		}
		d.stack = append(d.stack, recvOp{dst: dst, p: p, a: q, b: unsafe.Pointer(cp), op: opIface})
		return d.value(q, cp)
	}
	return formatErr("slot of kind %d", p.kind)
}

// slice receives a non-nil slice of n elements of plan p.elem.
func (d *decoder) slice(dst unsafe.Pointer, p *plan, n uint64) error {
	el := p.elem
	if n > uint64(d.lim.MaxElems) {
		return formatErr("slice of %d elements exceeds the limit of %d", n, d.lim.MaxElems)
	}
	var err error
	if d.compact && el.kind == kPtr {
		err = d.chargeCompact(uintptr(n))
	} else {
		err = d.charge(uintptr(n), el.size)
	}
	if err != nil {
		return err
	}
	var data unsafe.Pointer
	c := int(n)
	reused := false
	if dst == d.reuseAt && el.ptrFree && int(n) <= d.reuseCap {
		data, c, reused = d.reuseData, d.reuseCap, true // RecvInto: the caller's array
	} else if dst == d.reuseAt && d.flatReusable(el) && int(n) <= d.reuseCap {
		data, c = d.reuseData, d.reuseCap
		d.flatReuse, d.flatOld = true, d.reuseLen // flatTargets decides which objects to reuse
		if n == 0 {
			d.dropReuse(data, 0)
		}
	} else {
		data = reflect.MakeSlice(p.t, int(n), int(n)).UnsafePointer()
	}
	d.reuseAt, d.reuseData = nil, nil
	*(*sliceHeader)(dst) = sliceHeader{data: data, len: int(n), cap: c}
	if n == 0 {
		return nil
	}
	if d.compact && el.kind == kPtr {
		return d.compactPtrs(data, el, int(n))
	}
	size := uintptr(n) * el.size
	if el.ptrFree {
		b := unsafe.Slice((*byte)(data), size)
		err := d.r.full(b)
		if err == nil {
			err = checkBools(data, el, int(n))
		}
		if err != nil && reused && len(el.bools) > 0 {
			// The caller keeps this array: leave no invalid bool in it
			// (a short read or a bad bool may have left some).
			clear(b)
		}
		return err
	}
	if el.kind == kPtr && el.inline && !d.sharing {
		return d.ptrArray(data, el, int(n))
	}
	inl := el.inline && el.kind != kPtr
	var raw []byte
	if inl {
		// Recovered by recursion below: a buffer of the LIFO set.
		raw = d.pushRaw(int(size))
		defer d.popRaw()
	} else {
		raw = make([]byte, size) // kept by the stack entry
	}
	if err := d.r.full(raw); err != nil {
		return err
	}
	op := recvOp{dst: data, p: el, raw: raw, n: int(n), op: opElems}
	if el.inline && el.kind != kPtr {
		for i := 0; i < int(n); i++ {
			if err := d.inlineObj(unsafe.Add(data, uintptr(i)*el.size), raw[uintptr(i)*el.size:uintptr(i+1)*el.size], el); err != nil {
				return err
			}
		}
		return nil
	}
	if el.kind == kPtr && !d.sharing {
		// One slab for all the objects the array points to: they arrive
		// contiguous and stay so, as in Naos.
		k := 0
		for i := 0; i < int(n); i++ {
			if binary.LittleEndian.Uint64(raw[uintptr(i)*8:]) != 0 {
				k++
			}
		}
		if k > 0 && el.elem.size > 0 {
			if err := d.charge(uintptr(k), el.elem.size); err != nil {
				return err
			}
			op.a = reflect.MakeSlice(reflect.SliceOf(el.elem.t), k, k).UnsafePointer()
		}
	}
	return d.elems(op)
}

// ptrArray receives an array of n pointers to inline objects without
// sharing detection: of the pointer words it keeps only which are nil (a
// bitmap; the words pass through the scratch buffer in chunks), allocates
// the objects in one slab and recovers them in order.
func (d *decoder) ptrArray(data unsafe.Pointer, el *plan, n int) error {
	nb := (n + 7) / 8
	if cap(d.bits) < nb {
		d.bits = make([]byte, nb)
	}
	bm := d.bits[:nb]
	clear(bm)
	k := 0
	chunk := d.buf(64 << 10)
	for off := 0; off < n; {
		m := min(n-off, len(chunk)/8)
		c := chunk[:m*8]
		if err := d.r.full(c); err != nil {
			return err
		}
		for j := 0; j < m; j++ {
			if binary.LittleEndian.Uint64(c[j*8:]) != 0 {
				bm[(off+j)/8] |= 1 << ((off + j) % 8)
				k++
			}
		}
		off += m
	}
	if k == 0 {
		d.dropReuse(data, n)
		return nil
	}
	obj := el.elem
	if err := d.chargeFlat(k, obj); err != nil {
		d.dropReuse(data, n)
		return err
	}
	if obj.flat {
		return d.flatObjs(d.flatTargets(data, n, k, obj), bm, n, obj)
	}
	var slab unsafe.Pointer
	if obj.size > 0 {
		slab = reflect.MakeSlice(reflect.SliceOf(obj.t), k, k).UnsafePointer()
	}
	w := 0
	for i := 0; i < n; i++ {
		if bm[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		var q unsafe.Pointer
		if slab == nil {
			q = reflect.New(obj.t).UnsafePointer()
		} else {
			q = unsafe.Add(slab, uintptr(w)*obj.size)
		}
		w++
		*(*unsafe.Pointer)(unsafe.Add(data, uintptr(i)*ptrSize)) = q
		if err := d.value(q, obj); err != nil {
			return err
		}
	}
	return nil
}

// elems recovers element op.i of an array with pointers and queues the
// rest.
func (d *decoder) elems(op recvOp) error {
	el := op.p
	if el.inline && op.a != nil {
		// Pointers to inline objects, one slab: recover them all in order.
		for i := op.i; i < op.n; i++ {
			if binary.LittleEndian.Uint64(op.raw[uintptr(i)*8:]) == 0 {
				continue
			}
			obj := unsafe.Add(op.a, uintptr(op.w0)*el.elem.size)
			op.w0++
			*(*unsafe.Pointer)(unsafe.Add(op.dst, uintptr(i)*ptrSize)) = obj
			if err := d.value(obj, el.elem); err != nil {
				return err
			}
		}
		return nil
	}
	i := op.i
	// With a slab, w0 is the index of the next unused object in it.
	nonNil := op.a != nil && binary.LittleEndian.Uint64(op.raw[uintptr(i)*8:]) != 0
	if i+1 < op.n {
		next := op
		next.i++
		if nonNil {
			next.w0++
		}
		d.stack = append(d.stack, next)
	}
	dst := unsafe.Add(op.dst, uintptr(i)*el.size)
	raw := op.raw[uintptr(i)*el.size : uintptr(i+1)*el.size]
	if op.a != nil {
		if !nonNil {
			return nil
		}
		obj := unsafe.Add(op.a, uintptr(op.w0)*el.elem.size)
		*(*unsafe.Pointer)(dst) = obj
		return d.value(obj, el.elem)
	}
	return d.fill(dst, raw, el)
}

// compactPtrs receives a NaosIt array: the bitmap of non-nil elements,
// then their objects, which it allocates in one slab.
func (d *decoder) compactPtrs(data unsafe.Pointer, el *plan, n int) error {
	flat := el.elem.flat && !d.sharing
	var bm []byte
	if flat { // the bitmap is only read by flatObjs, before this returns
		if cap(d.bits) < (n+7)/8 {
			d.bits = make([]byte, (n+7)/8)
		}
		bm = d.bits[:(n+7)/8]
	} else {
		bm = make([]byte, (n+7)/8) // kept by the stack entry
	}
	if err := d.r.full(bm); err != nil {
		d.dropReuse(data, n)
		return err
	}
	k := 0
	for _, b := range bm {
		k += bits.OnesCount8(b)
	}
	if n%8 != 0 && bm[len(bm)-1]>>(n%8) != 0 {
		d.dropReuse(data, n)
		return formatErr("bitmap of %d elements has bits beyond its end", n)
	}
	if k == 0 {
		d.dropReuse(data, n)
		return nil
	}
	if err := d.chargeFlat(k, el.elem); err != nil {
		d.dropReuse(data, n)
		return err
	}
	if flat {
		return d.flatObjs(d.flatTargets(data, n, k, el.elem), bm, n, el.elem)
	}
	var slab unsafe.Pointer
	if el.elem.size > 0 {
		slab = reflect.MakeSlice(reflect.SliceOf(el.elem.t), k, k).UnsafePointer()
	}
	return d.elemsCompact(recvOp{dst: data, p: el, raw: bm, a: slab, n: n, op: opElemsPtrC})
}

func (d *decoder) elemsCompact(op recvOp) error {
	el := op.p
	// Skip nil elements.
	for op.i < op.n && op.raw[op.i/8]&(1<<(op.i%8)) == 0 {
		op.i++
	}
	if op.i >= op.n {
		return nil
	}
	i := op.i
	var obj unsafe.Pointer
	if op.a == nil { // zero-size objects: each its own (zero-size) allocation
		obj = reflect.New(el.elem.t).UnsafePointer()
	} else {
		obj = unsafe.Add(op.a, uintptr(op.w0)*el.elem.size) // w0: the next unused object of the slab
	}
	if i+1 < op.n {
		next := op
		next.i++
		next.w0++
		d.stack = append(d.stack, next)
	}
	*(*unsafe.Pointer)(unsafe.Add(op.dst, uintptr(i)*ptrSize)) = obj
	return d.value(obj, el.elem)
}

// finishMap builds the map from its received key and value arrays.
func (d *decoder) finishMap(op recvOp) error {
	p := op.p
	ks := reflect.NewAt(p.keys.t, op.a).Elem()
	vs := reflect.NewAt(p.vals.t, op.b).Elem()
	if ks.Len() != op.n || vs.Len() != op.n {
		return formatErr("map of %d entries with %d keys and %d values", op.n, ks.Len(), vs.Len())
	}
	m := reflect.MakeMapWithSize(p.t, op.n)
	for i := 0; i < op.n; i++ {
		k := ks.Index(i)
		if p.keyCmp && !k.Comparable() {
			return formatErr("map %s: key %d is not comparable", p.t, i)
		}
		m.SetMapIndex(k, vs.Index(i))
	}
	reflect.NewAt(p.t, op.dst).Elem().Set(m)
	return nil
}
