package naos

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"unsafe"
)

// Message header: magic, version, flags, length of the sender's type name,
// the fingerprint of the root type, and the length of the data that
// follows the name (streamedLen when the sender pipelines and does not know
// it in advance).
const (
	headerSize  = 24
	magic       = 0x534f414e // "NAOS"
	version     = 1
	flagSharing = 1 << 0
	flagCompact = 1 << 1
	flagDense   = 1 << 2 // flat objects of pointer arrays are packed (dense.go)
	streamedLen = ^uint64(0)
	maxNameLen  = 512
)

// iovec is one entry of the send list: n bytes at base. Adjacent ranges
// are coalesced by extending n (a span may cover several heap objects; its
// base keeps the first one alive and the caller keeps the rest reachable).
type iovec struct {
	base unsafe.Pointer
	n    uintptr
}

// sendOp is a pending step of the sender's depth-first traversal.
type sendOp struct {
	addr unsafe.Pointer // the slot, or the first element of an array
	p    *plan          // the slot's plan, or the element plan for opElems*
	i, n int            // opElems*: next element, count
	op   uint8
}

const (
	opSlot      uint8 = iota // recover/send the slot at addr
	opElems                  // elements i..n-1 of an array with pointers
	opElemsPtrC              // compact pointer array: the objects of elements i..n-1
	opValue                  // receiver: fill the preallocated object
	opMap                    // receiver: build the map from its key and value arrays
	opIface                  // receiver: store the received concrete value in the interface
)

type seenKey struct {
	addr uintptr
	p    *plan
}

// encoder builds the send list of one message by a depth-first traversal.
type encoder struct {
	sharing, compact, coalesce bool
	dense                      bool // pack flat objects (flagDense)
	maxBytes                   int64
	st                         stager // stream path only (coalesce)

	iov     []iovec
	lastEnd uintptr
	total   int64 // bytes in the send list (after the header)
	side    []uint64
	keep    []any // values made for the message (map arrays, interface copies, bitmaps)
	stack   []sendOp
	seen    map[seenKey]struct{}
	head    [headerSize + maxNameLen]byte

	// Pipelining: every chunk bytes, flush hands the send list over.
	chunk int64
	since int64
	flush func(iov []iovec) ([]iovec, error)
}

func (e *encoder) reset() {
	clear(e.iov)
	e.iov = e.iov[:0]
	e.lastEnd = 0
	e.total = 0
	e.side = nil
	clear(e.keep)
	e.keep = e.keep[:0]
	e.stack = e.stack[:0]
	if e.seen != nil {
		clear(e.seen)
	}
	e.since = 0
	e.st.reset()
}

// emit appends [p, p+n) to the send list, coalescing it with the previous
// range when it starts where that one ends.
func (e *encoder) emit(p unsafe.Pointer, n uintptr) error {
	if n == 0 {
		return nil
	}
	e.total += int64(n)
	if e.total > e.maxBytes {
		return errTooLarge(e.maxBytes)
	}
	if a := uintptr(p); e.coalesce && a == e.lastEnd && len(e.iov) > 0 {
		e.iov[len(e.iov)-1].n += n
		e.lastEnd += n
	} else if n <= e.st.max {
		e.stage(p, n)
	} else {
		e.st.tail = false
		e.iov = append(e.iov, iovec{p, n})
		e.lastEnd = a + n
	}
	return e.account(int64(n))
}

func errTooLarge(max int64) error {
	return fmt.Errorf("naos: message exceeds %d bytes (a cycle? set Options.Sharing)", max)
}

// account counts n bytes added to the send list and, when pipelining,
// hands the list over every chunk bytes.
func (e *encoder) account(n int64) error {
	if e.chunk > 0 {
		e.since += n
		if e.since >= e.chunk {
			e.since = 0
			var err error
			if e.iov, err = e.flush(e.iov); err != nil {
				return err
			}
			e.lastEnd = 0
			e.st.tail = false
		}
	}
	return nil
}

// sideWord sends x: metadata the receiver cannot read from the objects
// themselves (a map's length, an interface's type id).
func (e *encoder) sideWord(x uint64) error {
	if len(e.side) == cap(e.side) {
		e.side = make([]uint64, 0, 64)
	}
	e.side = append(e.side, x)
	return e.emit(unsafe.Pointer(&e.side[len(e.side)-1]), 8)
}

// header fills the message header for root plan p and total data length n.
func (e *encoder) header(p *plan, n uint64) []byte {
	name := p.name
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	h := e.head[:headerSize+len(name)]
	binary.LittleEndian.PutUint32(h[0:], magic)
	h[4] = version
	h[5] = 0
	if e.sharing {
		h[5] |= flagSharing
	}
	if e.compact {
		h[5] |= flagCompact
	}
	if e.dense {
		h[5] |= flagDense
	}
	binary.LittleEndian.PutUint16(h[6:], uint16(len(name)))
	binary.LittleEndian.PutUint64(h[8:], p.fp)
	binary.LittleEndian.PutUint64(h[16:], n)
	copy(h[headerSize:], name)
	return h
}

// traverse adds the value of plan p at root (and everything reachable from
// it) to the send list, in depth-first order.
func (e *encoder) traverse(root unsafe.Pointer, p *plan) error {
	if err := e.value(root, p); err != nil {
		return err
	}
	for len(e.stack) > 0 {
		op := e.stack[len(e.stack)-1]
		e.stack = e.stack[:len(e.stack)-1]
		var err error
		switch op.op {
		case opSlot:
			err = e.slot(op.addr, op.p)
		case opElems:
			if op.p.inline {
				for i := op.i; i < op.n && err == nil; i++ {
					err = e.inlineSlots(unsafe.Add(op.addr, uintptr(i)*op.p.size), op.p)
				}
				break
			}
			if op.i+1 < op.n {
				e.stack = append(e.stack, sendOp{addr: op.addr, p: op.p, i: op.i + 1, n: op.n, op: opElems})
			}
			e.pushSlots(unsafe.Add(op.addr, uintptr(op.i)*op.p.size), op.p)
		case opElemsPtrC:
			if op.i+1 < op.n {
				e.stack = append(e.stack, sendOp{addr: op.addr, p: op.p, i: op.i + 1, n: op.n, op: opElemsPtrC})
			}
			if q := *(*unsafe.Pointer)(unsafe.Add(op.addr, uintptr(op.i)*ptrSize)); q != nil {
				err = e.value(q, op.p.elem)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

const ptrSize = unsafe.Sizeof(uintptr(0))

// value sends the object of plan p at addr: its bytes, then (later, from
// the stack) what its slots point to.
func (e *encoder) value(addr unsafe.Pointer, p *plan) error {
	if err := e.emit(addr, p.size); err != nil {
		return err
	}
	if p.inline {
		return e.inlineSlots(addr, p)
	}
	if !p.ptrFree {
		e.pushSlots(addr, p)
	}
	return nil
}

// inlineSlots sends what the slots of the object at addr (of an inline
// plan) point to, in order, by recursion: the same bytes, in the same
// order, as the stack would produce.
func (e *encoder) inlineSlots(addr unsafe.Pointer, p *plan) error {
	for _, s := range p.slots {
		a := unsafe.Add(addr, s.off)
		switch q := s.p; q.kind {
		case kString:
			h := (*stringHeader)(a)
			if err := e.emit(h.data, uintptr(h.len)); err != nil {
				return err
			}
		case kPtr:
			if err := e.slot(a, q); err != nil { // value recurses for inline pointees
				return err
			}
		case kSlice:
			h := (*sliceHeader)(a)
			if h.len == 0 {
				continue
			}
			if err := e.emit(h.data, uintptr(h.len)*q.elem.size); err != nil {
				return err
			}
			if !q.elem.ptrFree {
				for i := 0; i < h.len; i++ {
					if err := e.inlineSlots(unsafe.Add(h.data, uintptr(i)*q.elem.size), q.elem); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (e *encoder) pushSlots(addr unsafe.Pointer, p *plan) {
	for i := len(p.slots) - 1; i >= 0; i-- {
		s := p.slots[i]
		e.stack = append(e.stack, sendOp{addr: unsafe.Add(addr, s.off), p: s.p})
	}
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

type stringHeader struct {
	data unsafe.Pointer
	len  int
}

func (e *encoder) slot(addr unsafe.Pointer, p *plan) error {
	switch p.kind {
	case kPtr:
		q := *(*unsafe.Pointer)(addr)
		if q == nil {
			return nil
		}
		if e.sharing {
			k := seenKey{uintptr(q), p.elem}
			if _, ok := e.seen[k]; ok {
				return nil // a back-pointer: the receiver knows the address
			}
			e.seen[k] = struct{}{}
		}
		return e.value(q, p.elem)
	case kString:
		h := (*stringHeader)(addr)
		return e.emit(h.data, uintptr(h.len))
	case kSlice:
		h := (*sliceHeader)(addr)
		if h.len == 0 {
			return nil
		}
		el := p.elem
		if e.compact && el.kind == kPtr {
			return e.compactPtrs(h, el)
		}
		if err := e.emit(h.data, uintptr(h.len)*el.size); err != nil {
			return err
		}
		if el.kind == kPtr && el.elem.flat && !e.sharing {
			return e.flatPtrs(h, el.elem)
		}
		if !el.ptrFree {
			e.stack = append(e.stack, sendOp{addr: h.data, p: el, n: h.len, op: opElems})
		}
		return nil
	case kMap:
		m := reflect.NewAt(p.t, addr).Elem()
		if m.IsNil() {
			return nil
		}
		n := m.Len()
		if err := e.sideWord(uint64(n)); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		ks := reflect.New(p.keys.t)
		vs := reflect.New(p.vals.t)
		ks.Elem().Set(reflect.MakeSlice(p.keys.t, n, n))
		vs.Elem().Set(reflect.MakeSlice(p.vals.t, n, n))
		it := m.MapRange()
		for i := 0; it.Next() && i < n; i++ {
			ks.Elem().Index(i).SetIterKey(it)
			vs.Elem().Index(i).SetIterValue(it)
		}
		e.keep = append(e.keep, ks.Interface(), vs.Interface())
		e.stack = append(e.stack,
			sendOp{addr: vs.UnsafePointer(), p: p.vals},
			sendOp{addr: ks.UnsafePointer(), p: p.keys})
		return nil
	case kIface:
		v := reflect.NewAt(p.t, addr).Elem()
		if v.IsNil() {
			return nil
		}
		c := v.Elem()
		id, cp, ok := registeredID(c.Type())
		if !ok {
			return fmt.Errorf("naos: interface %s holds %s, which is not registered (naos.Register)", p.t, c.Type())
		}
		if err := e.sideWord(id); err != nil {
			return err
		}
		cv := reflect.New(c.Type()) // the dynamic value's own copy: an interface's storage is not addressable
		cv.Elem().Set(c)
		e.keep = append(e.keep, cv.Interface())
		return e.value(cv.UnsafePointer(), cp)
	}
	return nil
}

// compactPtrs sends an array of pointers as NaosIt does: a bitmap of its
// non-nil elements, then the objects they point to, without the pointers.
func (e *encoder) compactPtrs(h *sliceHeader, el *plan) error {
	bm := make([]byte, (h.len+7)/8)
	ptrs := unsafe.Slice((*unsafe.Pointer)(h.data), h.len)
	for i, q := range ptrs {
		if q != nil {
			bm[i/8] |= 1 << (i % 8)
		}
	}
	e.keep = append(e.keep, bm)
	if err := e.emit(unsafe.Pointer(&bm[0]), uintptr(len(bm))); err != nil {
		return err
	}
	if el.elem.flat && !e.sharing {
		return e.flatPtrs(h, el.elem) // the same objects in the same order, in one loop
	}
	e.stack = append(e.stack, sendOp{addr: h.data, p: el, n: h.len, op: opElemsPtrC})
	return nil
}

// flatPtrs sends the objects an array of pointers to flat objects points
// to, in order, each followed by its strings: what the stack would send,
// in one loop.
func (e *encoder) flatPtrs(h *sliceHeader, obj *plan) error {
	ptrs := unsafe.Slice((*unsafe.Pointer)(h.data), h.len)
	if e.dense && obj.dense {
		return e.densePtrs(ptrs, obj)
	}
	for i := 0; i < len(ptrs); i++ {
		if i += e.stageFlats(ptrs[i:], obj); i == len(ptrs) {
			break
		}
		q := ptrs[i]
		if q == nil || e.stageFlat(q, obj) {
			continue
		}
		if err := e.emit(q, obj.size); err != nil {
			return err
		}
		for _, s := range obj.slots {
			sh := (*stringHeader)(unsafe.Add(q, s.off))
			if err := e.emit(sh.data, uintptr(sh.len)); err != nil {
				return err
			}
		}
	}
	return nil
}
