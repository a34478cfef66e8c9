package kv

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Limits on what a request may ask of the store. Requests beyond them get a
// StatusError response and leave the store unchanged.
const (
	// MaxKeySize is the largest key, in bytes.
	MaxKeySize = 4096
	// MaxValueSize is the largest value (one list element), in bytes.
	MaxValueSize = 1 << 20
	// MaxKeys is the most keys (GetM/PutM) or values (PutList/AppendToList)
	// one request may carry.
	MaxKeys = 4096
	// MaxListLen is the longest list AppendToList may build.
	MaxListLen = 1 << 16
)

// Query is one decoded request as the store executes it. Keys and Vals
// alias the request message (valid while the request is being served).
type Query struct {
	Op    workload.Op
	Keys  [][]byte
	Vals  [][]byte
	Index int
}

func (q *Query) reset(op workload.Op) {
	q.Op = op
	q.Keys = q.Keys[:0]
	q.Vals = q.Vals[:0]
	q.Index = 0
}

// Result is the store's answer to a Query: a status and, for reads, one
// owned reference per value (Release them with Result.Release once the
// response has been handed to the transport).
type Result struct {
	Status workload.Status
	Vals   []mem.Buf
	Bytes  int // total bytes of Vals
}

// Release drops the references of r.Vals and empties it.
func (r *Result) Release() {
	for i, b := range r.Vals {
		_ = b.Release()
		r.Vals[i] = mem.Buf{}
	}
	r.Vals = r.Vals[:0]
	r.Bytes = 0
}

func (r *Result) set(st workload.Status) {
	r.Release()
	r.Status = st
}

// node is one element of a stored list: a linked list of registered
// buffers, as in the Cornflakes KV store (a single value is a list of one).
type node struct {
	buf  mem.Buf
	next *node
}

type entry struct {
	head, tail *node
	n          int
}

// link moves the nodes of add (non-empty) to the end of e, or with front
// to its start, without copying or changing any stored byte.
func (e *entry) link(add *entry, front bool) {
	switch {
	case front:
		add.tail.next = e.head
		e.head = add.head
		if e.tail == nil {
			e.tail = add.tail
		}
	case e.tail == nil:
		e.head, e.tail = add.head, add.tail
	default:
		e.tail.next = add.head
		e.tail = add.tail
	}
	e.n += add.n
}

func (e *entry) release() {
	for n := e.head; n != nil; n = n.next {
		_ = n.buf.Release()
		n.buf = mem.Buf{}
	}
}

type shard struct {
	mu sync.Mutex
	m  map[string]*entry
}

// Store is the key-value store: values live in registered memory (a mem
// pool, sizes rounded up to its classes), lists are linked lists of
// registered buffers, and keys are sharded by hash.
//
// A write never modifies stored memory in place: it allocates new buffers,
// fills them and swaps them in, releasing the old ones (overwriting a single
// value swaps the buffer inside the existing entry: no Go allocation). A response that is
// still being sent holds its own references, so the bytes it points at stay
// intact until the send completes. Store is safe for concurrent use (one
// mutex per shard); with a single-goroutine pool (Concurrent false) every
// call and every release of a returned reference must happen on one
// goroutine.
type Store struct {
	pool   *mem.Pool
	shards []shard
}

// NewStore returns a store with the given number of shards whose values are
// allocated from pool.
func NewStore(pool *mem.Pool, shards int) *Store {
	if shards < 1 {
		shards = 1
	}
	s := &Store{pool: pool, shards: make([]shard, shards)}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*entry)
	}
	return s
}

// Pool is the pool holding the store's values.
func (s *Store) Pool() *mem.Pool { return s.pool }

// Shard returns the shard index of key.
func (s *Store) Shard(key []byte) int { return ShardOf(key, len(s.shards)) }

// ShardOf is the shard (and server endpoint index) owning key among n:
// FNV-1a of the key modulo n, computed the same way by clients and server.
func ShardOf(key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return int(h % uint64(n))
}

func (s *Store) shardOf(key []byte) *shard { return &s.shards[s.Shard(key)] }

// Len is the number of keys stored.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Clear removes every key and releases its memory.
func (s *Store) Clear() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			e.release()
			delete(sh.m, k)
		}
		sh.mu.Unlock()
	}
}

// ErrLimit reports a request beyond one of the store's limits.
// ErrList is the error of a single-value read (OpGet) of a key that holds
// a list of several values.
var ErrList = errors.New("kv: get of a list")

type limitError struct{ what string }

func (e *limitError) Error() string { return "kv: " + e.what }

// validate checks q against the limits and the operation's shape.
func validate(q *Query) error {
	if len(q.Keys) == 0 {
		return &limitError{"request without a key"}
	}
	if len(q.Keys) > MaxKeys || len(q.Vals) > MaxKeys {
		return &limitError{fmt.Sprintf("more than %d keys or values", MaxKeys)}
	}
	for _, k := range q.Keys {
		if len(k) > MaxKeySize {
			return &limitError{fmt.Sprintf("key of %d bytes (limit %d)", len(k), MaxKeySize)}
		}
	}
	for _, v := range q.Vals {
		if len(v) > MaxValueSize {
			return &limitError{fmt.Sprintf("value of %d bytes (limit %d)", len(v), MaxValueSize)}
		}
	}
	switch q.Op {
	case workload.OpGet, workload.OpGetList, workload.OpGetFromList, workload.OpDelete:
		if len(q.Keys) != 1 || len(q.Vals) != 0 {
			return &limitError{q.Op.String() + " takes one key and no value"}
		}
	case workload.OpPut:
		if len(q.Keys) != 1 || len(q.Vals) != 1 {
			return &limitError{"put takes one key and one value"}
		}
	case workload.OpGetM:
		if len(q.Vals) != 0 {
			return &limitError{"getm takes no values"}
		}
	case workload.OpPutM:
		if len(q.Vals) != len(q.Keys) {
			return &limitError{"putm takes one value per key"}
		}
	case workload.OpPutList, workload.OpAppendToList:
		if len(q.Keys) != 1 {
			return &limitError{q.Op.String() + " takes one key"}
		}
	default:
		return &limitError{"unknown operation " + q.Op.String()}
	}
	return nil
}

// fill allocates and fills one registered buffer per value (all or nothing).
func (s *Store) fill(vals [][]byte) (*entry, error) {
	e := &entry{}
	for _, v := range vals {
		b, err := s.pool.Alloc(max(len(v), 1))
		if err != nil {
			e.release()
			return nil, err
		}
		b = b.Slice(0, len(v))
		copy(b.Bytes(), v)
		n := &node{buf: b}
		if e.tail == nil {
			e.head = n
		} else {
			e.tail.next = n
		}
		e.tail = n
		e.n++
	}
	return e, nil
}

// Exec runs q and writes the outcome into res (whose previous references it
// releases). Reads return owned references in res.Vals. maxResp bounds the
// total value bytes of a read (a larger answer is StatusError).
func (s *Store) Exec(q *Query, res *Result, maxResp int) error {
	res.set(workload.StatusOK)
	if err := validate(q); err != nil {
		res.Status = workload.StatusError
		return err
	}
	switch q.Op {
	case workload.OpGet, workload.OpGetList, workload.OpGetFromList:
		sh := s.shardOf(q.Keys[0])
		sh.mu.Lock()
		e, ok := sh.m[string(q.Keys[0])]
		switch {
		case !ok:
			res.Status = workload.StatusNotFound
		case q.Op == workload.OpGet:
			if e.n != 1 {
				res.Status = workload.StatusError
				sh.mu.Unlock()
				return ErrList
			}
			res.add(e.head.buf)
		case q.Op == workload.OpGetList:
			for n := e.head; n != nil; n = n.next {
				res.add(n.buf)
			}
		default:
			if q.Index < 0 || q.Index >= e.n {
				res.Status = workload.StatusNotFound
				break
			}
			n := e.head
			for i := 0; i < q.Index; i++ {
				n = n.next
			}
			res.add(n.buf)
		}
		sh.mu.Unlock()
	case workload.OpGetM:
		for _, k := range q.Keys {
			sh := s.shardOf(k)
			sh.mu.Lock()
			e, ok := sh.m[string(k)]
			if !ok || e.n != 1 {
				sh.mu.Unlock()
				res.set(workload.StatusNotFound)
				return nil
			}
			res.add(e.head.buf)
			sh.mu.Unlock()
		}
	case workload.OpPut:
		if err := s.putOne(q.Keys[0], q.Vals[0]); err != nil {
			res.Status = workload.StatusError
			return err
		}
	case workload.OpPutList:
		e, err := s.fill(q.Vals)
		if err != nil {
			res.Status = workload.StatusError
			return err
		}
		s.swap(q.Keys[0], e)
	case workload.OpPutM:
		for i, k := range q.Keys {
			if err := s.putOne(k, q.Vals[i]); err != nil {
				res.Status = workload.StatusError
				return err
			}
		}
	case workload.OpAppendToList:
		add, err := s.fill(q.Vals)
		if err != nil {
			res.Status = workload.StatusError
			return err
		}
		sh := s.shardOf(q.Keys[0])
		sh.mu.Lock()
		e, ok := sh.m[string(q.Keys[0])]
		switch {
		case !ok:
			sh.m[string(q.Keys[0])] = add
		case e.n+add.n > MaxListLen:
			sh.mu.Unlock()
			add.release()
			res.Status = workload.StatusError
			return &limitError{fmt.Sprintf("list longer than %d elements", MaxListLen)}
		case add.n > 0:
			e.link(add, false)
		}
		sh.mu.Unlock()
	case workload.OpDelete:
		sh := s.shardOf(q.Keys[0])
		sh.mu.Lock()
		e, ok := sh.m[string(q.Keys[0])]
		if ok {
			delete(sh.m, string(q.Keys[0]))
		}
		sh.mu.Unlock()
		if !ok {
			res.Status = workload.StatusNotFound
		} else {
			e.release()
		}
	}
	if n := res.Bytes; n > maxResp {
		res.set(workload.StatusError) // clears res.Bytes
		return &limitError{fmt.Sprintf("response of %d bytes (limit %d)", n, maxResp)}
	}
	return nil
}

func (r *Result) add(b mem.Buf) {
	r.Vals = append(r.Vals, b.Clone())
	r.Bytes += b.Len()
}

// putOne stores the single value v under key. Overwriting a single value
// (the common write) allocates nothing on the Go heap: the new registered
// buffer is filled first and then swapped into the existing node under the
// shard's lock, and the old buffer is released after it (a response still
// being sent holds its own reference). A new key, or a key that holds a
// list, gets a new entry through swap.
func (s *Store) putOne(key, v []byte) error {
	b, err := s.pool.Alloc(max(len(v), 1))
	if err != nil {
		return err
	}
	b = b.Slice(0, len(v))
	copy(b.Bytes(), v)
	sh := s.shardOf(key)
	sh.mu.Lock()
	if e, ok := sh.m[string(key)]; ok && e.n == 1 {
		old := e.head.buf
		e.head.buf = b
		sh.mu.Unlock()
		_ = old.Release()
		return nil
	}
	sh.mu.Unlock()
	n := &node{buf: b}
	s.swap(key, &entry{head: n, tail: n, n: 1})
	return nil
}

// swap installs e under key and releases the entry it replaces (responses
// in flight hold their own references to the old buffers).
func (s *Store) swap(key []byte, e *entry) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	old, ok := sh.m[string(key)]
	sh.m[string(key)] = e
	sh.mu.Unlock()
	if ok {
		old.release()
	}
}
