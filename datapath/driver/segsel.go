package driver

import (
	"math"
	"slices"
)

// Selector decides which zero-copy entries of a packet stay zero-copy when
// the packet has more entries than its scatter-gather budget allows, so that
// the smallest are copied instead (Cornflakes §3.2.1).
//
// Layout model. The serialized bytes are fixed: the head, then entry 0,
// entry 1, ... in wire order. A copied entry's bytes go into the TX buffer,
// right after the head and after earlier copied entries. The leading run of
// copied entries therefore extends the head segment, and every later
// maximal run of copied entries (one that follows a zero-copy entry) is one
// more segment pointing into the TX buffer. So a plan with zero-copy set Z
// uses 1 + |Z| + (runs of copied entries that follow a member of Z)
// segments; CountSegments computes it.
//
// Algorithm. The candidates are the k = MaxSegments-1 largest entries
// (ties: the later entry, since copied leading entries merge with the
// head), found with a bounded heap in O(n log k). Candidates are then added
// to Z greedily, largest first, whenever the segment count stays within
// budget, repeating until nothing more fits (O(k) per pass, few passes).
// Finally a copied entry whose neighbours are both zero-copy (or that is the
// last entry and follows one) is made zero-copy too, since that costs no
// extra segment and saves a copy. Entries outside the candidates are never
// larger than any candidate.
//
// A Selector owns its scratch space, so Select does not allocate. It is not
// safe for concurrent use (one per endpoint).
type Selector struct {
	maxSegments int
	keys        []uint64 // candidate keys size<<32|index (heap, then sorted)
	pairs       []uint64 // index<<32|strength rank, sorted by index
	cand        []int    // candidate entry indices, ascending
	order       []int    // positions in cand in greedy order (strongest first)
	in          []bool
	out         []int
}

// NewSelector returns a Selector for packets of at most maxSegments segments
// (head included). maxSegments below 1 is treated as 1 (copy everything).
func NewSelector(maxSegments int) *Selector {
	maxSegments = max(maxSegments, 1)
	k := maxSegments - 1
	return &Selector{
		maxSegments: maxSegments,
		keys:        make([]uint64, 0, k),
		pairs:       make([]uint64, 0, k),
		cand:        make([]int, 0, k),
		order:       make([]int, k),
		in:          make([]bool, k),
		out:         make([]int, 0, k),
	}
}

// MaxSegments is the budget the Selector was created for.
func (s *Selector) MaxSegments() int { return s.maxSegments }

// Select returns, in ascending order, the indices of the entries (sizes[i]
// is the length of entry i in wire order) that stay zero-copy; all others
// are copied. When len(sizes) <= MaxSegments-1 every entry stays zero-copy.
// The returned slice is owned by s and valid until the next Select.
func (s *Selector) Select(sizes []int) []int {
	n := len(sizes)
	k := s.maxSegments - 1
	s.out = s.out[:0]
	if n <= k {
		for i := range n {
			s.out = append(s.out, i)
		}
		return s.out
	}
	if k == 0 {
		return s.out
	}
	// Top-k by strength with a min-heap whose root is the weakest
	// candidate. A key orders by size, then by index: on ties the later
	// entry is stronger, since a leading copied run merges with the head.
	h := s.keys[:0]
	for i := range n {
		key := uint64(min(max(sizes[i], 0), math.MaxInt32))<<32 | uint64(i)
		if len(h) < k {
			h = append(h, key)
			for j := len(h) - 1; j > 0; { // sift up
				p := (j - 1) / 2
				if h[j] >= h[p] {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			continue
		}
		if key <= h[0] {
			continue
		}
		h[0] = key
		for j := 0; ; { // sift down
			l := 2*j + 1
			if l >= len(h) {
				break
			}
			m := l
			if r := l + 1; r < len(h) && h[r] < h[l] {
				m = r
			}
			if h[m] >= h[j] {
				break
			}
			h[j], h[m] = h[m], h[j]
			j = m
		}
	}
	s.keys = h
	// cand: candidate indices ascending; a candidate's neighbours are
	// candidates only if they sit next to it in cand. order: positions in
	// cand, strongest first. One sort of (index, strength rank) pairs
	// gives both.
	sortSmall(h)
	pairs := s.pairs[:0]
	for r, key := range h {
		pairs = append(pairs, uint64(uint32(key))<<32|uint64(r))
	}
	sortSmall(pairs)
	s.pairs = pairs
	cand := s.cand[:0]
	order := s.order[:len(h)]
	for p, pr := range pairs {
		cand = append(cand, int(pr>>32))
		order[len(h)-1-int(uint32(pr))] = p
	}
	s.cand, s.order = cand, order
	in := s.in[:k]
	clear(in)
	segs := 1
	for changed := true; changed; {
		changed = false
		for _, p := range s.order {
			if in[p] {
				continue
			}
			i := cand[p]
			leftZC := p > 0 && cand[p-1] == i-1 && in[p-1]
			rightZC := p+1 < len(cand) && cand[p+1] == i+1 && in[p+1]
			rightCopied := i+1 < n && !rightZC
			d := 1
			if rightCopied && !leftZC {
				d++
			} else if leftZC && !rightCopied {
				d--
			}
			if segs+d <= s.maxSegments {
				in[p] = true
				segs += d
				changed = true
			}
		}
	}
	// Output in index order, with the free fillers: a copied entry between
	// two zero-copy entries (or after the last one, at the end) costs one
	// segment either way.
	prev := -1
	for p, i := range cand {
		if !in[p] {
			continue
		}
		if prev >= 0 && i == prev+2 {
			s.out = append(s.out, prev+1)
		}
		s.out = append(s.out, i)
		prev = i
	}
	if prev >= 0 && prev == n-2 {
		s.out = append(s.out, n-1)
	}
	return s.out
}

// sortSmall sorts ascending: insertion sort for the short slices a packet's
// budget gives (no comparator calls), slices.Sort beyond.
func sortSmall[T int | uint64](a []T) {
	if len(a) > 48 {
		slices.Sort(a)
		return
	}
	for i := 1; i < len(a); i++ {
		v := a[i]
		j := i
		for ; j > 0 && a[j-1] > v; j-- {
			a[j] = a[j-1]
		}
		a[j] = v
	}
}

// CountSegments returns the number of scatter-gather segments a packet with
// n entries uses when the entries listed in keep (ascending) are zero-copy
// and the others are copied (see Selector for the layout).
func CountSegments(n int, keep []int) int {
	segs := 1 + len(keep)
	for j, i := range keep {
		if i+1 < n && (j+1 == len(keep) || keep[j+1] != i+1) {
			segs++
		}
	}
	return segs
}
