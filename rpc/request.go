package rpc

import (
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
	fn        Handler
	data      []byte
	buf       mem.Buf // owned reference on the request bytes (zero when borrowed)
	borrowed  bool    // data aliases the current RX batch
	rxID      int
	pre       []byte
	inHandler bool
	done      bool
	dead      bool // the session went away before the answer
	tracked   bool // recorded in its session's reqs (answered after its handler returned)
}

// Type is the request type.
func (r *Request) Type() uint8 { return r.reqType }

// Data is the request body. It stays valid until the request is answered:
// for single-packet requests of dispatch handlers it is the receive buffer
// itself (zero-copy).
func (r *Request) Data() []byte { return r.data }

// Endpoint is the endpoint serving the request (for nested RPCs from
// dispatch handlers; worker handlers use Endpoint().Post).
func (r *Request) Endpoint() *Endpoint { return r.ep }

// Session is the server-side session number the request arrived on.
func (r *Request) Session() Session { return Session(r.h.Session) }

// PreResp is the slot's preallocated response buffer (EndpointConfig.
// PreRespSize bytes of registered memory): write the response into it and
// call RespondPre. nil if the session is gone, or for a dispatch request
// when called from another goroutine than the endpoint's.
func (r *Request) PreResp() []byte {
	if r.pre == nil && r.mode == Dispatch {
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
		if n < 0 || n > len(r.pre) {
			return ErrTooLarge
		}
		r.done = true
		r.ep.post(mail{kind: mailRespond, req: r, pre: n})
		return nil
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
// returns ErrConcurrentUse. Worker handlers call it from any goroutine,
// which hands m to the endpoint: a BytesMsg is copied first, a Buf or
// object must not be touched afterwards.
func (r *Request) Respond(m Msg) error {
	if r.mode == Worker {
		r.done = true
		if m.kind == msgBytes {
			m.bytes = append([]byte(nil), m.bytes...)
		}
		r.ep.post(mail{kind: mailRespond, req: r, msg: m, pre: -1})
		return nil
	}
	nested, err := r.ep.enter()
	if err != nil {
		m.release()
		return err
	}
	defer r.ep.exit(nested)
	return r.ep.respond(r, m, -1)
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

// runHandler runs a worker-mode handler (on a worker goroutine).
func (r *Request) runHandler() {
	defer func() {
		if p := recover(); p != nil {
			// A panicking handler must not take the worker down; the
			// client gets ErrRejected unless the handler already answered.
			if !r.done {
				r.ep.post(mail{kind: mailRespond, req: r, msg: Msg{}, pre: -1})
			}
		}
	}()
	r.fn(r)
}

// Response is a completed (or failed) request, passed to continuations.
// It is valid only during the continuation.
type Response struct {
	// Err is nil on success; otherwise why the request failed
	// (ErrPeerFailed, ErrNoHandler, context errors for cancelled calls, ...).
	Err      error
	ep       *Endpoint
	data     []byte
	buf      mem.Buf
	borrowed bool
	rxID     int
}

// Data is the response body, valid during the continuation only (it may be
// the receive buffer itself); Retain keeps it longer.
func (r *Response) Data() []byte { return r.data }

// Retain returns a new reference on the response bytes that the caller
// owns (Release it); the zero Buf for an empty or failed response.
func (r *Response) Retain() mem.Buf {
	if len(r.data) == 0 {
		return mem.Buf{}
	}
	if r.borrowed {
		return r.ep.rx[r.rxID].Buf.Clone().Slice(proto.HeaderSize, len(r.data))
	}
	return r.buf.Clone()
}
