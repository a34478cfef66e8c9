// Package stats holds the small summary statistics the benchmark commands
// share.
package stats

import "slices"

// Median returns the median of v (the mean of the middle two for an even
// count), 0 for none. v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
