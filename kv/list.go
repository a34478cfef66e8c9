package kv

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/workload"
)

// The list operations below complement Exec for servers whose protocol needs
// them (the Redis-compatible server in package resp): pushing at either end
// with the new length as the answer, the length alone, and a range of
// elements without a reference to every element of the list.

// Push adds vals to the list under key, at its end (RPUSH) or, with front,
// at its start (LPUSH: vals[0] is pushed first, so the list starts with the
// last of vals), creating the list when key is absent. It returns the list's
// new length. The limits of Exec apply (MaxKeySize, MaxValueSize, MaxKeys,
// MaxListLen); a refused push leaves the list unchanged.
func (s *Store) Push(key []byte, vals [][]byte, front bool) (int, error) {
	q := Query{Op: workload.OpAppendToList, Keys: [][]byte{key}, Vals: vals}
	if err := validate(&q); err != nil {
		return 0, err
	}
	add, err := s.fill(vals)
	if err != nil {
		return 0, err
	}
	if front && add.n > 1 { // reverse: LPUSH a b c gives c b a
		var prev *node
		add.tail = add.head
		for n := add.head; n != nil; {
			next := n.next
			n.next = prev
			prev, n = n, next
		}
		add.head = prev
	}
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[string(key)]
	switch {
	case !ok:
		if add.n == 0 {
			return 0, nil
		}
		sh.m[string(key)] = add
		return add.n, nil
	case e.n+add.n > MaxListLen:
		add.release()
		return e.n, &limitError{fmt.Sprintf("list longer than %d elements", MaxListLen)}
	case add.n > 0:
		e.link(add, front)
	}
	return e.n, nil
}

// ListLen returns the number of elements stored under key (1 for a single
// value, 0 when key is absent).
func (s *Store) ListLen(key []byte) int {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[string(key)]; ok {
		return e.n
	}
	return 0
}

// Range writes into res (releasing its previous references) one owned
// reference per element of the list under key from index start to stop,
// both inclusive; negative indexes count from the end (-1 is the last), as
// Redis's LRANGE does, and out-of-range indexes are clamped. An absent key
// or an empty range is StatusOK with no values. A range of more than
// maxResp bytes is StatusError and an error.
func (s *Store) Range(key []byte, start, stop int, res *Result, maxResp int) error {
	res.set(workload.StatusOK)
	if len(key) > MaxKeySize {
		res.Status = workload.StatusError
		return &limitError{fmt.Sprintf("key of %d bytes (limit %d)", len(key), MaxKeySize)}
	}
	sh := s.shardOf(key)
	sh.mu.Lock()
	e, ok := sh.m[string(key)]
	if ok {
		if start < 0 {
			start = max(e.n+start, 0)
		}
		if stop < 0 {
			stop = e.n + stop
		}
		stop = min(stop, e.n-1)
		n := e.head
		for i := 0; i <= stop && n != nil; i, n = i+1, n.next {
			if i >= start {
				res.add(n.buf)
			}
		}
	}
	sh.mu.Unlock()
	if n := res.Bytes; n > maxResp {
		res.set(workload.StatusError)
		return &limitError{fmt.Sprintf("response of %d bytes (limit %d)", n, maxResp)}
	}
	return nil
}
