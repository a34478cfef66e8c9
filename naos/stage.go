package naos

import "unsafe"

// Staging (the hybrid send list): on the stream path, a range of at most
// Options.Stage bytes that does not coalesce with the previous one is
// copied into the Conn's staging blocks instead of getting its own iovec,
// and consecutive staged ranges share one iovec. An array of small
// objects interleaved with their strings (each a few bytes, at addresses
// the allocator chose) is then a few 64 KiB iovecs in traversal order
// instead of two iovecs per object; large ranges (arrays of pointer-free
// elements, big objects) still leave from their own memory.
const (
	// DefaultStage is the default Options.Stage.
	DefaultStage = 128
	stageBlock   = 64 << 10
	stageKeep    = 256 // blocks a Conn keeps between messages (16 MiB at most: as many as its largest message used)
)

// stager holds the staging blocks of one encoder. Blocks are only
// appended to during a message (a pipelined chunk may be in the kernel
// while the traversal stages the next bytes into the same block), and
// reused once the message has been written.
type stager struct {
	max    uintptr // ranges of at most max bytes are staged; 0: off
	blocks [][]byte
	bi, bo int  // current block, offset in it
	tail   bool // the last iovec ends at the staging position
}

// stage copies [p, p+n) to the staging position and appends it to the
// send list (extending the last iovec when it ends there).
func (e *encoder) stage(p unsafe.Pointer, n uintptr) {
	s := &e.st
	if s.bi < len(s.blocks) && s.bo+int(n) > stageBlock {
		s.bi++
		s.bo = 0
		s.tail = false
	}
	if s.bi == len(s.blocks) {
		s.blocks = append(s.blocks, make([]byte, stageBlock))
		s.bo = 0
		s.tail = false
	}
	b := s.blocks[s.bi][s.bo : s.bo+int(n) : s.bo+int(n)]
	copy(b, unsafe.Slice((*byte)(p), n))
	s.bo += int(n)
	if s.tail && len(e.iov) > 0 {
		e.iov[len(e.iov)-1].n += n
	} else {
		e.iov = append(e.iov, iovec{unsafe.Pointer(&b[0]), n})
		s.tail = true
	}
	e.lastEnd = 0
}

// resetStage makes the blocks reusable for the next message; the send
// list that pointed into them has been written.
func (s *stager) reset() {
	s.bi, s.bo, s.tail = 0, 0, false
	if len(s.blocks) > stageKeep {
		clear(s.blocks[stageKeep:])
		s.blocks = s.blocks[:stageKeep]
	}
}

// stageFlat stages the flat object at q and its strings at once when they
// all go to staging and fit in the current block behind the last staged
// range, without pipelining; it reports whether it did (else the caller
// emits them one by one).
func (e *encoder) stageFlat(q unsafe.Pointer, obj *plan) bool {
	st := &e.st
	if !st.tail || e.chunk > 0 || obj.size > st.max {
		return false
	}
	n := obj.size
	for _, s := range obj.slots {
		m := uintptr((*stringHeader)(unsafe.Add(q, s.off)).len)
		if m > st.max {
			return false
		}
		n += m
	}
	if st.bo+int(n) > stageBlock || e.total+int64(n) > e.maxBytes {
		return false
	}
	b := st.blocks[st.bi][st.bo : st.bo+int(n)]
	o := copy(b, unsafe.Slice((*byte)(q), obj.size))
	for _, s := range obj.slots {
		if h := (*stringHeader)(unsafe.Add(q, s.off)); h.len > 0 {
			o += copy(b[o:], unsafe.Slice((*byte)(h.data), h.len))
		}
	}
	st.bo += int(n)
	e.iov[len(e.iov)-1].n += n
	e.total += int64(n)
	return true
}

// stageFlats stages the flat objects ptrs point to (nil elements are
// skipped), each followed by its strings, while they go to staging and
// fit in the current block behind the last staged range, without
// pipelining: stageFlat for a run of objects, with the block, its offset
// and the message's byte budget in locals. It returns how many elements
// of ptrs it consumed.
func (e *encoder) stageFlats(ptrs []unsafe.Pointer, obj *plan) int {
	st := &e.st
	if !st.tail || e.chunk > 0 || obj.size > st.max {
		return 0
	}
	blk := st.blocks[st.bi][:stageBlock]
	start := st.bo
	bo := start
	end := stageBlock
	if left := e.maxBytes - e.total; left < int64(end-bo) {
		end = bo + int(max(left, 0))
	}
	size := int(obj.size)
	maxStr := int(st.max)
	k := 0
	if len(obj.slots) == 1 {
		off := obj.slots[0].off
		for ; k < len(ptrs); k++ {
			q := ptrs[k]
			if q == nil {
				continue
			}
			sh := (*stringHeader)(unsafe.Add(q, off))
			m := sh.len
			if m > maxStr || end-bo < size+m {
				break
			}
			copyObj(blk[bo:bo+size], q)
			bo += size
			if m > 0 {
				copy(blk[bo:bo+m], unsafe.Slice((*byte)(sh.data), m))
				bo += m
			}
		}
	} else {
		for ; k < len(ptrs); k++ {
			q := ptrs[k]
			if q == nil {
				continue
			}
			n := size
			for _, s := range obj.slots {
				m := (*stringHeader)(unsafe.Add(q, s.off)).len
				if m > maxStr {
					n = end - bo + 1
					break
				}
				n += m
			}
			if end-bo < n {
				break
			}
			copyObj(blk[bo:bo+size], q)
			o := bo + size
			for _, s := range obj.slots {
				if h := (*stringHeader)(unsafe.Add(q, s.off)); h.len > 0 {
					o += copy(blk[o:], unsafe.Slice((*byte)(h.data), h.len))
				}
			}
			bo += n
		}
	}
	n := uintptr(bo - start)
	st.bo = bo
	e.iov[len(e.iov)-1].n += n
	e.total += int64(n)
	return k
}

// copyObj copies the len(dst) bytes of the object at q into dst: common
// object sizes as one fixed-size move, others with copy.
func copyObj(dst []byte, q unsafe.Pointer) {
	switch len(dst) {
	case 16:
		*(*[16]byte)(dst) = *(*[16]byte)(q)
	case 24:
		*(*[24]byte)(dst) = *(*[24]byte)(q)
	case 32:
		*(*[32]byte)(dst) = *(*[32]byte)(q)
	default:
		copy(dst, unsafe.Slice((*byte)(q), len(dst)))
	}
}
