package naos

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Dense flat objects (messages with flagDense): the objects an array of
// pointers to flat objects points to are sent packed, each as its
// pointer-free bytes without padding (the plan's runs, in offset order),
// then for each string slot its length as a uvarint and its bytes. The
// words a receiver cannot use (the strings' data pointers, padding, and
// the lengths' high bytes) stay behind: a Pair{int32, string} with a
// 5-byte string is 10 bytes on the wire instead of 29. The object array's
// pointer array (or NaosIt's bitmap) is sent as before.

// emitCopy appends a copy of [p, p+n) to the send list through the
// staging blocks, whatever Options.Stage says: bytes the sender composes
// (a uvarint) have no memory of their own that could stay alive.
func (e *encoder) emitCopy(p unsafe.Pointer, n uintptr) error {
	e.total += int64(n)
	if e.total > e.maxBytes {
		return errTooLarge(e.maxBytes)
	}
	e.stage(p, n)
	return e.account(int64(n))
}

// denseObj sends the flat object at q packed, one range at a time: its
// runs from its own memory (staged when small), each string's length
// composed, each string's bytes from their own memory.
func (e *encoder) denseObj(q unsafe.Pointer, obj *plan) error {
	for _, r := range obj.runs {
		if err := e.emit(unsafe.Add(q, r.off), r.n); err != nil {
			return err
		}
	}
	var v [binary.MaxVarintLen64]byte
	for _, s := range obj.slots {
		sh := (*stringHeader)(unsafe.Add(q, s.off))
		k := binary.PutUvarint(v[:], uint64(sh.len))
		if err := e.emitCopy(unsafe.Pointer(&v[0]), uintptr(k)); err != nil {
			return err
		}
		if err := e.emit(sh.data, uintptr(sh.len)); err != nil {
			return err
		}
	}
	return nil
}

// densePtrs sends the objects ptrs point to (nil elements are skipped),
// packed, in order: stageDense for runs of objects that go to staging
// whole, denseObj for the others.
func (e *encoder) densePtrs(ptrs []unsafe.Pointer, obj *plan) error {
	for i := 0; i < len(ptrs); i++ {
		k, err := e.stageDense(ptrs[i:], obj)
		if err != nil {
			return err
		}
		if i += k; i == len(ptrs) {
			break
		}
		if q := ptrs[i]; q != nil {
			if err := e.denseObj(q, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// denseRoom is the least room stageDense wants in the current block
// before it starts a new one.
const denseRoom = 512

// stageDense writes the objects ptrs point to packed into the current
// staging block while each fits whole (its strings within Options.Stage)
// and within the message's byte budget, with the block, its offset and
// the budget in locals. It returns how many elements of ptrs it consumed.
func (e *encoder) stageDense(ptrs []unsafe.Pointer, obj *plan) (int, error) {
	st := &e.st
	if obj.packed > stageBlock/4 {
		return 0, nil
	}
	tail := st.tail
	if st.bi < len(st.blocks) && stageBlock-st.bo < denseRoom {
		st.bi++
		st.bo = 0
		tail = false
	}
	if st.bi == len(st.blocks) {
		st.blocks = append(st.blocks, make([]byte, stageBlock))
		st.bo = 0
		tail = false
	}
	st.tail = tail // false if the staging position moved
	blk := st.blocks[st.bi][:stageBlock]
	start := st.bo
	bo := start
	end := stageBlock
	if left := e.maxBytes - e.total; left < int64(end-bo) {
		end = bo + int(max(left, 0))
	}
	packed := obj.packed
	maxStr := int(st.max)
	k := 0
	if len(obj.slots) == 1 && len(obj.runs) == 1 {
		// Pair: one run, one string.
		r := obj.runs[0]
		off := obj.slots[0].off
		for ; k < len(ptrs); k++ {
			q := ptrs[k]
			if q == nil {
				continue
			}
			sh := (*stringHeader)(unsafe.Add(q, off))
			m := sh.len
			if m > maxStr || end-bo < packed+binary.MaxVarintLen32+m {
				break
			}
			putRun(blk[bo:bo+packed], unsafe.Add(q, r.off))
			bo += packed
			if m < 0x80 {
				blk[bo] = byte(m)
				bo++
			} else {
				bo += binary.PutUvarint(blk[bo:], uint64(m))
			}
			if m > 0 {
				bo += copy(blk[bo:bo+m], unsafe.Slice((*byte)(sh.data), m))
			}
		}
	} else {
		for ; k < len(ptrs); k++ {
			q := ptrs[k]
			if q == nil {
				continue
			}
			n := packed
			for _, s := range obj.slots {
				m := (*stringHeader)(unsafe.Add(q, s.off)).len
				if m > maxStr {
					n = end - bo + 1
					break
				}
				n += binary.MaxVarintLen32 + m
			}
			if end-bo < n {
				break
			}
			if len(obj.runs) == 1 {
				putRun(blk[bo:bo+packed], unsafe.Add(q, obj.runs[0].off))
				bo += packed
			} else {
				for _, r := range obj.runs {
					bo += copy(blk[bo:bo+int(r.n)], unsafe.Slice((*byte)(unsafe.Add(q, r.off)), r.n))
				}
			}
			for _, s := range obj.slots {
				sh := (*stringHeader)(unsafe.Add(q, s.off))
				bo += binary.PutUvarint(blk[bo:], uint64(sh.len))
				if sh.len > 0 {
					bo += copy(blk[bo:], unsafe.Slice((*byte)(sh.data), sh.len))
				}
			}
		}
	}
	n := bo - start
	if n == 0 {
		return k, nil
	}
	st.bo = bo
	if tail {
		e.iov[len(e.iov)-1].n += uintptr(n)
	} else {
		e.iov = append(e.iov, iovec{unsafe.Pointer(&blk[start]), uintptr(n)})
		st.tail = true
	}
	e.lastEnd = 0
	e.total += int64(n)
	return k, e.account(int64(n))
}

// putRun copies the len(dst) bytes at q into dst: 4, 8 and 16 bytes as
// one move.
func putRun(dst []byte, q unsafe.Pointer) {
	switch len(dst) {
	case 4:
		*(*[4]byte)(dst) = *(*[4]byte)(q)
	case 8:
		*(*[8]byte)(dst) = *(*[8]byte)(q)
	case 16:
		*(*[16]byte)(dst) = *(*[16]byte)(q)
	default:
		copy(dst, unsafe.Slice((*byte)(q), len(dst)))
	}
}

// chargeFlat charges the k objects of plan obj that an array of pointers
// points to, before they are allocated. Packed (dense) objects are
// charged against MaxBytes and against the least bytes they take in the
// message (their packed bytes and one byte per string length): a message
// can make the receiver allocate at most size/(packed+strings) bytes of
// objects per byte it sends (at most 16: a string header against its
// one-byte length), within MaxBytes.
func (d *decoder) chargeFlat(k int, obj *plan) error {
	if !d.packs(obj) {
		return d.charge(uintptr(k), obj.size)
	}
	if uint64(k) > uint64(d.lim.MaxElems) {
		return formatErr("length %d exceeds the limit of %d", k, d.lim.MaxElems)
	}
	hi, n := bits.Mul64(uint64(k), uint64(obj.size))
	if hi != 0 || n > uint64(d.lim.MaxBytes-d.alloc) {
		return formatErr("allocation of %d x %d bytes exceeds the limit of %d", k, obj.size, d.lim.MaxBytes)
	}
	if hi, least := bits.Mul64(uint64(k), uint64(obj.packed+len(obj.slots))); hi != 0 || least > uint64(d.r.limit-d.r.count) {
		return formatErr("%d objects of at least %d bytes exceed the %d bytes left in the message", k, obj.packed+len(obj.slots), d.r.limit-d.r.count)
	}
	d.alloc += int64(n)
	return nil
}

// packs reports whether the objects of plan obj that an array of
// pointers points to come packed.
func (d *decoder) packs(obj *plan) bool {
	return d.dense && obj.dense && obj.flat && !d.sharing
}

// denseObjs recovers the packed objects of an array of n pointers to
// flat objects (bm marks the non-nil elements) into f, in order: the
// objects lying whole in the read buffer by denseBatch, the others the
// checked way one range at a time.
func (d *decoder) denseObjs(f flatDst, bm []byte, n int, obj *plan) error {
	defer func() {
		if f.objs != nil {
			clear(f.objs)
			d.reuseObjs = f.objs[:0]
		}
	}()
	w := 0
	for i := 0; i < n; i++ {
		if i, w = d.denseBatch(&f, bm, i, n, w, obj); i == n {
			break
		}
		// Element i is not nil and was not taken from the buffer.
		q := f.obj(i, w)
		w++
		f.set(i, q)
		raw, err := d.take(obj.packed)
		if err != nil {
			return err
		}
		for _, off := range obj.pbools {
			if raw[off] > 1 {
				return formatErr("bool of value %d in %s", raw[off], obj.name)
			}
		}
		o := 0
		for _, r := range obj.runs {
			o += copy(unsafe.Slice((*byte)(unsafe.Add(q, r.off)), r.n), raw[o:])
		}
		for _, s := range obj.slots {
			m, err := d.uvarint()
			if err != nil {
				return err
			}
			if m == 0 {
				*(*string)(unsafe.Add(q, s.off)) = "" // q may be a reused object
				continue
			}
			if m > uint64(d.lim.MaxElems) {
				return formatErr("string of %d bytes exceeds the limit of %d", m, d.lim.MaxElems)
			}
			if err := d.charge(uintptr(m), 1); err != nil {
				return err
			}
			b := d.stringBytes(int(m))
			if err := d.r.full(b); err != nil {
				return err
			}
			*(*string)(unsafe.Add(q, s.off)) = unsafe.String(&b[0], len(b))
		}
	}
	return nil
}

// uvarint reads a string length: a uvarint of at most 10 bytes that fits
// in 64 bits.
func (d *decoder) uvarint() (uint64, error) {
	var x uint64
	for s := uint(0); s < 70; s += 7 {
		b, err := d.take(1)
		if err != nil {
			return 0, err
		}
		if s == 63 && b[0] > 1 {
			break
		}
		x |= uint64(b[0]&0x7f) << s
		if b[0] < 0x80 {
			return x, nil
		}
	}
	return 0, formatErr("string length overflows 64 bits")
}

// denseBatch is flatBatch for packed objects: it receives elements i,
// i+1, ... while each non-nil one's packed bytes, string lengths and
// strings lie whole in the read buffer and pass every check of the
// checked way. It returns the index of the first non-nil element it did
// not take (n if none) and the number of objects used so far.
func (d *decoder) denseBatch(f *flatDst, bm []byte, i, n, w int, obj *plan) (int, int) {
	r := d.r
	buf := r.buf[:r.w]
	pos := r.r
	end := len(buf)
	if left := r.limit - r.count; left < int64(end-pos) {
		end = pos + int(max(left, 0))
	}
	strBudget := d.lim.MaxBytes - d.alloc
	maxStr := int(min(d.lim.MaxElems, 0x7f)) // one-byte lengths only
	packed := obj.packed
	chunk := d.strs // a local: carving a string stores nothing in the heap
	start := pos
	if len(obj.slots) == 1 && len(obj.runs) == 1 && len(obj.pbools) == 0 {
		// Pair: one run, one string.
		rn := obj.runs[0]
		off := obj.slots[0].off
		for ; i < n; i++ {
			if bm[i>>3]&(1<<(i&7)) == 0 {
				continue
			}
			if end-pos <= packed {
				break
			}
			m := int(buf[pos+packed])
			if m > maxStr || end-pos-packed-1 < m || int64(m) > strBudget {
				break // also a length of two or more bytes (m ≥ 0x80 > maxStr)
			}
			q := f.obj(i, w)
			putObj(q, rn, buf[pos:pos+packed])
			if m == 0 {
				*(*string)(unsafe.Add(q, off)) = "" // q may be a reused object
			} else {
				if len(chunk) < m {
					chunk = make([]byte, stringChunk)
				}
				b := chunk[:m:m]
				chunk = chunk[m:]
				copy(b, buf[pos+packed+1:])
				*(*string)(unsafe.Add(q, off)) = unsafe.String(&b[0], m)
			}
			f.set(i, q)
			w++
			strBudget -= int64(m)
			pos += packed + 1 + m
		}
	} else {
		var lens [maxInlineSlots]int
		for ; i < n; i++ {
			if bm[i>>3]&(1<<(i&7)) == 0 {
				continue
			}
			if end-pos < packed {
				break
			}
			raw := buf[pos : pos+packed : pos+packed]
			ok := true
			for _, off := range obj.pbools {
				ok = ok && raw[off] <= 1
			}
			o := pos + packed
			strs := 0
			for j := range obj.slots {
				if !ok || o >= end {
					ok = false
					break
				}
				m := int(buf[o])
				if m > maxStr || end-o-1 < m {
					ok = false // also a length of two or more bytes
					break
				}
				lens[j] = m
				strs += m
				o += 1 + m
			}
			if !ok || int64(strs) > strBudget {
				break
			}
			q := f.obj(i, w)
			if len(obj.runs) == 1 {
				putObj(q, obj.runs[0], raw)
			} else {
				o = 0
				for _, rn := range obj.runs {
					o += copy(unsafe.Slice((*byte)(unsafe.Add(q, rn.off)), rn.n), raw[o:])
				}
			}
			o = pos + packed
			for j, s := range obj.slots {
				m := lens[j]
				o++
				if m == 0 {
					*(*string)(unsafe.Add(q, s.off)) = "" // q may be a reused object
					continue
				}
				if len(chunk) < m {
					chunk = make([]byte, stringChunk)
				}
				b := chunk[:m:m]
				chunk = chunk[m:]
				copy(b, buf[o:o+m])
				o += m
				*(*string)(unsafe.Add(q, s.off)) = unsafe.String(&b[0], m)
			}
			f.set(i, q)
			w++
			strBudget -= int64(strs)
			pos = o
		}
	}
	d.strs = chunk
	d.alloc = d.lim.MaxBytes - strBudget
	r.count += int64(pos - start)
	r.r = pos
	return i, w
}

// putObj copies the packed bytes raw of a one-run object into its run
// at q: 4, 8 and 16 bytes as one move.
func putObj(q unsafe.Pointer, rn run, raw []byte) {
	switch len(raw) {
	case 4:
		*(*[4]byte)(unsafe.Add(q, rn.off)) = [4]byte(raw)
	case 8:
		*(*[8]byte)(unsafe.Add(q, rn.off)) = [8]byte(raw)
	case 16:
		*(*[16]byte)(unsafe.Add(q, rn.off)) = [16]byte(raw)
	default:
		copy(unsafe.Slice((*byte)(unsafe.Add(q, rn.off)), rn.n), raw)
	}
}
