package workload

import (
	"sync"
)

// MemStore is a reference in-memory key-value store with the semantics the
// Cornflakes KV server implements (see Op). It is the executable
// specification that load-generator tests run against, and a baseline for
// the real server's tests. It is safe for concurrent use.
type MemStore struct {
	mu sync.RWMutex
	m  map[string][][]byte
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{m: make(map[string][][]byte)} }

// Len returns the number of keys stored.
func (s *MemStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Apply executes req and writes the outcome into resp. resp.Values reuses its
// backing array and aliases the store's values, which are never modified in
// place (a write replaces them), so they stay valid after later writes.
func (s *MemStore) Apply(req *Request, resp *Response) {
	resp.Status = StatusOK
	resp.Values = resp.Values[:0]
	if len(req.Keys) == 0 {
		resp.Status = StatusError
		return
	}
	clone := func(vs [][]byte) [][]byte {
		out := make([][]byte, len(vs))
		for i, v := range vs {
			out[i] = append([]byte(nil), v...)
		}
		return out
	}
	switch req.Op {
	case OpGet, OpGetList, OpGetFromList:
		s.mu.RLock()
		vs, ok := s.m[string(req.Keys[0])]
		s.mu.RUnlock()
		switch {
		case !ok:
			resp.Status = StatusNotFound
		case req.Op == OpGet:
			if len(vs) != 1 {
				resp.Status = StatusError
				return
			}
			resp.Values = append(resp.Values, vs[0])
		case req.Op == OpGetList:
			resp.Values = append(resp.Values, vs...)
		default:
			if req.Index < 0 || req.Index >= len(vs) {
				resp.Status = StatusNotFound
				return
			}
			resp.Values = append(resp.Values, vs[req.Index])
		}
	case OpGetM:
		s.mu.RLock()
		defer s.mu.RUnlock()
		for _, k := range req.Keys {
			vs, ok := s.m[string(k)]
			if !ok || len(vs) != 1 {
				resp.Status = StatusNotFound
				resp.Values = resp.Values[:0]
				return
			}
			resp.Values = append(resp.Values, vs[0])
		}
	case OpPut:
		if len(req.Values) != 1 {
			resp.Status = StatusError
			return
		}
		v := clone(req.Values)
		s.mu.Lock()
		s.m[string(req.Keys[0])] = v
		s.mu.Unlock()
	case OpPutM:
		if len(req.Values) != len(req.Keys) {
			resp.Status = StatusError
			return
		}
		v := clone(req.Values)
		s.mu.Lock()
		for i, k := range req.Keys {
			s.m[string(k)] = v[i : i+1 : i+1]
		}
		s.mu.Unlock()
	case OpPutList:
		v := clone(req.Values)
		s.mu.Lock()
		s.m[string(req.Keys[0])] = v
		s.mu.Unlock()
	case OpAppendToList:
		v := clone(req.Values)
		s.mu.Lock()
		old := s.m[string(req.Keys[0])]
		n := make([][]byte, 0, len(old)+len(v))
		s.m[string(req.Keys[0])] = append(append(n, old...), v...)
		s.mu.Unlock()
	case OpDelete:
		s.mu.Lock()
		if _, ok := s.m[string(req.Keys[0])]; !ok {
			resp.Status = StatusNotFound
		}
		delete(s.m, string(req.Keys[0]))
		s.mu.Unlock()
	default:
		resp.Status = StatusError
	}
}
