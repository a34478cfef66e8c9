package naos

import (
	"encoding/binary"
	"reflect"
	"unsafe"
)

// flatDst is where the objects of a received array of pointers to flat
// objects go: data is the pointer array; the w-th non-nil element gets
// the w-th object of slab, or objs[w], or, inplace, the object the element
// already points to (RecvInto, when every old element is reused where it
// is: no pointer is stored).
type flatDst struct {
	data    unsafe.Pointer
	slab    unsafe.Pointer
	objs    []unsafe.Pointer
	size    uintptr
	inplace bool
}

// obj returns the object of the w-th non-nil element, element i.
func (f *flatDst) obj(i, w int) unsafe.Pointer {
	switch {
	case f.inplace:
		return *(*unsafe.Pointer)(unsafe.Add(f.data, uintptr(i)*ptrSize))
	case f.slab != nil:
		return unsafe.Add(f.slab, uintptr(w)*f.size)
	}
	return f.objs[w]
}

// set makes element i point to q (a typed store, skipped in place).
func (f *flatDst) set(i int, q unsafe.Pointer) {
	if !f.inplace {
		*(*unsafe.Pointer)(unsafe.Add(f.data, uintptr(i)*ptrSize)) = q
	}
}

// flatTargets returns where the k non-nil elements of an array of n
// pointers to flat objects at data go: into the caller's objects if
// RecvInto reuses this array (in place when the new elements are all
// non-nil and the old first n are distinct consecutive objects, else the
// run of such objects reusableObjs finds, if there are k of them), else
// into a new slab.
func (d *decoder) flatTargets(data unsafe.Pointer, n, k int, obj *plan) flatDst {
	f := flatDst{data: data, size: obj.size}
	if d.flatReuse {
		d.flatReuse = false
		old := unsafe.Slice((*unsafe.Pointer)(data), max(n, d.flatOld))
		if k == n && d.flatOld >= n && consecutiveObjs(old[:n], obj.size) {
			clear(old[n:])
			f.inplace = true
			return f
		}
		d.reuseObjs = reusableObjs(d.reuseObjs[:0], data, d.flatOld, obj.size)
		clear(old)
		if k <= len(d.reuseObjs) {
			f.objs = d.reuseObjs
			return f
		}
		clear(d.reuseObjs)
		d.reuseObjs = d.reuseObjs[:0]
	}
	f.slab = reflect.MakeSlice(reflect.SliceOf(obj.t), k, k).UnsafePointer()
	return f
}

// dropReuse gives up reusing the objects of RecvInto's array at data
// (none of them are needed): its old elements are cleared.
func (d *decoder) dropReuse(data unsafe.Pointer, n int) {
	if d.flatReuse {
		d.flatReuse = false
		clear(unsafe.Slice((*unsafe.Pointer)(data), max(n, d.flatOld)))
	}
}

// consecutiveObjs reports whether every element of ptrs is non-nil and
// points size bytes after the previous one.
func consecutiveObjs(ptrs []unsafe.Pointer, size uintptr) bool {
	if len(ptrs) == 0 || ptrs[0] == nil {
		return len(ptrs) == 0
	}
	a := uintptr(ptrs[0])
	for _, q := range ptrs[1:] {
		a += size
		if uintptr(q) != a {
			return false
		}
	}
	return true
}

// flatObjs recovers the objects of an array of n pointers to flat objects
// (bm marks the non-nil elements) into f, in order, each followed by its
// strings: the work of value, inlineObj and slot for each object, in one
// loop (flatBatch) that takes the objects lying whole in the read buffer,
// and the checked way one range at a time for an object that straddles a
// read.
func (d *decoder) flatObjs(f flatDst, bm []byte, n int, obj *plan) error {
	if d.packs(obj) {
		return d.denseObjs(f, bm, n, obj)
	}
	defer func() {
		if f.objs != nil {
			clear(f.objs)
			d.reuseObjs = f.objs[:0]
		}
	}()
	var lens [maxInlineSlots]uint64
	w := 0
	for i := 0; i < n; i++ {
		if i, w = d.flatBatch(&f, bm, i, n, w, obj); i == n {
			break
		}
		// Element i is not nil and was not taken from the buffer.
		q := f.obj(i, w)
		w++
		f.set(i, q)
		raw, err := d.take(int(obj.size))
		if err != nil {
			return err
		}
		for _, off := range obj.bools {
			if raw[off] > 1 {
				return formatErr("bool of value %d in %s", raw[off], obj.name)
			}
		}
		for _, r := range obj.runs {
			copy(unsafe.Slice((*byte)(unsafe.Add(q, r.off)), r.n), raw[r.off:r.off+r.n])
		}
		for j, s := range obj.slots {
			lens[j] = binary.LittleEndian.Uint64(raw[s.off+8:])
		}
		// raw may be the read buffer: its words are taken, now read on.
		for j, s := range obj.slots {
			m := lens[j]
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

// flatBatch receives elements i, i+1, ... of flatObjs' array while each
// non-nil one's object and strings lie whole in the read buffer and pass
// every check of the checked way (bools, string lengths within
// smallString and MaxElems, the message's bytes, MaxBytes): the limits are
// turned into budgets once, so an object costs its copies and its typed
// stores. It returns the index of the first non-nil element it did not
// take (n if none) and the number of objects used so far.
func (d *decoder) flatBatch(f *flatDst, bm []byte, i, n, w int, obj *plan) (int, int) {
	r := d.r
	buf := r.buf[:r.w]
	pos := r.r
	end := len(buf)
	if left := r.limit - r.count; left < int64(end-pos) {
		end = pos + int(max(left, 0))
	}
	strBudget := d.lim.MaxBytes - d.alloc
	maxStr := min(smallString, int(min(d.lim.MaxElems, smallString)))
	size := int(obj.size)
	chunk := d.strs // a local: carving a string stores nothing in the heap
	start := pos
	if len(obj.slots) == 1 && len(obj.bools) == 0 {
		// One string (Pair): the loop below without its inner loops.
		off := int(obj.slots[0].off)
		for ; i < n; i++ {
			if bm[i>>3]&(1<<(i&7)) == 0 {
				continue
			}
			if end-pos < size {
				break
			}
			m := int(min(binary.LittleEndian.Uint64(buf[pos+off+8:pos+off+16]), smallString+1))
			if m > maxStr || end-pos-size < m || int64(m) > strBudget {
				break
			}
			q := f.obj(i, w)
			raw := buf[pos : pos+size]
			for _, sp := range obj.spans {
				copySpan(q, raw, sp)
			}
			if m == 0 {
				*(*string)(unsafe.Add(q, off)) = "" // q may be a reused object
			} else {
				if len(chunk) < m {
					chunk = make([]byte, stringChunk)
				}
				b := chunk[:m:m]
				chunk = chunk[m:]
				copy(b, buf[pos+size:])
				*(*string)(unsafe.Add(q, off)) = unsafe.String(&b[0], m)
			}
			f.set(i, q)
			w++
			strBudget -= int64(m)
			pos += size + m
		}
	} else {
		var lens [maxInlineSlots]int
		for ; i < n; i++ {
			if bm[i>>3]&(1<<(i&7)) == 0 {
				continue
			}
			if end-pos < size {
				break
			}
			raw := buf[pos : pos+size : pos+size]
			ok := true
			for _, off := range obj.bools {
				ok = ok && raw[off] <= 1
			}
			total := size
			for j, s := range obj.slots {
				m := binary.LittleEndian.Uint64(raw[s.off+8:])
				if m > uint64(maxStr) {
					ok = false
					break
				}
				lens[j] = int(m)
				total += int(m)
			}
			if !ok || end-pos < total || int64(total-size) > strBudget {
				break
			}
			q := f.obj(i, w)
			for _, sp := range obj.spans {
				copySpan(q, raw, sp)
			}
			o := pos + size
			for j, s := range obj.slots {
				m := lens[j]
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
			strBudget -= int64(total - size)
			pos += total
		}
	}
	d.strs = chunk
	d.alloc = d.lim.MaxBytes - strBudget
	r.count += int64(pos - start)
	r.r = pos
	return i, w
}

// copySpan copies span sp of an object's bytes raw into the object at q;
// the spans of Pair-like objects (a word before a string) are one load and
// one store.
func copySpan(q unsafe.Pointer, raw []byte, sp run) {
	switch {
	case sp.n == 8 && sp.off%8 == 0:
		*(*uint64)(unsafe.Add(q, sp.off)) = binary.NativeEndian.Uint64(raw[sp.off:])
	case sp.n == 4 && sp.off%4 == 0:
		*(*uint32)(unsafe.Add(q, sp.off)) = binary.NativeEndian.Uint32(raw[sp.off:])
	default:
		copy(unsafe.Slice((*byte)(unsafe.Add(q, sp.off)), sp.n), raw[sp.off:])
	}
}

// take returns the next n bytes of the message: a window of the read
// buffer when they lie whole in it (valid until the next read), else a
// copy in the scratch buffer.
func (d *decoder) take(n int) ([]byte, error) {
	r := d.r
	if r.w-r.r >= n && int64(n) <= r.limit-r.count {
		b := r.buf[r.r : r.r+n : r.r+n]
		r.r += n
		r.count += int64(n)
		return b, nil
	}
	b := d.buf(n)
	return b, d.r.full(b)
}

// flatReusable reports whether a slice of el received into RecvInto's
// array may reuse it and the objects it points to: el is a pointer to
// flat objects, sent without sharing detection or compaction.
func (d *decoder) flatReusable(el *plan) bool {
	return el.kind == kPtr && el.elem.flat && !d.sharing
}

// reusableObjs appends to dst the objects of size bytes that the first n
// elements of the pointer array at data point to and that may be reused:
// the non-nil elements in order, as long as each points size bytes after
// the previous one (as the objects of a slab Recv made do). Such objects
// are distinct and do not overlap, so no two new elements share one.
func reusableObjs(dst []unsafe.Pointer, data unsafe.Pointer, n int, size uintptr) []unsafe.Pointer {
	for _, q := range unsafe.Slice((*unsafe.Pointer)(data), n) {
		if q == nil {
			continue
		}
		if len(dst) > 0 && uintptr(q) != uintptr(dst[0])+uintptr(len(dst))*size {
			break
		}
		dst = append(dst, q)
	}
	return dst
}
