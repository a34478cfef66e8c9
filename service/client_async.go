package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// ErrAsyncInterceptors: InvokeAsync on a Client with client interceptors
// (an interceptor wraps a call that it waits for; asynchronous calls are
// refused rather than sent around the interceptors).
var ErrAsyncInterceptors = errors.New("service: InvokeAsync on a client with interceptors")

// InvokeAsync sends a call of method i of service d over c and returns at
// once; done runs later with resp and nil, or the zero R and the call's
// error, on the goroutine that runs the endpoint's loop (Run, or a synchronous
// caller of the same Client). Generated <Method>Async stubs call it.
//
// Ownership: req is serialized before InvokeAsync returns (its zero-copy
// fields must live in a Concurrent pool, as with Invoke). From then until
// done runs, arena a belongs to the call: the response is copied into it
// on the loop and decoded there, so resp's decoded fields alias a's memory
// and live until a.Reset. done must not block; it may call InvokeAsync
// again (that is how a closed loop keeps calls in flight) but not the
// synchronous Invoke, which fails with ErrCallFromLoop there. done may
// run before InvokeAsync returns (a request the endpoint refused at once).
//
// The first call of a method binds it (from the loop, asynchronously).
// ctx's deadline travels with the request as with Invoke; cancelling ctx
// after the call was sent does not end it early. A call the server asks to
// rebind (it restarted) fails with that FailedPrecondition status and the
// next call binds again. Client interceptors are not run: InvokeAsync on a
// Client with interceptors returns ErrAsyncInterceptors. A non-nil error
// means done will not run. A warm call allocates nothing.
//
// Calls complete only while some goroutine runs the loop: call Run on one
// goroutine (the usual way), or make synchronous calls meanwhile.
func InvokeAsync[R Decoder](ctx context.Context, c *Client, d *ServiceDesc, i int, a *wire.Arena, req wire.Object, resp R, done func(R, error)) error {
	return c.invokeAsync(ctx, d, i, a, req, resp, done, typedDone[R]{})
}

// doneCaller calls an asynchronous call's done function, stored without
// its type (fn, a func(R, error)) so that a call needs no closure: a
// typedDone is zero-sized, and turning it into a doneCaller allocates
// nothing.
type doneCaller interface {
	callDone(fn any, resp Decoder, err error)
}

type typedDone[R Decoder] struct{}

func (typedDone[R]) callDone(fn any, resp Decoder, err error) {
	var r R
	if err == nil {
		r = resp.(R)
	}
	fn.(func(R, error))(r, err)
}

func (c *Client) invokeAsync(ctx context.Context, d *ServiceDesc, i int, a *wire.Arena, req wire.Object, resp Decoder, done any, call doneCaller) error {
	if len(c.ics) > 0 {
		return ErrAsyncInterceptors
	}
	if c.closed.Load() {
		return ErrClientClosed
	}
	key := &d.Methods[i]
	b := c.lookup(key)
	onLoop := c.onLoop()
	if b == nil && !onLoop {
		var err error
		if b, err = c.bind(ctx, d, i); err != nil {
			return err
		}
	}
	h := reqHeader{kind: kindCall}
	if b != nil {
		h.handle, h.fp = b.handle, b.fp
	} else {
		h.fp = key.Fingerprint
	}
	var md Metadata
	if !isBackground(ctx) {
		if dl, ok := ctx.Deadline(); ok {
			t := time.Until(dl)
			if t <= 0 {
				return context.DeadlineExceeded
			}
			h.flags |= flagDeadline
			h.timeout = t
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if v, ok := ctx.Value(outMDKey{}).(Metadata); ok {
			if err := v.check(); err != nil {
				return err
			}
			md = v
		}
	}
	cl := c.getCall(onLoop)
	cl.state.Store(stPending)
	cl.buf = appendReqHeader(cl.buf[:0], &h, md)
	cl.a, cl.body, cl.err = a, nil, nil
	cl.fin, cl.resp, cl.done, cl.call, cl.b, cl.key = finishAsync, resp, done, call, b, key
	if c.obs != nil {
		cl.t0 = time.Now()
	}
	cl.sess = c.sess[0]
	if n := uint32(len(c.sess)); n > 1 {
		if onLoop {
			c.loopRR++
			cl.sess = c.sess[c.loopRR%n]
		} else {
			cl.sess = c.sess[c.rr.Add(1)%n]
		}
	}
	if err := cl.setBody(req, nil); err != nil {
		cl.pre.release()
		cl.recycle()
		return err
	}
	if onLoop {
		c.loopPending++
	} else {
		c.pending.Add(1)
	}
	if b == nil {
		// On the loop, not bound yet: bind first, then send (the handle
		// and request type are patched in when the bind is answered).
		c.bindAsync(d, i, cl)
		return nil
	}
	cl.reqType = b.reqType
	switch {
	case onLoop:
		cl.send()
	case c.tryLead():
		cl.send()
		c.release(false)
	default:
		if !c.trackPost(cl) {
			c.pending.Add(-1)
			cl.pre.release()
			cl.recycle()
			return ErrClientClosed
		}
		if err := c.ep.Post(cl.sendFn); err != nil {
			if !c.untrackPost(cl) {
				return nil // Close failed it already: done ran
			}
			c.pending.Add(-1)
			cl.pre.release()
			cl.recycle()
			return err
		}
		select { // an idle Run takes the loop again
		case c.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// bgCtx is context.Background(): a call with it has no deadline, no
// cancellation and no metadata, so its header needs none of ctx's three
// method calls.
var bgCtx = context.Background()

// bgWords is bgCtx's two interface words (type and data).
var bgWords = *(*iface)(unsafe.Pointer(&bgCtx))

// isBackground reports whether ctx is context.Background() itself. It
// compares the interface words instead of the values (ctx == bgCtx calls
// the runtime's ifaceeq): the same dynamic type and the same data word is
// the same context (Background's type has no size, or is a pointer); a
// false answer only sends a call down the general path. (Word by word:
// comparing them as one array copies ctx through the stack first.)
func isBackground(ctx context.Context) bool {
	w := (*iface)(unsafe.Pointer(&ctx))
	return w.tab == bgWords.tab && w.data == bgWords.data
}

// maxLoopFree bounds Client.loopFree.
const maxLoopFree = 256

// getCall takes a call from the loop's free list (onLoop: the caller runs
// the loop) or the pool.
func (c *Client) getCall(onLoop bool) *clientCall {
	if onLoop {
		if n := len(c.loopFree); n > 0 {
			cl := c.loopFree[n-1]
			c.loopFree[n-1] = nil
			c.loopFree = c.loopFree[:n-1]
			return cl
		}
	}
	return c.calls.Get().(*clientCall)
}

// recycle clears an asynchronous call and puts it back: on the loop's
// free list from the goroutine that runs the loop (an asynchronous call
// completes there and its done function usually sends the next one from
// there: no sync.Pool round trip per call), in the pool otherwise.
func (cl *clientCall) recycle() { cl.recycleOn(cl.c.onLoop()) }

// recycleOn is recycle for a caller that knows whether it runs the loop.
func (cl *clientCall) recycleOn(onLoop bool) {
	cl.a, cl.body, cl.err = nil, nil, nil
	cl.fin, cl.resp, cl.done, cl.call, cl.b, cl.key = nil, nil, nil, nil, nil, nil
	c := cl.c
	if onLoop && len(c.loopFree) < maxLoopFree {
		c.loopFree = append(c.loopFree, cl)
		return
	}
	c.calls.Put(cl)
}

// finishAsync completes an asynchronous call on the loop: data is the
// response (borrowed from the receive buffer for the duration).
func finishAsync(cl *clientCall, data []byte, err error) {
	c := cl.c
	if err == nil {
		var body []byte
		if body, err = c.responseBody(cl, data); err == nil {
			if cl.a != nil {
				body = cl.a.Copy(body)
			} else {
				body = append([]byte(nil), body...)
			}
			if derr := cl.resp.DecodeBytes(body); derr != nil {
				err = fmt.Errorf("service: %s: decoding the response: %w", cl.b.info.FullMethod, derr)
			}
		}
	}
	if c.obs != nil && cl.b != nil {
		c.obs.ObserveCall(ClientSide, &cl.b.info, CodeOf(err), time.Since(cl.t0))
	}
	done, call, resp := cl.done, cl.call, cl.resp
	cl.pre.release()
	cl.recycleOn(true) // finishAsync runs on the loop
	c.loopPending--    // on the loop, whoever counted the call
	call.callDone(done, resp, err)
}

// responseBody parses the response data of cl's call and returns its body
// (aliasing data) or the call's error: a malformed header, or the server's
// status, where a rebind status also drops the method's binding so that
// the next call binds again.
func (c *Client) responseBody(cl *clientCall, data []byte) ([]byte, error) {
	off, se, err := parseResp(data)
	if err != nil {
		return nil, err
	}
	if se != nil {
		if se.Code == FailedPrecondition && string(se.Details) == rebindDetail {
			c.unbind(cl.key)
		}
		return nil, se
	}
	return data[off:], nil
}

// bindAsync binds method i from the loop, then sends cl (or fails it).
func (c *Client) bindAsync(d *ServiceDesc, i int, cl *clientCall) {
	bc := c.calls.Get().(*clientCall)
	bc.state.Store(stPending)
	h := reqHeader{kind: kindBind, fp: d.Methods[i].Fingerprint}
	bc.buf = appendReqHeader(bc.buf[:0], &h, nil)
	bc.buf = schemaOf(d, i).encode(bc.buf)
	bc.msg = rpc.BytesMsg(bc.buf)
	bc.reqType, bc.sess = ReqTypeDispatch, cl.sess
	bc.fin = func(bc *clientCall, data []byte, err error) {
		bc.recycle()
		var b *binding
		if err == nil {
			b, err = c.bound(d, i, data)
		}
		if err != nil {
			cl.fin(cl, nil, err)
			return
		}
		cl.b, cl.reqType = b, b.reqType
		binary.LittleEndian.PutUint32(cl.buf[4:], b.handle)
		cl.send()
	}
	bc.send()
}

// bound turns a bind's raw response into the method's binding and
// stores it (the binding already stored wins).
func (c *Client) bound(d *ServiceDesc, i int, data []byte) (*binding, error) {
	off, se, err := parseResp(data)
	switch {
	case err != nil:
		return nil, err
	case se != nil:
		if se.Code == FailedPrecondition && string(se.Details) == incompatibleDetail {
			return nil, fmt.Errorf("%w: %w", ErrIncompatible, se)
		}
		return nil, se
	}
	return c.storeBinding(d, i, data[off:])
}

// Run runs the endpoint's loop on the calling goroutine until ctx is done
// or the Client is closed, and returns ctx.Err() or ErrClientClosed (or
// the endpoint's error; if it is closed, asynchronous calls then waiting
// to be sent fail with it). While asynchronous calls are in flight it runs the endpoint's
// loop (rpc.Endpoint.Run: polling, and sleeping on the datapath's wake-up
// when idle); when none are and no synchronous caller waits, it lets the
// loop go and sleeps until the next asynchronous call (synchronous callers
// then run the loop themselves). At most one goroutine should run Run. It
// yields the processor every 64 iterations while synchronous callers wait,
// so that they run, and every 4096 otherwise (a server in the same process
// with GOMAXPROCS=1 runs then).
func (c *Client) Run(ctx context.Context) error {
	for {
		if err := c.runErr(ctx); err != nil {
			return err
		}
		if !c.tryLead() {
			// A synchronous caller runs the loop: wait for it to let go.
			select {
			case <-ctx.Done():
			case <-c.closeCh:
			case <-c.kick:
			case <-time.After(50 * time.Microsecond):
			}
			continue
		}
		err := c.runLed(ctx)
		c.release(false)
		if err != nil {
			return err
		}
		// Idle: sleep until an asynchronous call comes.
		select {
		case <-ctx.Done():
		case <-c.closeCh:
		case <-c.kick:
		}
	}
}

func (c *Client) runErr(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClientClosed
	}
	return ctx.Err()
}

// errRunIdle ends runLed's rpc.Endpoint.Run: nothing is in flight.
var errRunIdle = errors.New("service: idle")

// runCtx is the context runLed runs the endpoint under: rpc.Endpoint.Run
// checks Err every 64 iterations of its loop (and before it sleeps), and
// Err reports the Client's reasons to stop as well as the parent's. It is
// used by the goroutine that runs the loop only (Done and Value are the
// parent's, so rpc's cancellation hook needs no goroutine).
type runCtx struct {
	context.Context
	c    *Client
	n    int
	idle int
}

func (r *runCtx) Err() error {
	if err := r.Context.Err(); err != nil {
		return err
	}
	c := r.c
	if c.closed.Load() {
		return ErrClientClosed
	}
	r.n++
	// Yield at every check while synchronous callers wait (they need the
	// processor to take their results), rarely otherwise: on a goroutine
	// locked to its thread a yield hands the processor to another thread
	// and back (two futex calls).
	callers := c.callers.Load()
	if callers > 0 || r.n&63 == 0 {
		runtime.Gosched()
	}
	if c.inFlight() == 0 && callers == 0 {
		if r.idle++; r.idle > 1 {
			return errRunIdle
		}
	} else {
		r.idle = 0
	}
	return nil
}

// runLed runs the loop, which the caller holds, until ctx is done, the
// Client closes (an error) or nothing is in flight for a while (nil).
// The loop is rpc.Endpoint.Run's: it enters the endpoint once, reads the
// clock once per iteration and sleeps when nothing happens.
func (c *Client) runLed(ctx context.Context) error {
	rc := &runCtx{Context: ctx, c: c}
	err := c.ep.Run(rc)
	switch {
	case errors.Is(err, errRunIdle):
		return nil
	case err == nil || errors.Is(err, ErrClientClosed) || errors.Is(err, ctx.Err()) && ctx.Err() != nil:
		return err
	}
	if errors.Is(err, rpc.ErrClosed) {
		// The endpoint ended: what was posted to it will never be sent.
		c.failPosted(err)
	}
	return fmt.Errorf("service: running the endpoint: %w", err)
}

// trackPost records an asynchronous call about to be handed to the loop
// with Post, so that Close (or the endpoint's end) can fail it if the loop
// never sends it. It returns false, recording nothing, once the Client is
// closed.
func (c *Client) trackPost(cl *clientCall) bool {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	if c.closed.Load() {
		return false
	}
	if c.posted == nil {
		c.posted = map[*clientCall]struct{}{}
	}
	c.posted[cl] = struct{}{}
	cl.isPosted = true
	return true
}

// untrackPost removes a posted call when the loop sends it; false: Close
// failed it meanwhile (it is abandoned and recycled by the caller).
func (c *Client) untrackPost(cl *clientCall) bool {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	cl.isPosted = false
	if cl.state.Load() == stAbandoned {
		return false
	}
	delete(c.posted, cl)
	return true
}

// failPosted completes every asynchronous call handed to the loop and not
// sent yet with err (their done functions run on the calling goroutine).
// A posted function that runs later finds its call abandoned and only
// recycles it.
func (c *Client) failPosted(err error) {
	c.postMu.Lock()
	var fail []*clientCall
	for cl := range c.posted {
		if cl.state.CompareAndSwap(stPending, stAbandoned) {
			fail = append(fail, cl)
		}
	}
	clear(c.posted)
	c.postMu.Unlock()
	for _, cl := range fail {
		done, call, resp := cl.done, cl.call, cl.resp
		cl.pre.release()
		c.pending.Add(-1)
		call.callDone(done, resp, err)
	}
}
