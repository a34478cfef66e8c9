package shm

import (
	"math/bits"
	"unsafe"
)

// Receive-copy alignment. A copying receive (Recv) gathers a packet's
// segments into one pool buffer. Go's memmove of a large segment is up to
// 3x slower when its destination is not congruent to its source modulo a
// cache line: on the Intel VMs we measure on, 4096 bytes copied to a
// destination 16 bytes past a page-aligned source (an application header
// in front of a page-aligned payload, the common case) take ~106 ns
// against 26–37 ns for every aligned or other offset
// (docs/perf/echo14.md §3). recvCopy therefore starts the packet a few
// bytes into its buffer so that its largest segment lands congruent to
// its source, when the pool's size class has that slack (no packet is
// given a larger class for it) and the segment is large enough
// (rxAlignMin) for the copy to care.
const (
	rxAlign    = 64   // a cache line
	rxAlignMin = 1024 // smaller copies do not take memmove's string-copy path
)

// rxAlignSeg returns the index of segs' largest segment and its offset in
// the gathered packet, or -1 when no segment is at least rxAlignMin bytes.
func rxAlignSeg(segs []seg) (idx, at int) {
	idx, at = -1, 0
	best, w := uint32(rxAlignMin-1), 0
	for i, s := range segs {
		if s.n > best {
			idx, at, best = i, w, s.n
		}
		w += int(s.n)
	}
	return idx, at
}

// sameClass reports whether a power-of-two pool class that holds a bytes
// also holds b bytes (a ≤ b).
func sameClass(a, b int) bool { return bits.Len(uint(a-1)) == bits.Len(uint(b-1)) }

// rxAlignPad returns the pad in [0, rxAlign) that makes dst+pad congruent
// to src modulo rxAlign.
func rxAlignPad(src, dst *byte) int {
	return int((uintptr(unsafe.Pointer(src)) - uintptr(unsafe.Pointer(dst))) & (rxAlign - 1))
}
