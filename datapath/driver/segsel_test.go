package driver

import (
	"encoding/binary"
	"slices"
	"testing"
)

func TestSelectorTable(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sizes       []int
		maxSegments int
		want        []int
	}{
		{"fits", []int{5, 6, 7}, 4, []int{0, 1, 2}},
		{"empty", nil, 4, []int{}},
		{"headOnly", []int{9, 9}, 1, []int{}},
		// One too many: the smallest (trailing) one is copied into its own
		// run after the last zero-copy entry.
		// Copying only the last would cost a segment of its own (5 in all),
		// so the first is copied instead, merging with the head.
		{"copySmallestAtEnd", []int{100, 200, 300, 1}, 4, []int{1, 2, 3}},
		// The smallest is first: copying it merges it with the head, so one
		// more entry fits than a naive count suggests.
		{"copySmallestAtStart", []int{1, 200, 300, 400}, 4, []int{1, 2, 3}},
		// The smallest is in the middle: copying it costs a segment of its
		// own, so only two zero-copy entries fit in 4 segments.
		{"copySmallestInMiddle", []int{100, 1, 300, 400}, 4, []int{2, 3}},
		// Small entries alternate with large ones; the small ones form runs.
		// Entries 5 and 7 are kept as free fillers; 0..3 merge with the head.
		{"alternating", []int{1000, 1, 1000, 1, 1000, 1, 1000, 1}, 5, []int{4, 5, 6, 7}},
		{"leadingSmall", []int{1, 2, 3, 1000, 1000}, 3, []int{3, 4}},
		// A free filler: entry 1 sits between two kept entries.
		{"noRoomForThird", []int{500, 10, 500, 1, 1}, 4, []int{1, 2}},
		{"filler", []int{500, 1, 500, 2, 2, 2}, 5, []int{0, 1, 2}},
		{"allEqual", []int{7, 7, 7, 7, 7, 7}, 4, []int{3, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSelector(tc.maxSegments)
			got := s.Select(tc.sizes)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Select(%v, %d) = %v, want %v", tc.sizes, tc.maxSegments, got, tc.want)
			}
			if segs := CountSegments(len(tc.sizes), got); segs > max(tc.maxSegments, 1) {
				t.Fatalf("plan uses %d segments, budget %d", segs, tc.maxSegments)
			}
			checkPlan(t, tc.sizes, tc.maxSegments, got)
		})
	}
}

func TestCountSegments(t *testing.T) {
	for _, tc := range []struct {
		n    int
		keep []int
		want int
	}{
		{0, nil, 1},
		{3, nil, 1},
		{3, []int{0, 1, 2}, 4},
		{3, []int{0}, 3},    // head, 0, run{1,2}
		{3, []int{2}, 2},    // head+{0,1}, 2
		{4, []int{1, 2}, 4}, // head+0, 1, 2, run{3}
		{5, []int{1, 3}, 5}, // head+0, 1, {2}, 3, {4}
	} {
		if got := CountSegments(tc.n, tc.keep); got != tc.want {
			t.Errorf("CountSegments(%d, %v) = %d, want %d", tc.n, tc.keep, got, tc.want)
		}
	}
}

// checkPlan verifies the properties Selector documents.
func checkPlan(t *testing.T, sizes []int, maxSegments int, keep []int) {
	t.Helper()
	n := len(sizes)
	budget := max(maxSegments, 1)
	k := budget - 1
	for j, i := range keep {
		if i < 0 || i >= n || (j > 0 && keep[j-1] >= i) {
			t.Fatalf("keep %v is not ascending within [0,%d)", keep, n)
		}
	}
	segs := CountSegments(n, keep)
	if segs > budget {
		t.Fatalf("plan %v uses %d segments, budget %d", keep, segs, budget)
	}
	if n <= k && len(keep) != n {
		t.Fatalf("all %d entries fit in %d segments but only %v kept", n, budget, keep)
	}
	if n <= k {
		return
	}
	// Candidates: the k largest, ties to the later entry.
	order := make([]int, n)
	for i := range order {
		order[i] = n - 1 - i
	}
	slices.SortStableFunc(order, func(a, b int) int { return sizes[b] - sizes[a] })
	isCand := make([]bool, n)
	for _, i := range order[:k] {
		isCand[i] = true
	}
	kept := make([]bool, n)
	for _, i := range keep {
		kept[i] = true
	}
	for i := range n {
		if kept[i] {
			if !isCand[i] {
				// Only free fillers: both neighbours zero-copy (or the end).
				if !(i > 0 && kept[i-1] && (i+1 == n || kept[i+1])) {
					t.Fatalf("non-candidate %d kept without being a free filler (keep %v)", i, keep)
				}
			}
			continue
		}
		if isCand[i] {
			// A copied candidate must not fit.
			try := append(slices.Clone(keep), i)
			slices.Sort(try)
			if CountSegments(n, try) <= budget {
				t.Fatalf("candidate %d (size %d) copied although it fits (keep %v)", i, sizes[i], keep)
			}
		}
	}
}

func TestSelectorAllocs(t *testing.T) {
	s := NewSelector(17)
	sizes := make([]int, 200)
	for i := range sizes {
		sizes[i] = (i * 7919) % 1000
	}
	s.Select(sizes)
	if a := testing.AllocsPerRun(100, func() { s.Select(sizes) }); a != 0 {
		t.Fatalf("Select allocates %v times per call", a)
	}
}

// FuzzSelector checks the Selector's documented properties on arbitrary
// inputs: sizes are read as little-endian uint16s.
func FuzzSelector(f *testing.F) {
	f.Add([]byte{1, 0, 2, 0, 3, 0}, uint8(2))
	f.Add([]byte{0xff, 0, 1, 0, 0xff, 0, 1, 0, 0xff, 0, 1, 0}, uint8(3))
	f.Add([]byte{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, uint8(1))
	f.Add([]byte{}, uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, m uint8) {
		sizes := make([]int, len(data)/2)
		for i := range sizes {
			sizes[i] = int(binary.LittleEndian.Uint16(data[2*i:]))
		}
		maxSegments := int(m%40) + 1
		s := NewSelector(maxSegments)
		keep := s.Select(sizes)
		checkPlan(t, sizes, maxSegments, keep)
		again := slices.Clone(keep)
		if !slices.Equal(s.Select(sizes), again) {
			t.Fatal("Select is not deterministic")
		}
	})
}

func BenchmarkSelector(b *testing.B) {
	for _, n := range []int{20, 64, 256} {
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = (i * 7919) % 1500
		}
		s := NewSelector(17)
		b.Run("entries="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Select(sizes)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
