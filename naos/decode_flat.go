package naos

import (
	"encoding/binary"
	"unsafe"
)

// flatObjs recovers the objects of an array of n pointers to flat objects
// (bm marks the non-nil elements) into slab, or into the objects of objs
// if slab is nil, in order, each followed by
// its strings: the work of value, inlineObj and slot for each object, in
// one loop that takes each object's bytes from the read buffer where they
// lie whole.
func (d *decoder) flatObjs(data unsafe.Pointer, bm []byte, n int, slab unsafe.Pointer, objs []unsafe.Pointer, obj *plan) error {
	var lens [maxInlineSlots]uint64
	w := 0
	for i := 0; i < n; i++ {
		if bm[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		var q unsafe.Pointer
		if slab != nil {
			q = unsafe.Add(slab, uintptr(w)*obj.size)
		} else {
			q = objs[w]
		}
		w++
		*(*unsafe.Pointer)(unsafe.Add(data, uintptr(i)*ptrSize)) = q
		if d.takeFlat(q, obj) {
			continue
		}
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
	return el.kind == kPtr && el.elem.flat && !d.sharing && !d.compact
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

// takeFlat receives the flat object q and its strings straight from the
// read buffer when they lie whole in it and pass every check; it reports
// whether it did (else the caller goes the checked way, which reports the
// error).
func (d *decoder) takeFlat(q unsafe.Pointer, obj *plan) bool {
	r := d.r
	avail := r.w - r.r
	if avail < int(obj.size) {
		return false
	}
	raw := r.buf[r.r : r.r+int(obj.size)]
	for _, off := range obj.bools {
		if raw[off] > 1 {
			return false
		}
	}
	var lens [maxInlineSlots]int
	n := int(obj.size)
	for j, s := range obj.slots {
		m := binary.LittleEndian.Uint64(raw[s.off+8:])
		if m > smallString || m > uint64(d.lim.MaxElems) {
			return false
		}
		lens[j] = int(m)
		n += int(m)
	}
	strs := n - int(obj.size)
	if avail < n || int64(n) > r.limit-r.count || int64(strs) > d.lim.MaxBytes-d.alloc || int64(strs) > r.limit-r.count-int64(obj.size) {
		return false
	}
	for _, rn := range obj.runs {
		copy(unsafe.Slice((*byte)(unsafe.Add(q, rn.off)), rn.n), raw[rn.off:rn.off+rn.n])
	}
	o := r.r + int(obj.size)
	for j, s := range obj.slots {
		m := lens[j]
		if m == 0 {
			*(*string)(unsafe.Add(q, s.off)) = ""
			continue
		}
		b := d.stringBytes(m)
		copy(b, r.buf[o:o+m])
		o += m
		*(*string)(unsafe.Add(q, s.off)) = unsafe.String(&b[0], m)
	}
	d.alloc += int64(strs)
	r.r += n
	r.count += int64(n)
	return true
}
