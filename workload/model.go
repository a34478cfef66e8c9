package workload

import "fmt"

// Model is the reference store: for every key, the sizes of the elements it
// holds (one element for a plain value, several for a list). Element j of key
// k has content Fill(k, j) (see Fill), so a Model holds no value bytes.
//
// A Model is built once (Set, MarkMutable) and is then read-only: Check may be
// called from any number of goroutines. The synthetic workloads never change a
// value's size (a Put rewrites the same bytes), so their model is exact under
// concurrent clients. Keys whose size may change (trace replay) are marked
// mutable: their reads accept NotFound or a value of any length, as long as
// the content matches.
type Model struct {
	index   map[string]int32
	entries []modelEntry
	sizes   []uint32
}

type modelEntry struct {
	hash    uint64 // fnv1a(key): the content seed's key part, hashed once
	off     uint32
	n       uint32
	mutable bool
	present bool
}

// NewModel returns an empty model.
func NewModel() *Model { return &Model{index: make(map[string]int32)} }

// Len returns the number of keys in the model.
func (m *Model) Len() int { return len(m.entries) }

// Set records that key holds len(sizes) elements of the given sizes
// (replacing any earlier entry). Not safe for concurrent use.
func (m *Model) Set(key []byte, sizes ...int) { m.set(key, sizes...) }

// set is Set returning the key's entry index (Request.mix).
func (m *Model) set(key []byte, sizes ...int) int32 {
	off := len(m.sizes)
	for _, s := range sizes {
		m.sizes = append(m.sizes, uint32(s))
	}
	e := modelEntry{hash: fnv1a(key), off: uint32(off), n: uint32(len(sizes)), present: true}
	if i, ok := m.index[string(key)]; ok {
		e.mutable = m.entries[i].mutable
		m.entries[i] = e
		return i
	}
	i := int32(len(m.entries))
	m.index[string(key)] = i
	m.entries = append(m.entries, e)
	return i
}

// MarkMutable records that key may be written with other sizes (or created)
// during the run, so reads of it accept any length or NotFound.
func (m *Model) MarkMutable(key []byte) {
	if i, ok := m.index[string(key)]; ok {
		m.entries[i].mutable = true
		return
	}
	m.index[string(key)] = int32(len(m.entries))
	m.entries = append(m.entries, modelEntry{hash: fnv1a(key), mutable: true})
}

// Sizes returns the element sizes of key (aliasing the model; do not modify)
// and whether the key is preloaded.
func (m *Model) Sizes(key []byte) ([]uint32, bool) {
	i, ok := m.index[string(key)]
	if !ok || !m.entries[i].present {
		return nil, false
	}
	e := m.entries[i]
	return m.sizes[e.off : e.off+e.n], true
}

// MismatchError describes a response that differs from the model.
// errors.Is(err, ErrMismatch) holds.
type MismatchError struct {
	Op     Op
	Key    string // the (first) key concerned, possibly truncated
	Reason string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("workload: %s %q: %s", e.Op, e.Key, e.Reason)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

func mismatch(op Op, key []byte, format string, args ...any) error {
	k := key
	if len(k) > 80 {
		k = k[:80]
	}
	return &MismatchError{Op: op, Key: string(k), Reason: fmt.Sprintf(format, args...)}
}

// find returns the entry of req's key i: by the index the stream that drew
// the key recorded (Request.mix; verified against the key in cfcheck
// builds) when req was drawn against m, else by looking the key up.
func (m *Model) find(req *Request, i int) (modelEntry, bool) {
	if req.model == m {
		if x := req.modelIndex(i); x >= 0 && int(x) < len(m.entries) {
			if checked {
				m.verifyIndex(req.Keys[i], x)
			}
			return m.entries[x], true
		}
	}
	return m.lookup(req.Keys[i])
}

// verifyIndex panics when key's entry is not x (a stream recorded a wrong
// model index: a bug in this package, checked in cfcheck builds only).
func (m *Model) verifyIndex(key []byte, x int32) {
	if i, ok := m.index[string(key)]; !ok || i != x {
		panic(fmt.Sprintf("workload: request key %q carries model index %d, the model has %d (known %v)", key, x, i, ok))
	}
}

// lookup returns the entry of key; ok is false when the model does not know it.
func (m *Model) lookup(key []byte) (modelEntry, bool) {
	i, ok := m.index[string(key)]
	if !ok {
		return modelEntry{}, false
	}
	return m.entries[i], true
}

// Check compares resp with what the model expects for req and returns nil or
// a *MismatchError. A StatusError response is reported by the caller as an
// error, not checked here (Check returns nil for it). Check does not
// allocate when the response matches.
func (m *Model) Check(req *Request, resp *Response) error { return m.check(req, resp, verifySeed) }

// seedVerifier checks a value against the stream Fill writes from seed
// (verifySeed: every byte; verifySpotSeed: three words).
type seedVerifier func(v []byte, seed uint64) bool

// keyHash is fnv1a(key), from e when the model holds key.
func keyHash(e modelEntry, known bool, key []byte) uint64 {
	if known {
		return e.hash
	}
	return fnv1a(key)
}

// CheckSpot is Check reading each value only in part: status, value count
// and every value's length are checked as by Check, and each value's
// content by VerifySpot (its first, middle and last 8 bytes) instead of
// Verify. Its cost does not grow with the value sizes; a corrupted byte
// elsewhere in a value is not seen (a load generator checks a sample of
// its responses with Check for that).
func (m *Model) CheckSpot(req *Request, resp *Response) error {
	return m.check(req, resp, verifySpotSeed)
}

func (m *Model) check(req *Request, resp *Response, verify seedVerifier) error {
	if resp.Status == StatusError {
		return nil
	}
	if len(req.Keys) == 0 {
		return mismatch(req.Op, nil, "request has no key")
	}
	switch req.Op {
	case OpPut, OpPutM, OpPutList, OpAppendToList:
		if resp.Status != StatusOK {
			return mismatch(req.Op, req.Keys[0], "status %s, want ok", resp.Status)
		}
		return nil
	case OpDelete:
		return nil // ok or not-found are both valid
	case OpGet:
		if len(req.Keys) != 1 {
			return mismatch(req.Op, req.Keys[0], "get with %d keys", len(req.Keys))
		}
		e, known := m.find(req, 0)
		return m.checkElems(req.Op, req.Keys[0], e, known, resp, 0, 1, verify)
	case OpGetM:
		if resp.Status == StatusNotFound {
			for i, k := range req.Keys {
				if e, ok := m.find(req, i); ok && e.present && !e.mutable {
					return mismatch(req.Op, k, "not-found, want a value")
				}
			}
			return nil
		}
		if len(resp.Values) != len(req.Keys) {
			return mismatch(req.Op, req.Keys[0], "%d values for %d keys", len(resp.Values), len(req.Keys))
		}
		for i, k := range req.Keys {
			e, known := m.find(req, i)
			if err := m.checkValue(req.Op, k, e, known, resp.Values[i], 0, verify); err != nil {
				return err
			}
		}
		return nil
	case OpGetList:
		e, known := m.find(req, 0)
		return m.checkElems(req.Op, req.Keys[0], e, known, resp, 0, -1, verify)
	case OpGetFromList:
		e, known := m.find(req, 0)
		return m.checkElems(req.Op, req.Keys[0], e, known, resp, req.Index, 1, verify)
	}
	return mismatch(req.Op, req.Keys[0], "unknown op")
}

// checkElems checks a response carrying count elements of key (entry e,
// known: the model holds one) starting at element first (count -1: all
// elements).
func (m *Model) checkElems(op Op, key []byte, e modelEntry, known bool, resp *Response, first, count int, verify seedVerifier) error {
	h := keyHash(e, known, key)
	if !known || !e.present {
		if resp.Status == StatusNotFound || (known && e.mutable) {
			if resp.Status == StatusOK {
				return m.checkLoose(op, key, h, resp, first, count, verify)
			}
			return nil
		}
		return mismatch(op, key, "status %s for a key the model does not hold", resp.Status)
	}
	if e.mutable {
		if resp.Status == StatusNotFound {
			return nil
		}
		return m.checkLoose(op, key, h, resp, first, count, verify)
	}
	n := int(e.n)
	if count < 0 {
		count = n - first
	}
	if first < 0 || first+count > n {
		if resp.Status == StatusNotFound {
			return nil
		}
		return mismatch(op, key, "status %s for index %d of a %d-element key", resp.Status, first, n)
	}
	if resp.Status != StatusOK {
		return mismatch(op, key, "status %s, want ok", resp.Status)
	}
	if len(resp.Values) != count {
		return mismatch(op, key, "%d values, want %d", len(resp.Values), count)
	}
	for i := range count {
		v := resp.Values[i]
		want := int(m.sizes[int(e.off)+first+i])
		if len(v) != want {
			return mismatch(op, key, "element %d has %d bytes, want %d", first+i, len(v), want)
		}
		if !verify(v, seedOf(h, first+i)) {
			return mismatch(op, key, "element %d content differs", first+i)
		}
	}
	return nil
}

func (m *Model) checkLoose(op Op, key []byte, h uint64, resp *Response, first, count int, verify seedVerifier) error {
	if count >= 0 && len(resp.Values) != count {
		return mismatch(op, key, "%d values, want %d", len(resp.Values), count)
	}
	for i, v := range resp.Values {
		if !verify(v, seedOf(h, first+i)) {
			return mismatch(op, key, "element %d content differs", first+i)
		}
	}
	return nil
}

// checkValue checks one single-element value of key (entry e, known: the
// model holds one) (GetM).
func (m *Model) checkValue(op Op, key []byte, e modelEntry, known bool, v []byte, idx int, verify seedVerifier) error {
	seed := seedOf(keyHash(e, known, key), idx)
	if !known || !e.present || e.mutable {
		if !verify(v, seed) {
			return mismatch(op, key, "content differs")
		}
		return nil
	}
	if e.n != 1 {
		return mismatch(op, key, "key holds %d elements, GetM wants 1", e.n)
	}
	if want := int(m.sizes[e.off]); len(v) != want {
		return mismatch(op, key, "value has %d bytes, want %d", len(v), want)
	}
	if !verify(v, seed) {
		return mismatch(op, key, "content differs")
	}
	return nil
}

// Stats summarises the model: keys, elements and bytes held.
type ModelStats struct {
	Keys, Elements int
	Bytes          int64
	MaxElement     int
}

// Stats returns the totals of the model.
func (m *Model) Stats() ModelStats {
	var s ModelStats
	for _, e := range m.entries {
		if !e.present {
			continue
		}
		s.Keys++
		s.Elements += int(e.n)
		for _, z := range m.sizes[e.off : e.off+e.n] {
			s.Bytes += int64(z)
			s.MaxElement = max(s.MaxElement, int(z))
		}
	}
	return s
}
