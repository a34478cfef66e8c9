package service

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// ErrCallInFlight: AsyncCall.Start while the call's previous request is
// still in flight (its done function has not run yet).
var ErrCallInFlight = errors.New("service: AsyncCall started while in flight")

// AsyncCall is one reusable asynchronous call of one method: a caller
// that keeps calls in flight (a closed loop, one AsyncCall per slot) makes
// it once and starts it again from its done function, instead of building
// a call per request as InvokeAsync does. Generated New<Method>Call stubs
// make it. At most one request is in flight per AsyncCall.
//
// Ownership: the arena a given to NewAsyncCall belongs to the call from
// Start until done runs, as with InvokeAsync: the response is a message of
// a (made with newResp), valid until a.Reset. done runs on the goroutine
// that runs the Client's loop; it may call Start again (the next request
// of the same slot) but must not block.
type AsyncCall[R Decoder] struct {
	cl      clientCall // this call's own: never pooled
	d       *ServiceDesc
	i       int
	key     *MethodDesc // &d.Methods[i]
	a       *wire.Arena
	newResp func(*wire.Arena) R
	done    func(R, error)
	busy    atomic.Bool
	// si: the index in the Client's sessions of the session of the call's
	// last request on Start's common path (nextSession).
	si uint32
	// hb is the binding cl was prepared for: cl.buf starts with the
	// request header of a call under hb (without flags), and cl.b,
	// cl.key and cl.reqType are hb's (Start's fast path).
	hb *binding
	// fallback is done for Starts through InvokeAsync's path (it marks
	// the call idle first).
	fallback func(R, error)
	// bigReq: a request of the call did not fit the endpoint's send record
	// (Start's inline path is not tried again).
	bigReq bool
	// fast: Start's plan for binding hb, made when the call is prepared
	// for it (startSlow): the method has a generated EncodeRequest, the
	// Client no interceptor and no Observer, and no request was too big.
	fast bool
	// own: ResetAfterDone was called. inDone: done runs (on the loop).
	// pending: a Start took InvokeAsync's path, which made its response
	// message in a, and that response was not delivered yet (a is then
	// not reset after a done).
	own, inDone, pending bool
	resetErrs            atomic.Int64
	// held: references on received buffers that responses still in the
	// arena borrowed (deliver), released after its next Reset.
	held []mem.Buf
	// bdTab is the itab of (bufDecoder, R) when R is a pointer type that
	// implements bufDecoder (decodeOwn), nil otherwise.
	bdTab unsafe.Pointer
	// reuse, when set (NewAsyncCallReusing), makes resp empty again for
	// each common response of a ResetAfterDone call: resp is the one
	// response message the call keeps, outside k.a's memory.
	reuse func(R, *wire.Arena) R
	resp  R
	// decodeKept, when set (NewAsyncCallKept), is reuse and the decode of
	// a response into resp fused: contFn's common response takes it.
	decodeKept func(R, *wire.Arena, mem.Buf) (R, error)
	// keptDecode: contFn decodes a common response into resp and delivers
	// it itself (ResetAfterDone, reuse set, no Observer: decided once).
	keptDecode bool
	// b1c, b1f, b1bit, b1rest, when b1c is set (NewAsyncCallKeptBytes1):
	// resp's Core, its only field (bytes) and the field's bit, and
	// decodeKept's second half: contFn decodes a common response with
	// wireimpl.DecodeKeptBytes1 itself (decodeKept without its frame).
	b1c    *wireimpl.Core
	b1f    *wireimpl.Bytes
	b1bit  uint32
	b1rest func(R, *wireimpl.Source, mem.Buf) (R, error)
	// kept1: keptDecode with b1c set (decided once, by ResetAfterDone):
	// contFn decodes a common response with wireimpl.DecodeBorrowedBytes1
	// and lends the call to done.
	kept1 bool
	// lent: the call is lent to the done function contFn runs (busy stays
	// set; on the loop's goroutine only): a Start from done takes it
	// without busy's compare-and-swap, and contFn makes the call idle
	// after done if none did.
	lent bool
	// loop: the endpoint held by the continuation that lent the call
	// (valid while lent).
	loop rpc.Loop
	// reqFields (RequestBytes1): the request's Core, only field and its
	// bit, ok false for a request of another type.
	reqFields func(wire.Object) (*wireimpl.Core, *wireimpl.Bytes, uint32, bool)
}

// wireimpl.DecodeBorrowedBytes1 reads the message after an 8-byte
// framing word: the OK response header (respFixed bytes, respOKWord).
var _ [respFixed - 8]struct{}
var _ [8 - respFixed]struct{}

// iface is the layout of a non-empty interface value: its itab (naming
// the interface and the dynamic type) and its data word.
type iface struct{ tab, data unsafe.Pointer }

// bufDecoderTab returns the itab of (bufDecoder, R) if R is a pointer type
// implementing bufDecoder (a generated message), nil otherwise.
func bufDecoderTab[R Decoder]() unsafe.Pointer {
	if reflect.TypeFor[R]().Kind() != reflect.Pointer {
		return nil
	}
	var zero R // a nil pointer of the type: the conversion needs only the type
	bd, ok := any(zero).(bufDecoder)
	if !ok {
		return nil
	}
	return (*iface)(unsafe.Pointer(&bd)).tab
}

// bufDecoder is a response message that decodes from a registered
// buffer (every generated message: Decode).
type bufDecoder interface {
	Decode(b mem.Buf) error
}

// ResetAfterDone makes the call reset its arena itself after each done
// function returns: the response, and everything else in the arena, is
// valid during done only. In exchange the response is decoded from the
// received buffer, borrowed until that Reset, instead of being copied into
// the arena first (a generated message's Decode: its large fields alias
// the received bytes). done must not
// Reset the arena, nor keep anything of it; it may Start the call again.
// A Start that takes InvokeAsync's path (a context with a deadline or
// metadata, a method being bound, a Start off the loop) makes its response
// message in the arena at once: a Start from done then keeps the arena
// (and the received bytes its response borrowed) until the next done has
// run. Call it before the first Start. Reset errors (a reference released twice
// elsewhere) are counted (ResetErrors).
func (k *AsyncCall[R]) ResetAfterDone() {
	k.own = true
	k.bdTab = bufDecoderTab[R]()
	k.keptDecode = k.bdTab != nil && k.reuse != nil && k.cl.c.obs == nil
	k.kept1 = k.keptDecode && k.b1c != nil
}

// ResetErrors is the number of failed arena Resets of a ResetAfterDone
// call.
func (k *AsyncCall[R]) ResetErrors() int64 { return k.resetErrs.Load() }

// deliver runs done with an outcome (on the loop) and, for a
// ResetAfterDone call, resets the arena after it. borrowed is the received
// buffer the response was decoded from without a reference (decodeOwn),
// valid during the continuation only: if the arena cannot be reset now, it
// gets a reference that lasts until the arena's Reset.
func (k *AsyncCall[R]) deliver(resp R, err error, borrowed mem.Buf) {
	if !k.own {
		k.done(resp, err)
		return
	}
	if k.inDone || k.pending {
		// done runs already (this is a Start from it that completed at
		// once: the outer deliver decides), or the arena holds the
		// message of a response still to come: no Reset now. The
		// bytes the response borrowed get a reference until it.
		k.done(resp, err)
		if !borrowed.IsZero() {
			k.held = append(k.held, borrowed.Clone())
		}
		return
	}
	k.inDone = true
	k.done(resp, err)
	k.inDone = false
	if k.pending {
		if !borrowed.IsZero() {
			k.held = append(k.held, borrowed.Clone())
		}
		return
	}
	if rerr := k.a.Reset(); rerr != nil {
		k.resetErrs.Add(1)
	}
	if len(k.held) != 0 {
		k.releaseHeld()
	}
}

// releaseHeld releases the references deliver kept (after the arena's
// Reset).
func (k *AsyncCall[R]) releaseHeld() {
	if rerr := mem.ReleaseAll(k.held); rerr != nil {
		k.resetErrs.Add(1)
	}
	clear(k.held)
	k.held = k.held[:0]
}

// decodeOwn decodes resp from r's body (data, after the OK header) for a
// ResetAfterDone call, borrowing the received bytes (rpc.Response.DataBuf:
// no reference is taken; deliver resets the arena before the continuation
// returns, or keeps the bytes with a reference of its own), which it
// returns for deliver. ok false: it did not decode (R is not a pointer
// type implementing bufDecoder, or the response was received in place),
// nothing was done.
func (k *AsyncCall[R]) decodeOwn(resp R, r *rpc.Response, data []byte) (ok bool, borrowed mem.Buf, err error) {
	b := r.DataBuf() // the response body with its header
	if k.bdTab == nil || b.Len() != len(data) {
		return false, mem.Buf{}, nil
	}
	// resp as a bufDecoder: R is a pointer type (bufDecoderTab), so its
	// value is the interface's data word.
	var bd bufDecoder
	*(*iface)(unsafe.Pointer(&bd)) = iface{k.bdTab, *(*unsafe.Pointer)(unsafe.Pointer(&resp))}
	a := k.a
	a.BorrowInput = true
	err = bd.Decode(b.SliceTrusted(respFixed, len(data)-respFixed))
	a.BorrowInput = false
	return true, b, err
}

// NewAsyncCall makes a reusable call of method i of service d over c:
// each Start sends req and done later runs with a response made by
// newResp in a (or the zero R and the error). a must not be nil.
// Generated New<Method>Call stubs call it.
func NewAsyncCall[R Decoder](c *Client, d *ServiceDesc, i int, a *wire.Arena, newResp func(*wire.Arena) R, done func(R, error)) *AsyncCall[R] {
	k := &AsyncCall[R]{d: d, i: i, key: &d.Methods[i], a: a, newResp: newResp, done: done}
	k.si = c.rr.Add(1) % uint32(len(c.sess)) // where its rotation starts (nextSession)
	cl := &k.cl
	cl.c, cl.ch = c, make(chan struct{}, 1)
	cl.sendFn = cl.send
	// The continuation of the call's requests (on the loop). The
	// common response (OK, no status, no Observer) is decoded and delivered
	// here, for a ResetAfterDone call whose done is not running and whose
	// arena holds no other response (the usual closed loop) in one piece:
	// decodeOwn and deliver inline; finish does everything else.
	cl.contFn = func(r *rpc.Response) {
		// k.kept1: ResetAfterDone with a kept response message of one
		// bytes field and no Observer (decided once, by ResetAfterDone).
		if k.kept1 && !k.inDone && !k.pending && r.Err == nil && wireimpl.DecodeBorrowedBytes1(k.b1c, k.b1f, k.b1bit, (*wireimpl.Arena)(k.a), r.Data(), respOKWord) {
			// The response (after the OK header) decoded into the kept
			// message, its value aliasing the received bytes until the
			// arena's Reset below (after done), as under BorrowInput.
			k.cl.c.loopPending-- // end's work, inline (cl.pre holds no entry: Start released them)
			// deliver's, inline, with the call lent to done: busy stays
			// set, so that a Start from done needs no compare-and-swap (and
			// a Start from another goroutine meanwhile gets
			// ErrCallInFlight).
			k.lent, k.loop = true, r.Loop()
			k.inDone = true
			k.done(k.resp, nil)
			k.inDone = false
			if k.pending || len(k.held) != 0 {
				k.afterDoneHeld(r.DataBuf())
			} else if rerr := k.a.Reset(); rerr != nil {
				k.resetErrs.Add(1)
			}
			if k.lent { // done did not start the call again: idle now
				k.lent = false
				k.busy.Store(false)
			}
			return
		}
		k.contKept(r)
	}
	cl.fin = k.finish // for good: every request of cl is asynchronous
	cl.state.Store(stPending)
	k.fallback = func(r R, err error) {
		k.pending = false
		k.busy.Store(false)
		k.deliver(r, err, mem.Buf{})
	}
	return k
}

// contKept is the continuation of a response contFn's first case does
// not take: the common response of a keptDecode call decoded into the kept
// message with the generated helpers (and delivered here), any other
// through cont.
func (k *AsyncCall[R]) contKept(r *rpc.Response) {
	if k.keptDecode && !k.inDone && !k.pending && r.Err == nil {
		data := r.Data()
		if b := r.DataBuf(); isRespOK(data) && b.Len() == len(data) {
			a := k.a
			body := b.SliceTrusted(respFixed, len(data)-respFixed)
			var resp R
			var derr error
			a.BorrowInput = true
			if k.b1c != nil { // decodeKept(k.resp, a, body) in one call (NewAsyncCallKeptBytes1)
				resp = k.resp
				if src, ok := wireimpl.DecodeKeptBytes1(k.b1c, k.b1f, k.b1bit, (*wireimpl.Arena)(a), body); !ok {
					resp, derr = k.b1rest(resp, src, body)
				}
			} else {
				resp, derr = k.decodeKeptBody(body)
			}
			a.BorrowInput = false
			if derr != nil {
				var zero R
				k.end(zero, k.decodeErr(derr), b)
				return
			}
			k.cl.c.loopPending-- // end's work, inline (cl.pre holds no entry: Start released them)
			k.busy.Store(false)
			// deliver's, inline.
			k.inDone = true
			k.done(resp, nil)
			k.inDone = false
			if k.pending || len(k.held) != 0 {
				k.afterDoneHeld(b)
				return
			}
			if rerr := a.Reset(); rerr != nil {
				k.resetErrs.Add(1)
			}
			return
		}
	}
	k.cont(r)
}

// decodeKeptBody decodes the common response body (in the received buffer,
// borrowed) into k.resp for contFn without NewAsyncCallKeptBytes1's
// helper: with decodeKept, or reuse and the message's Decode.
func (k *AsyncCall[R]) decodeKeptBody(body mem.Buf) (R, error) {
	if dk := k.decodeKept; dk != nil {
		return dk(k.resp, k.a, body) // (k.resp itself)
	}
	resp := k.reuse(k.resp, k.a) // (k.resp itself, made empty)
	var bd bufDecoder            // resp as a bufDecoder (see decodeOwn)
	*(*iface)(unsafe.Pointer(&bd)) = iface{k.bdTab, *(*unsafe.Pointer)(unsafe.Pointer(&resp))}
	return resp, bd.Decode(body)
}

// afterDoneHeld ends contFn's common response after done when the arena
// cannot simply be reset: a Start from done took InvokeAsync's path
// (k.pending: the arena holds that call's response message; the received
// bytes the response borrowed get a reference until its Reset), or
// references kept earlier wait for this Reset (released after it).
func (k *AsyncCall[R]) afterDoneHeld(b mem.Buf) {
	if k.pending {
		if !b.IsZero() { // (the zero Buf: a response received in place, gathered by Data)
			k.held = append(k.held, b.Clone())
		}
		return
	}
	if rerr := k.a.Reset(); rerr != nil {
		k.resetErrs.Add(1)
	}
	k.releaseHeld()
}

// NewAsyncCallReusing is NewAsyncCall for a response type that can be
// made empty again in place: reuse(nil, a) makes a new empty message
// bound to a, outside a's memory; reuse(x, a) makes x empty again, bound
// to a's current batch (what newResp(a) returns, without making a
// message). A ResetAfterDone call then decodes its common responses (the
// ones its continuation resets the arena after) into one message that it
// keeps for good, instead of making one in a per response; its other
// responses are made by newResp as NewAsyncCall's are. Either way a
// response is valid during done only. Generated New<Method>Call stubs call
// it for a response type of their own package.
func NewAsyncCallReusing[R Decoder](c *Client, d *ServiceDesc, i int, a *wire.Arena, newResp func(*wire.Arena) R, reuse func(R, *wire.Arena) R, done func(R, error)) *AsyncCall[R] {
	k := NewAsyncCall(c, d, i, a, newResp, done)
	var zero R
	k.reuse, k.resp = reuse, reuse(zero, a)
	return k
}

// NewAsyncCallKept is NewAsyncCallReusing with decodeKept, reuse and the
// response's Decode fused: decodeKept(x, a, b) makes x empty and bound to
// a's current batch as reuse(x, a) does, decodes it from b as its Decode
// does (zero-copy; the arena holds a reference on b until Reset unless
// a.BorrowInput) and returns x, also with Decode's error. A
// ResetAfterDone call decodes its common responses with it. Generated
// New<Method>Call stubs call it for a response type of their own package
// whose decode they can fuse.
func NewAsyncCallKept[R Decoder](c *Client, d *ServiceDesc, i int, a *wire.Arena, newResp func(*wire.Arena) R, reuse func(R, *wire.Arena) R, decodeKept func(R, *wire.Arena, mem.Buf) (R, error), done func(R, error)) *AsyncCall[R] {
	k := NewAsyncCallReusing(c, d, i, a, newResp, reuse, done)
	k.decodeKept = decodeKept
	return k
}

// NewAsyncCallKeptBytes1 is NewAsyncCallKept for a response type whose
// only field is a bytes field (of implicit presence, numbered 1..32):
// fields(x) returns x's Core, that field and the field's bit of bitmap
// word 0, and decodeKept(x, a, b) is wireimpl.DecodeKeptBytes1 with
// these, then, when that does not decode (ok false), rest(x, src, b). A
// ResetAfterDone call decodes its common responses the same way into its
// kept response, without decodeKept's call. Generated New<Method>Call
// stubs call it for such a response type of their own package.
func NewAsyncCallKeptBytes1[R Decoder](c *Client, d *ServiceDesc, i int, a *wire.Arena, newResp func(*wire.Arena) R, reuse func(R, *wire.Arena) R, decodeKept func(R, *wire.Arena, mem.Buf) (R, error), rest func(R, *wireimpl.Source, mem.Buf) (R, error), fields func(R) (*wireimpl.Core, *wireimpl.Bytes, uint32), done func(R, error)) *AsyncCall[R] {
	k := NewAsyncCallKept(c, d, i, a, newResp, reuse, decodeKept, done)
	k.b1c, k.b1f, k.b1bit = fields(k.resp) // k.resp is kept for good
	k.b1rest = rest
	return k
}

// RequestBytes1 tells k that its method's request type is a message whose
// only field is a bytes field (of implicit presence, numbered 1..32):
// fields(req) returns req's Core, that field and the field's bit of bitmap
// word 0 for a request of that type (a non-nil pointer), ok false for any
// other, and the method's WriteRequest is wireimpl.WriteFlatBytes1 with
// these. Start then writes such a request itself, without the
// WriteRequest call (the field's place in the message is taken from the
// request k is prepared with, once per binding). It returns k. Generated
// New<Method>Call stubs call it for such a request type of their own
// package.
func RequestBytes1[R Decoder](k *AsyncCall[R], fields func(wire.Object) (*wireimpl.Core, *wireimpl.Bytes, uint32, bool)) *AsyncCall[R] {
	k.reqFields = fields
	return k
}

// prepareW1 records in k.cl where req's Core and only field lie in it
// (offsets, the same for every request of its type) and the itab of req's
// type, for WriteInline (RequestBytes1); nothing for a request fields does
// not take.
func (k *AsyncCall[R]) prepareW1(req wire.Object) {
	c, f, bit, ok := k.reqFields(req)
	w := (*iface)(unsafe.Pointer(&req))
	if !ok || w.data == nil {
		return
	}
	cl := &k.cl
	cl.w1c = uintptr(unsafe.Pointer(c)) - uintptr(w.data)
	cl.w1f = uintptr(unsafe.Pointer(f)) - uintptr(w.data)
	cl.w1bit, cl.w1tab = bit, w.tab
}

// cont is the continuation of every response contFn does not deliver
// itself: errors, statuses, an Observer, a call whose done runs or whose
// arena holds another response, a response received in place.
func (k *AsyncCall[R]) cont(r *rpc.Response) {
	var data []byte
	if r.Err == nil {
		data = r.Data()
	}
	if r.Err != nil || !isRespOK(data) || k.cl.c.obs != nil {
		k.finish(&k.cl, data, r.Err)
		return
	}
	if k.bdTab != nil && !k.inDone && !k.pending { // bdTab: ResetAfterDone
		if b := r.DataBuf(); b.Len() == len(data) {
			var resp R
			if k.reuse != nil {
				resp = k.reuse(k.resp, k.a) // (k.resp itself, made empty)
			} else {
				resp = k.newResp(k.a)
			}
			ok, borrowed, derr := k.decodeOwn(resp, r, data)
			if ok {
				if derr != nil {
					var zero R
					k.end(zero, k.decodeErr(derr), borrowed)
					return
				}
				k.cl.c.loopPending--
				k.busy.Store(false)
				k.deliver(resp, nil, borrowed)
				return
			}
		}
	}
	k.contSlow(r, data)
}

// contSlow is the continuation for every other OK response.
func (k *AsyncCall[R]) contSlow(r *rpc.Response, data []byte) {
	resp := k.newResp(k.a)
	ok, borrowed, derr := false, mem.Buf{}, error(nil)
	if k.own {
		ok, borrowed, derr = k.decodeOwn(resp, r, data)
	}
	if !ok {
		derr = resp.DecodeBytes(k.a.Copy(data[respFixed:]))
	}
	if derr != nil {
		var zero R
		k.end(zero, k.decodeErr(derr), borrowed)
		return
	}
	k.cl.c.loopPending-- // end's work, inline (cl.pre holds no entry: Start released them)
	k.busy.Store(false)
	k.deliver(resp, nil, borrowed)
}

// Start sends a request with req, as InvokeAsync does (the same
// ownership, deadline, metadata and error rules), and returns at once;
// the call's done function runs later. It returns ErrCallInFlight while
// the previous request is in flight; for a ResetAfterDone call, a Start
// from another goroutine may also get it while done runs (the call may be
// lent to its done function until done returns: a Start from done takes
// it; start such a call from elsewhere only once done has returned). From
// the goroutine that runs the Client's loop, with a
// bound method and context.Background(), the request goes out on the
// call's own state (nothing is taken from a pool); any other Start takes
// InvokeAsync's path. A non-nil error means done will not run. A warm
// Start allocates nothing.
func (k *AsyncCall[R]) Start(ctx context.Context, req wire.Object) error {
	cl := &k.cl
	c := cl.c
	if !k.busy.Load() {
		return k.startIdle(ctx, req)
	}
	// In flight, or lent to the done function contFn runs: k.lent is
	// written by contFn only, on the goroutine that runs the Client's loop
	// (the endpoint's callbacks), and read here only on that goroutine;
	// set, it means that done runs below on this goroutine's stack, and
	// done's Start takes the call as it is, busy set, with no atomic
	// update. k.loop holds the endpoint for contFn's callback (Loop's
	// contract): the send needs no goroutine check of its own.
	if !c.onLoop() || !k.lent {
		return ErrCallInFlight
	}
	k.lent = false
	if w := (*iface)(unsafe.Pointer(&ctx)); k.fast && w.tab == bgWords.tab && w.data == bgWords.data && c.last.Load() == k.hb && !c.closed.Load() { // isBackground(ctx), on ctx itself
		sess := k.nextSession(c)
		cl.wreq = req
		cl.sess = sess
		c.loopPending++ // (cont runs later, on this goroutine)
		sent, err := k.loop.EnqueueInline(sess, cl.reqType, cl, cl.contFn)
		if sent && err == nil { // the common outcome, without afterInline's frame
			return nil
		}
		return k.afterInline(req, sess, sent, err)
	}
	return k.startSlow(ctx, req)
}

// startIdle is Start for a call that is not in flight nor lent: it takes
// the call with busy's compare-and-swap (any goroutine may), then sends.
func (k *AsyncCall[R]) startIdle(ctx context.Context, req wire.Object) error {
	if !k.busy.CompareAndSwap(false, true) {
		return ErrCallInFlight
	}
	cl := &k.cl
	c := cl.c
	// The common Start, on the plan made for the binding the call was
	// prepared for (k.fast: a generated request type, no interceptor, no
	// Observer, requests that fit the send record): the request is
	// serialized in one walk straight into the endpoint's send record
	// (rpc.Endpoint.EnqueueInline, cl as the writer, cl.wenc the method's
	// EncodeRequest) after the request header cl.buf keeps, and enqueued
	// from there (no copy). The plan is for a Start from one of the
	// endpoint's callbacks (a done function, the common re-issue): one
	// goroutine check, rpc's (Endpoint.Loop), for both layers — the
	// goroutine that runs the endpoint's callbacks is the one that runs
	// the Client's loop (onLoop), as only the Client's callers run the
	// endpoint (Dial) and only the one holding the loop (tryLead) runs it.
	//
	// The goroutine check and the send are one call
	// (rpc.Endpoint.EnqueueInlineLoop): before it, only the call's own
	// state is touched (cl, and the call's session rotation, k.si: the
	// caller owns them from the compare-and-swap of busy on); the loop's
	// state (c.loopPending) after it, once the goroutine is known to run
	// the loop.
	if k.fast && isBackground(ctx) && c.last.Load() == k.hb && !c.closed.Load() {
		sess := k.nextSession(c)
		cl.wreq = req
		held, sent, err := c.ep.EnqueueInlineLoop(sess, cl.reqType, cl, cl.contFn)
		if held {
			cl.sess = sess
			c.loopPending++         // (cont runs later, on this goroutine: nothing read it meanwhile)
			if sent && err == nil { // the common outcome, without afterInline's frame
				return nil
			}
			return k.afterInline(req, sess, sent, err)
		}
	}
	return k.startSlow(ctx, req)
}

// nextSession returns the session of the call's next request on Start's
// common path: the Client's sessions in turn, from a first one spread
// over the Client's calls (NewAsyncCall), so that calls kept in flight by
// several AsyncCalls use every session evenly. k.si is the call's own
// (its Start owns it from busy's compare-and-swap): no loop state, so it
// is read before the goroutine check.
func (k *AsyncCall[R]) nextSession(c *Client) rpc.Session {
	n := uint32(len(c.sess))
	i := k.si + 1
	if i >= n {
		i = 0
	}
	k.si = i
	return c.sess[i]
}

// nextLoopSession returns the session of the next call sent from the loop
// (round robin without a division).
func (c *Client) nextLoopSession() rpc.Session {
	n := uint32(len(c.sess))
	if n == 1 {
		return c.sess[0]
	}
	i := c.loopRR + 1
	if i >= n {
		i = 0
	}
	c.loopRR = i
	return c.sess[i]
}

// startSlow is Start for every request the plan does not cover: off the
// loop, with a context that is not context.Background(), a method not
// bound yet or bound again, a Client with interceptors or an Observer, a
// closed Client, a request that did not fit before (these through
// InvokeAsync's path or the general send below). It prepares the call
// for its binding (k.fast) when the binding changed.
func (k *AsyncCall[R]) startSlow(ctx context.Context, req wire.Object) error {
	cl := &k.cl
	c := cl.c
	var b *binding
	if isBackground(ctx) && len(c.ics) == 0 && c.onLoop() {
		if hb := k.hb; hb != nil && c.last.Load() == hb {
			b = hb // lookup's first case, inline: still the binding used last
		} else {
			b = c.lookup(k.key)
		}
	}
	if b == nil || c.closed.Load() {
		k.pending = k.own // the response message below is made in k.a now (cleared by fallback)
		err := c.invokeAsync(ctx, k.d, k.i, k.a, req, k.newResp(k.a), k.fallback, typedDone[R]{})
		if err != nil {
			k.pending = false
			k.busy.Store(false)
		}
		return err
	}
	if b != k.hb { // cl prepared for a call under binding b, once per binding
		h := reqHeader{kind: kindCall, handle: b.handle, fp: b.fp}
		cl.buf = appendReqHeader(cl.buf[:0], &h, nil)
		cl.a, cl.b, cl.key, cl.reqType = k.a, b, k.key, b.reqType
		cl.wenc, cl.wflat = k.key.EncodeRequest, k.key.WriteRequest
		cl.w1tab = nil
		if k.reqFields != nil && cl.wflat != nil {
			k.prepareW1(req)
		}
		k.hb = b
		k.fast = cl.wenc != nil && !k.bigReq && len(c.ics) == 0 && c.obs == nil
	}
	if c.obs != nil {
		cl.t0 = time.Now()
	}
	sess := c.nextLoopSession()
	cl.sess = sess
	if cl.wenc != nil && !k.bigReq {
		cl.wreq = req
		c.loopPending++
		sent, err := c.ep.EnqueueInline(sess, cl.reqType, cl, cl.contFn)
		return k.afterInline(req, sess, sent, err)
	}
	return k.sendGeneral(req, sess, cl.wenc != nil)
}

// afterInline ends a Start that offered req to rpc's EnqueueInline (with
// c.loopPending counted for it): sent, or failed (the call ends with err,
// delivered to done), the call is under way; declined, it is sent the
// general way (sendDeclined). cl.wreq is left set: WriteInline reads it
// only during EnqueueInline.
func (k *AsyncCall[R]) afterInline(req wire.Object, sess rpc.Session, sent bool, err error) error {
	if sent || err != nil {
		if err != nil {
			k.finish(&k.cl, nil, err)
		}
		return nil
	}
	k.cl.c.loopPending--
	return k.sendDeclined(req, sess)
}

// finish completes a request of the fast path on the loop: data is the
// response (borrowed from the receive buffer for the duration).
func (k *AsyncCall[R]) finish(cl *clientCall, data []byte, err error) {
	c := cl.c
	var resp R
	if err == nil {
		var body []byte
		if body, err = c.responseBody(cl, data); err == nil {
			resp = k.newResp(k.a)
			if derr := resp.DecodeBytes(k.a.Copy(body)); derr != nil {
				err = k.decodeErr(derr)
			}
		}
	}
	if c.obs != nil {
		c.obs.ObserveCall(ClientSide, &cl.b.info, CodeOf(err), time.Since(cl.t0))
	}
	if err != nil {
		var zero R
		resp = zero
	}
	k.end(resp, err, mem.Buf{})
}

func (k *AsyncCall[R]) decodeErr(derr error) error {
	return fmt.Errorf("service: %s: decoding the response: %w", k.cl.b.info.FullMethod, derr)
}

// end delivers a request's outcome (on the loop): the call is idle again
// when done runs.
func (k *AsyncCall[R]) end(resp R, err error, borrowed mem.Buf) {
	cl := &k.cl
	cl.pre.release()
	cl.c.loopPending-- // on the loop
	k.busy.Store(false)
	k.deliver(resp, err, borrowed)
}
