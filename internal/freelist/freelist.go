// Package freelist keeps values in one slice addressed by int32 index and
// reuses freed indexes, last freed first: a store whose steady state
// allocates nothing, and whose indexes can link entries to each other or
// travel as tags. The RPC transport keeps its rate limiter's entries and
// its continuations in one. Not safe for concurrent use.
package freelist

// List is the store; its zero value is empty and ready to use.
type List[T any] struct {
	items []T
	free  []int32
}

// Add stores v and returns its index.
func (l *List[T]) Add(v T) int32 {
	if n := len(l.free); n > 0 {
		i := l.free[n-1]
		l.free = l.free[:n-1]
		l.items[i] = v
		return i
	}
	l.items = append(l.items, v)
	return int32(len(l.items) - 1)
}

// At returns the entry at index i, which Add returned and Take has not
// freed since. It panics when i is out of range, like a slice index.
func (l *List[T]) At(i int32) *T { return &l.items[i] }

// Take frees index i and returns its value. The slot is zeroed, so that a
// freed entry keeps nothing alive.
func (l *List[T]) Take(i int32) T {
	v := l.items[i]
	var zero T
	l.items[i] = zero
	l.free = append(l.free, i)
	return v
}

// Len is the number of indexes ever handed out (live or free): every
// valid index is below it.
func (l *List[T]) Len() int { return len(l.items) }
