package rpc

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// Request is a request being served. It is valid until it is answered
// (one Respond* call); do not use it afterwards.
type Request struct {
	ep        *Endpoint
	h         proto.ReqHandle
	reqType   uint8
	mode      Mode
	ent       *handlerEntry // its handler (Nexus.Register, RegisterLoop)
	data      []byte
	buf       mem.Buf // owned reference on the request bytes (zero when borrowed)
	borrowed  bool    // data aliases the current RX batch
	rxID      int
	pre       []byte
	inHandler bool
	done      bool
	dead      bool // the session went away before the answer
	tracked   bool // recorded in its session's reqs (answered after its handler returned)
	key       string
	role      uint8

	// Worker requests: what the worker side owns, in the Nexus's
	// concurrent pool, until it answers.
	wbuf     mem.Buf      // the request bytes (data is their window)
	wpre     mem.Buf      // the preallocated response, once PreResp asked
	answered bool         // the worker answered (touched by the worker only)
	wsegs    []mem.Buf    // the answer, prepared by the worker for the loop
	wone     [2]mem.Buf   // wsegs' storage for a head and one zero-copy entry
	wtotal   int          // the answer's length
	wstatus  proto.Status // not OK: answer with this status (the answer could not be prepared: rejected; Deny)
}

// Type is the request type.
func (r *Request) Type() uint8 { return r.reqType }

// Data is the request body. It stays valid until the request is answered:
// for single-packet requests of dispatch handlers it is the receive buffer
// itself (zero-copy); for worker handlers a copy in the Nexus's
// goroutine-safe pool, which the worker may decode (wire takes references
// on it) and which lives on in those references after the answer.
func (r *Request) Data() []byte { return r.data }

// InputBuf is Data as a mem.Buf (the zero Buf for an empty body),
// borrowed: no reference is taken, and it is valid exactly as long as Data
// is. A caller that keeps it longer, or lets a decoder keep it, must Clone
// it. A dispatch handler that answers before it returns may rely on it
// until it returns (the request's bytes are released after its handler
// returns); a worker handler's bytes are released when it answers.
func (r *Request) InputBuf() mem.Buf {
	switch {
	case len(r.data) == 0:
		return mem.Buf{}
	case r.borrowed:
		return r.ep.rx[r.rxID].Buf.SliceTrusted(proto.HeaderSize, len(r.data))
	case !r.wbuf.IsZero():
		return r.wbuf
	}
	return r.buf
}

// BorrowedTail is the last n bytes of InputBuf (0 < n <= len(Data()),
// unchecked: a caller's body after a header it parsed) for a dispatch
// request whose bytes lie in the endpoint's receive batch, windowed in one
// step, borrowed as InputBuf is; ok is false (and b zero) for any other
// request, whose caller slices InputBuf instead.
func (r *Request) BorrowedTail(n int) (b mem.Buf, ok bool) {
	if r.borrowed {
		return r.ep.rx[r.rxID].Buf.SliceTrusted(proto.HeaderSize+len(r.data)-n, n), true
	}
	return b, false
}

// Endpoint is the endpoint serving the request (for nested RPCs from
// dispatch handlers; worker handlers use Endpoint().Post).
func (r *Request) Endpoint() *Endpoint { return r.ep }

// Credential is the name of the credential the request's session
// authenticated with (NexusConfig.Keys), "" without authentication.
func (r *Request) Credential() string { return r.key }

// Role is the role of that credential (Key.Role), 0 without
// authentication: an application checks it before a request that needs a
// permission (the kv server refuses writes from a read-only role).
func (r *Request) Role() uint8 { return r.role }

// Session is the server-side session number the request arrived on.
func (r *Request) Session() Session { return Session(r.h.Session) }

// PreResp is the slot's preallocated response buffer (EndpointConfig.
// PreRespSize bytes of registered memory): write the response into it and
// call RespondPre. nil if the session is gone, or for a dispatch request
// when called from another goroutine than the endpoint's. A worker gets a
// buffer of the same size from the Nexus's goroutine-safe pool instead
// (nil once it answered, or if that pool is exhausted).
func (r *Request) PreResp() []byte {
	if r.mode == Worker {
		if r.wpre.IsZero() && !r.answered {
			b, err := r.ep.nx.workPool.Alloc(r.ep.cfg.PreRespSize)
			if err != nil {
				return nil
			}
			r.wpre = b
		}
		return r.wpre.Bytes()
	}
	if r.pre == nil {
		nested, err := r.ep.enter()
		if err != nil {
			return nil
		}
		r.pre = r.ep.preResp(r.h)
		r.ep.exit(nested)
	}
	return r.pre
}

// RespondPre answers with the first n bytes of PreResp.
func (r *Request) RespondPre(n int) error {
	if r.mode == Worker {
		if n < 0 || n > r.wpre.Len() {
			return ErrTooLarge
		}
		if n == 0 {
			return r.workerRespond(BytesMsg(nil))
		}
		b := r.wpre.Slice(0, n)
		r.wpre = mem.Buf{} // its reference goes with the message
		return r.workerRespond(BufMsg(b))
	}
	nested, err := r.ep.enter()
	if err != nil {
		return err
	}
	defer r.ep.exit(nested)
	if r.pre == nil {
		r.pre = r.ep.preResp(r.h)
	}
	if n < 0 || n > len(r.pre) {
		return ErrTooLarge
	}
	return r.ep.respond(r, Msg{}, n)
}

// Respond answers with m (consumed in every case). Dispatch handlers call
// it on the endpoint goroutine (during the handler or later, for example
// from a function given to Endpoint.Post); from another goroutine it
// returns ErrConcurrentUse. Worker handlers call it from any goroutine, as
// eRPC's background threads do: the worker serializes an object (or copies
// bytes) into the Nexus's goroutine-safe pool itself and hands the result
// to the endpoint's loop without waiting for it, so that, as on the loop,
// it may reuse the object's arena or the bytes once Respond returns. It
// returns what it meets (ErrAlreadyResponded for a second answer,
// ErrTooLarge, a serialization error: the client then gets ErrRejected,
// ErrClosed); what the loop meets later (the session went away meanwhile)
// drops the answer silently. A zero-copy field or BufMsg sent from a
// worker must live in a Concurrent pool: the loop takes and drops
// references on it.
func (r *Request) Respond(m Msg) error {
	if r.mode == Worker {
		return r.workerRespond(m)
	}
	nested, err := r.ep.enter()
	if err != nil {
		m.release()
		return err
	}
	defer r.ep.exit(nested)
	return r.ep.respond(r, m, -1)
}

// Deny answers r with "permission denied" instead of a response: the
// client's call fails with ErrDenied. An application denies what the
// request's credential may not do (Role). Like Respond, it is r's one
// answer (ErrAlreadyResponded otherwise), from the same goroutines.
func (r *Request) Deny() error {
	if r.mode != Worker {
		nested, err := r.ep.enter()
		if err != nil {
			return err
		}
		defer r.ep.exit(nested)
		return r.ep.respondStatus(r, proto.StatusDenied)
	}
	if r.answered {
		return ErrAlreadyResponded
	}
	r.answered = true
	defer r.releaseWorkerBufs()
	ep := r.ep
	nested, err := ep.enter()
	switch {
	case err == nil:
		defer ep.exit(nested)
		ep.atWorkers--
		return ep.respondStatus(r, proto.StatusDenied)
	case errors.Is(err, ErrConcurrentUse):
		r.wstatus = proto.StatusDenied
		if !ep.post(mail{kind: mailRespond, req: r}) {
			return ErrClosed
		}
		return nil
	default:
		return err
	}
}

// RespondBytes is Respond(BytesMsg(p)).
func (r *Request) RespondBytes(p []byte) error { return r.Respond(BytesMsg(p)) }

// own makes the request keep its bytes alive beyond the receive batch.
func (r *Request) own() {
	if !r.borrowed {
		return
	}
	r.borrowed = false
	if len(r.data) == 0 {
		r.data = nil
		return
	}
	b := r.ep.rx[r.rxID].Buf
	r.buf = b.Clone().Slice(proto.HeaderSize, len(r.data))
	r.data = r.buf.Bytes()
}

// workerRespond answers a worker request with m from any goroutine.
func (r *Request) workerRespond(m Msg) error {
	if r.answered {
		m.release()
		return ErrAlreadyResponded
	}
	r.answered = true
	defer r.releaseWorkerBufs() // the answer holds its own references
	ep := r.ep
	nested, err := ep.enter()
	switch {
	case err == nil:
		// The endpoint's own goroutine (a continuation or a function
		// given to Post answering for the worker), or nobody runs it.
		defer ep.exit(nested)
		ep.atWorkers--
		return ep.respond(r, m, -1)
	case errors.Is(err, ErrConcurrentUse):
		perr := r.prepare(m)
		if perr != nil {
			r.wstatus = proto.StatusRejected // the client learns of it (ErrRejected)
		}
		if !ep.post(mail{kind: mailRespond, req: r}) {
			r.releaseAnswer()
			return ErrClosed
		}
		return perr
	default:
		m.release()
		return err
	}
}

// prepare turns m into r.wsegs on the worker's goroutine, in the Nexus's
// concurrent pool (msgSegs). m is consumed on success.
func (r *Request) prepare(m Msg) error {
	var coll *driver.EntryCollector // for an object's zero-copy entries only
	if m.kind == msgObj {
		coll = new(driver.EntryCollector)
	}
	segs, total, err := msgSegs(m, r.ep.nx.workPool, coll, r.ep.maxMsg, r.wone[:0])
	if err != nil {
		m.release()
		return err
	}
	r.wsegs, r.wtotal = segs, total
	return nil
}

// releaseAnswer drops a prepared answer that will not be sent.
func (r *Request) releaseAnswer() {
	for i := range r.wsegs {
		_ = r.wsegs[i].Release()
		r.wsegs[i] = mem.Buf{}
	}
	r.wsegs = nil
}

// releaseWorkerBufs drops the worker side's references (a concurrent
// pool: from any goroutine).
func (r *Request) releaseWorkerBufs() {
	if !r.wbuf.IsZero() {
		_ = r.wbuf.Release()
		r.wbuf = mem.Buf{}
	}
	if !r.wpre.IsZero() {
		_ = r.wpre.Release()
		r.wpre = mem.Buf{}
	}
}

// runHandler runs a worker-mode handler (on a worker goroutine).
func (r *Request) runHandler() {
	defer func() {
		if p := recover(); p != nil {
			// A panicking handler must not take the worker down; the
			// client gets ErrRejected unless the handler already answered
			// (an empty Msg is refused by the loop, which rejects).
			if !r.answered {
				_ = r.workerRespond(Msg{})
			}
		}
	}()
	r.ent.fn(r)
}

// Response is a completed (or failed) request, passed to continuations.
type Response struct {
	// Err is nil on success; otherwise why the request failed
	// (ErrPeerFailed, ErrNoHandler, context errors for cancelled calls, ...).
	Err      error
	ep       *Endpoint
	data     []byte
	buf      mem.Buf
	borrowed bool
	rxID     int
	// A response received in place (Segments): its parts, the packet's
	// Hold (borrowed from the receive batch), its length, and whether data
	// is their gathered copy yet.
	segs     [][]byte
	hold     mem.Buf
	total    int
	gathered bool
}

// Data is the response body, valid during the continuation only (it may be
// the receive buffer itself); Retain keeps it longer. For a response
// received in place (Segments) the first call gathers the parts into a
// scratch buffer of the endpoint (one copy), valid during the
// continuation only.
func (r *Response) Data() []byte {
	if r.segs != nil && !r.gathered {
		r.gatherResp()
	}
	return r.data
}

// Segments returns the body of a response received in place, nil
// otherwise (then Data is the body). It happens on a datapath that hands
// packets over in place (datapath.SegmentReceiver: datapath/shm) for a
// response that fits in one packet and carried zero-copy entries: segs[0]
// is the head (the serialized object's header and copied fields, copied
// into this endpoint's memory) and segs[1:] are read-only views of the
// sender's memory, the body being their concatenation. Decode an object
// from them in place with wire.DecodeSegments(m, segs, 0, hold): its
// arena takes its own reference on hold, so the decoded fields stay valid
// until the arena's Reset. Without such a reference, segs and hold are
// valid during the continuation only; hold is borrowed (Clone it to keep
// it). The sender reuses the memory only after hold and every clone of it
// were released. Never write through segs.
func (r *Response) Segments() (segs [][]byte, hold mem.Buf) {
	if r.segs == nil {
		return nil, mem.Buf{}
	}
	return r.segs, r.hold
}

// DataBuf is Data as a mem.Buf, borrowed: no reference is taken, and it is
// valid during the continuation only, as Data is. It is the zero Buf for a
// failed or empty response and for one received in place (Segments: its
// bytes are not one buffer of this endpoint; Retain copies them). A caller
// that keeps it, or lets a decoder keep it, beyond the continuation must
// Clone it (or call Retain).
func (r *Response) DataBuf() mem.Buf {
	switch {
	case r.Err != nil || len(r.data) == 0 || r.segs != nil:
		return mem.Buf{}
	case r.borrowed:
		return r.ep.rx[r.rxID].Buf.SliceTrusted(proto.HeaderSize, len(r.data))
	}
	return r.buf
}

// Retain returns a new reference on the response bytes that the caller
// owns (Release it); the zero Buf for an empty or failed response. A
// response received in place (Segments) is copied into the endpoint's
// pool: Retain returns the zero Buf when the pool has no memory for it.
func (r *Response) Retain() mem.Buf {
	b, _ := r.retain()
	return b
}

func (r *Response) retain() (mem.Buf, error) {
	if r.segs != nil {
		b, err := r.ep.pool.AllocCopy(r.Data())
		if err != nil {
			return mem.Buf{}, fmt.Errorf("rpc: copying a response received in place: %w", err)
		}
		return b, nil
	}
	if len(r.data) == 0 {
		return mem.Buf{}, nil
	}
	if r.borrowed {
		return r.ep.rx[r.rxID].Buf.Clone().Slice(proto.HeaderSize, len(r.data)), nil
	}
	return r.buf.Clone(), nil
}
