// Package workload generates the key-value workloads of the Cornflakes
// evaluation (SOSP'23 §6): YCSB-C with Java YCSB's scrambled Zipfian keys,
// the Google protobuf bytes-field size distribution, Twitter cache cluster 4
// (synthetic, or replayed from the real trace's CSV), and the Tragen CDN
// "image" class.
//
// A Workload produces three things, all deterministic for a given
// configuration and seed:
//   - the records to preload into the server (Preload),
//   - one request Stream per client goroutine (NewStream),
//   - a reference Model that checks every response (Model().Check).
//
// Requests are independent of any serializer: a Request names an Op, keys,
// values and a list index. Value bytes are a pure function of (key, index)
// (see Fill), so a client verifies a response without storing the data.
// docs/WORKLOADS.md documents every workload, its numbers and their sources.
package workload

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Op is a key-value operation, the request types of the Cornflakes KV store.
type Op uint8

// The operations. Their request/response shapes are:
//
//	Get(key) -> one value           Put(key, value) -> ok
//	GetM(keys...) -> one value/key  PutM(keys..., values...) -> ok
//	GetList(key) -> the whole list  PutList(key, values...) -> ok (replaces the list)
//	AppendToList(key, values...) -> ok (appends in order)
//	GetFromList(key, Index) -> the list element at Index
//	Delete(key) -> ok
const (
	OpInvalid Op = iota
	OpGet
	OpPut
	OpGetM
	OpPutM
	OpGetList
	OpPutList
	OpAppendToList
	OpGetFromList
	OpDelete
	numOps
)

var opNames = [numOps]string{"invalid", "get", "put", "getm", "putm", "getlist", "putlist", "appendtolist", "getfromlist", "delete"}

// String returns the lower-case name of o.
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// IsRead reports whether o only reads the store (its response carries values).
func (o Op) IsRead() bool {
	return o == OpGet || o == OpGetM || o == OpGetList || o == OpGetFromList
}

// Request is one key-value request, independent of any serializer.
//
// Keys and Values alias memory owned by the Request itself (its scratch
// buffer), filled by Stream.Next or Workload.Preload; they stay valid until the
// Request is filled again. A request drawn by a synthetic workload's Stream
// also records each key's entry in the workload's Model, which Check uses
// instead of looking the key up: replacing a key slice is noticed (the key
// is then looked up), changing a key's bytes in place is not (checked in
// cfcheck builds). A Request is reused without allocating once its
// scratch has grown to the workload's largest request.
type Request struct {
	Op     Op
	Keys   [][]byte // Get/Put/GetList/PutList/AppendToList/GetFromList/Delete: 1 key; GetM/PutM: one per value
	Values [][]byte // Put: 1; PutM: one per key; PutList/AppendToList: the list elements in order
	Index  int      // GetFromList: the list element requested
	// Units is the number of work units completed when this request's
	// response arrives: 1 for most workloads; for cdn, 1 on the last segment
	// of an object and 0 on the others, so units/s = objects/s.
	Units int

	buf   []byte
	spans []span
	// model and mix: for each key (in Keys order), the index of its entry
	// in model, recorded by the stream that drew it (-1: unknown), so that
	// Model.Check need not look the key up. nil model: none recorded. A
	// key slice replaced after Next (it no longer aliases the span the
	// index was recorded for) is looked up again.
	model *Model
	mix   []keyIx
}

// keyIx is a key's span in the scratch and its model entry (-1: unknown).
type keyIx struct{ off, n, x int32 }

// modelIndex returns the model entry recorded for key i, or -1 when there
// is none or Keys[i] is no longer the key it was recorded for.
func (r *Request) modelIndex(i int) int32 {
	if i >= len(r.mix) || i >= len(r.Keys) {
		return -1
	}
	k, e := r.Keys[i], r.mix[i]
	if e.x < 0 || len(k) != int(e.n) || e.n == 0 || int(e.off) >= len(r.buf) || unsafe.SliceData(k) != &r.buf[e.off] {
		return -1
	}
	return e.x
}

type span struct {
	off, n int
	val    bool
	fillIx int // value: the list index whose Fill content it holds
	keyIx  int // value: the key (index into Keys) the content derives from
}

// reset starts a new request, keeping the scratch capacity.
func (r *Request) reset(op Op) {
	r.Op = op
	r.Index = 0
	r.Units = 1
	r.buf = r.buf[:0]
	r.spans = r.spans[:0]
	r.Keys = r.Keys[:0]
	r.Values = r.Values[:0]
	r.model = nil
	r.mix = r.mix[:0]
}

// addKey appends a key built by the caller into the scratch.
func (r *Request) beginKey() int { return len(r.buf) }

func (r *Request) endKey(start int) { r.endKeyAt(start, nil, -1) }

// endKeyAt ends a key whose entry in model m is x (-1, or m nil: unknown).
// Every key of a request must name the same model (or none).
func (r *Request) endKeyAt(start int, m *Model, x int32) {
	n := len(r.buf) - start
	r.spans = append(r.spans, span{off: start, n: n})
	if m == nil || start > math.MaxInt32 || n > math.MaxInt32 {
		x = -1
	}
	if x >= 0 {
		r.model = m
	}
	r.mix = append(r.mix, keyIx{off: int32(start), n: int32(n), x: x})
}

// addKeyBytes copies k in as the next key.
func (r *Request) addKeyBytes(k []byte) {
	s := r.beginKey()
	r.buf = append(r.buf, k...)
	r.endKey(s)
}

// addValue reserves an n-byte value whose content is Fill(key keyIx, fillIx).
func (r *Request) addValue(keyIx, fillIx, n int) {
	off := len(r.buf)
	if cap(r.buf)-off < n {
		nb := make([]byte, off, 2*cap(r.buf)+n)
		copy(nb, r.buf)
		r.buf = nb
	}
	r.buf = r.buf[:off+n]
	r.spans = append(r.spans, span{off: off, n: n, val: true, fillIx: fillIx, keyIx: keyIx})
}

// finish materialises Keys and Values from the scratch and fills the values.
func (r *Request) finish() {
	for _, s := range r.spans {
		b := r.buf[s.off : s.off+s.n : s.off+s.n]
		if s.val {
			r.Values = append(r.Values, b)
		} else {
			r.Keys = append(r.Keys, b)
		}
	}
	for _, s := range r.spans {
		if s.val {
			Fill(r.buf[s.off:s.off+s.n], r.Keys[s.keyIx], s.fillIx)
		}
	}
}

// CopyFrom makes r a deep copy of src (reusing r's scratch).
func (r *Request) CopyFrom(src *Request) {
	r.reset(src.Op)
	r.Index = src.Index
	r.Units = src.Units
	for _, k := range src.Keys {
		r.addKeyBytes(k)
	}
	if src.model != nil {
		for i := range r.mix {
			r.mix[i].x = src.modelIndex(i)
		}
		r.model = src.model
	}
	for _, v := range src.Values {
		off := len(r.buf)
		r.buf = append(r.buf, v...)
		r.spans = append(r.spans, span{off: off, n: len(v), val: true, fillIx: -1})
	}
	for _, s := range r.spans {
		b := r.buf[s.off : s.off+s.n : s.off+s.n]
		if s.val {
			r.Values = append(r.Values, b)
		} else {
			r.Keys = append(r.Keys, b)
		}
	}
}

// Bytes returns the total key and value bytes of the request.
func (r *Request) Bytes() int {
	n := 0
	for _, k := range r.Keys {
		n += len(k)
	}
	for _, v := range r.Values {
		n += len(v)
	}
	return n
}

// Status is the outcome of a request as reported by the server.
type Status uint8

const (
	// StatusOK: the request succeeded; reads carry their values.
	StatusOK Status = iota
	// StatusNotFound: the key (or list index) does not exist.
	StatusNotFound
	// StatusError: the server rejected the request or the transport failed.
	StatusError
)

// String returns the status name.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusNotFound:
		return "not-found"
	case StatusError:
		return "error"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Response is a server's answer to a Request as seen by the load generator.
// Values are borrowed from the transport for the duration of a check.
type Response struct {
	Status Status
	Values [][]byte
}

// Errors returned by this package.
var (
	// ErrMismatch: a response differs from what the reference model expects.
	ErrMismatch = errors.New("workload: response mismatch")
	// ErrBadSpec: a workload specification string or option is invalid.
	ErrBadSpec = errors.New("workload: bad workload spec")
	// ErrTrace: a trace file line is malformed or exceeds a limit.
	ErrTrace = errors.New("workload: bad trace")
)
