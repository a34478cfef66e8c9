package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/petermattis/goid"
)

// UnaryInvoker sends a call (the next client interceptor, or the call itself).
type UnaryInvoker func(ctx context.Context, req, resp any) error

// UnaryClientInterceptor wraps every call of a Client: it may add metadata
// to ctx (WithMetadata), inspect req and resp (the generated message
// pointers), call invoker or fail the call.
type UnaryClientInterceptor func(ctx context.Context, info *MethodInfo, req, resp any, invoker UnaryInvoker) error

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithClientInterceptor installs interceptors, run in the order given
// (the first one outermost).
func WithClientInterceptor(ics ...UnaryClientInterceptor) ClientOption {
	return func(c *Client) { c.ics = append(c.ics, ics...) }
}

// WithSpin sets how long a waiting caller busy-polls for its response
// before it sleeps until the endpoint's loop wakes it (default
// DefaultSpin; 0 or negative: sleep at once).
func WithSpin(d time.Duration) ClientOption { return func(c *Client) { c.spin = d } }

// WithSessions makes the Client open n sessions to the server (default 1)
// and spread its calls over them round robin: a session has
// rpc's window of requests in flight (8), the rest wait in its backlog.
func WithSessions(n int) ClientOption {
	return func(c *Client) {
		if n > 0 {
			c.nSess = n
		}
	}
}

// DefaultSpin is how long a waiting caller spins before it sleeps.
const DefaultSpin = 10 * time.Microsecond

// ErrClientClosed: a call on a closed Client, or one that was waiting
// when the Client closed.
var ErrClientClosed = errors.New("service: client closed")

// ErrCallFromLoop: a synchronous call from the goroutine that runs the
// Client's endpoint loop (an asynchronous call's done function, or a
// continuation), which would wait for itself. Use InvokeAsync there.
var ErrCallFromLoop = errors.New("service: synchronous call from the endpoint's loop")

// Client calls the methods of a server's services over sessions of one
// rpc.Endpoint: it is the goroutine-safe face of the single-goroutine
// endpoint (as etcd raft's Node is of a RawNode), for any number of
// goroutines at once. Generated <Service>Client types wrap it.
//
// It runs no goroutine of its own. The endpoint's event loop is run by its
// callers, one at a time (leader and followers): a caller that finds the
// loop free sends its request and runs the loop (rpc.Endpoint.RunOnce)
// until its response is in, serving everybody's requests meanwhile; the
// others hand their requests to the loop (rpc.Endpoint.Post), spin for
// the spin time (WithSpin), then sleep until their response or the loop
// is handed to them. So one caller costs what rpc.Endpoint.Call costs, and
// a waiting caller burns no core.
//
// Memory: the caller's request is serialized on the caller's goroutine;
// its zero-copy fields (values of at least the arena's threshold in
// registered memory) are sent from the caller's buffers, and the loop
// takes and drops references on them, so they must live in a Concurrent
// mem.Pool. The response is copied once, on the loop, into the caller's
// arena (the receive buffer belongs to whichever caller runs the loop),
// and decoded there zero-copy; it lives until the caller resets the arena.
type Client struct {
	ep    *rpc.Endpoint
	sess  []rpc.Session
	nSess int
	rr    atomic.Uint32
	ics   []UnaryClientInterceptor
	spin  time.Duration
	obs   Observer

	lead    atomic.Bool   // somebody runs the endpoint's loop
	leadG   atomic.Int64  // the goroutine that runs it (0: none)
	pending atomic.Int64  // asynchronous calls in flight, counted off the loop (see inFlight)
	kick    chan struct{} // wakes an idle Run: asynchronous calls wait for the loop
	callers atomic.Int64  // callers between the start and the end of a round trip
	handoff chan struct{} // the loop is free and callers wait: one of them takes it
	closed  atomic.Bool
	closeCh chan struct{}
	closing sync.Once

	binds sync.Map                // *MethodDesc -> *binding
	last  atomic.Pointer[binding] // the binding used last (saves the map lookup)

	postMu sync.Mutex
	posted map[*clientCall]struct{} // asynchronous calls posted to the loop and not sent yet
	calls  sync.Pool
	// loopFree holds asynchronous calls for reuse; only the goroutine
	// that runs the loop (onLoop) touches it.
	loopFree []*clientCall
	// loopPending counts asynchronous calls made and completed by the
	// goroutine that runs the loop (completions of calls counted in
	// pending too: it may go negative); loopRR is its session round
	// robin. Only that goroutine touches them: no atomic operation per
	// call on the loop.
	loopPending int64
	loopRR      uint32
	idBase      uint64
	ids         atomic.Uint64
}

// Dial connects ep to endpoint remoteEp of the Nexus at nexus and waits
// until the session is connected (or ctx is done). From then on the
// Client's callers run ep; nobody else may use it until Close, and
// closing it remains its owner's job (after Close).
func Dial(ctx context.Context, ep *rpc.Endpoint, nexus netip.AddrPort, remoteEp uint8, opts ...ClientOption) (*Client, error) {
	c := &Client{ep: ep, nSess: 1, spin: DefaultSpin, handoff: make(chan struct{}, 1), kick: make(chan struct{}, 1), closeCh: make(chan struct{}), idBase: rand.Uint64()}
	for _, o := range opts {
		o(c)
	}
	for i := 0; i < c.nSess; i++ {
		s, err := ep.Connect(nexus, remoteEp)
		if err != nil {
			return nil, err
		}
		if err := ep.WaitConnected(ctx, s); err != nil {
			return nil, err
		}
		c.sess = append(c.sess, s)
	}
	c.calls.New = func() any {
		cl := &clientCall{c: c, ch: make(chan struct{}, 1)}
		cl.sendFn, cl.contFn = cl.send, cl.cont
		return cl
	}
	return c, nil
}

// Close makes calls still waiting fail with ErrClientClosed, waits until
// no caller runs the endpoint's loop, and keeps it from running it again.
// The endpoint is left open for its owner.
func (c *Client) Close() error {
	c.closing.Do(func() {
		c.postMu.Lock()
		c.closed.Store(true)
		c.postMu.Unlock()
		close(c.closeCh)
		_ = c.ep.Post(func() {})                  // wake a loop asleep in the datapath's Wait
		for !c.lead.CompareAndSwap(false, true) { // the leader sees closed and returns
			time.Sleep(10 * time.Microsecond)
		}
		// Nobody runs the loop now: fail the asynchronous calls it
		// never sent.
		c.failPosted(ErrClientClosed)
	})
	return nil
}

// Endpoint is the endpoint the client runs.
func (c *Client) Endpoint() *rpc.Endpoint { return c.ep }

// Decoder is what Invoke decodes a response into: a generated message.
type Decoder interface {
	DecodeBytes(p []byte) error
}

// Invoke calls method i of service d with req and decodes the response
// into resp, both messages of arena a (resp's decoded fields alias a's
// memory: they live until a.Reset). Generated clients call it. The first
// call of a method binds it (see docs/SERVICES.md): a method the server
// lacks fails with Unimplemented, an incompatible schema with an *Error
// of code FailedPrecondition that also matches ErrIncompatible.
// Application errors are *Error; transport errors (rpc.ErrPeerFailed,
// ...) and the context's errors are returned as they are.
func (c *Client) Invoke(ctx context.Context, d *ServiceDesc, i int, a *wire.Arena, req wire.Object, resp Decoder) error {
	b, err := c.bind(ctx, d, i)
	if err != nil {
		return err
	}
	var t0 time.Time
	if c.obs != nil {
		t0 = time.Now()
	}
	if b.ic == nil {
		err = c.invoke(ctx, d, i, b, a, req, resp)
	} else {
		err = b.ic(ctx, &b.info, req, resp, func(ctx context.Context, _, _ any) error {
			return c.invoke(ctx, d, i, b, a, req, resp)
		})
	}
	if c.obs != nil {
		c.obs.ObserveCall(ClientSide, &b.info, CodeOf(err), time.Since(t0))
	}
	return err
}

func (c *Client) invoke(ctx context.Context, d *ServiceDesc, i int, b *binding, a *wire.Arena, req wire.Object, resp Decoder) error {
	for attempt := 0; ; attempt++ {
		body, err := c.roundTrip(ctx, b, kindCall, a, req, nil)
		if err != nil && attempt == 0 && isRebind(err) {
			// The server forgot the binding (it restarted): bind again, once.
			c.unbind(&d.Methods[i])
			if b, err = c.bind(ctx, d, i); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := resp.DecodeBytes(body); err != nil {
			return fmt.Errorf("service: %s: decoding the response: %w", b.info.FullMethod, err)
		}
		return nil
	}
}

func chainClient(ics []UnaryClientInterceptor) UnaryClientInterceptor {
	if len(ics) == 1 {
		return ics[0]
	}
	return func(ctx context.Context, info *MethodInfo, req, resp any, inv UnaryInvoker) error {
		var next func(i int) UnaryInvoker
		next = func(i int) UnaryInvoker {
			if i == len(ics) {
				return inv
			}
			return func(ctx context.Context, req, resp any) error { return ics[i](ctx, info, req, resp, next(i+1)) }
		}
		return next(0)(ctx, req, resp)
	}
}

// Call states. A call is pending until the loop completes it; the caller
// may go to sleep (sleeping) or give up (abandoned); the loop claims a
// pending or sleeping call (completing) before it writes the result, and
// publishes it (done).
const (
	stPending int32 = iota
	stSleeping
	stCompleting
	stDone
	stAbandoned
)

// clientCall is one call in flight, pooled. It belongs to the caller
// until Post, then to the loop until the state says done (or, abandoned,
// it stays the loop's and goes back to the pool from there).
type clientCall struct {
	c      *Client
	sess   rpc.Session
	state  atomic.Int32
	ch     chan struct{}
	sendFn func()
	// Asynchronous calls (InvokeAsync): fin runs on the loop with the
	// response instead of the state machine; resp and done are the call's.
	fin      func(cl *clientCall, data []byte, err error)
	isPosted bool // handed to the loop with Post and tracked in Client.posted
	resp     Decoder
	done     any // the caller's func(R, error), called by call
	call     doneCaller
	b        *binding
	key      *MethodDesc
	t0       time.Time // when the call started (with an Observer)
	contFn   func(*rpc.Response)
	reqType  uint8
	msg      rpc.Msg
	buf      []byte       // the request: service header and head of the message
	pre      preObj       // the request with zero-copy entries
	sga      wireimpl.SGA // setBody's sink (empty between calls)
	a        *wire.Arena  // where the response body is copied (nil: the Go heap)
	body     []byte
	err      error
	// AsyncCall.Start's request for WriteInline (client_call.go), and what
	// the writer found when it declined: wok, the method's request type
	// (its serialization's error in weerr).
	wreq  wire.Object
	wenc  func(wire.Object, *wireimpl.SGA) (bool, error)
	wflat func(wire.Object, []byte) int // the method's WriteRequest, tried first (nil: none)
	// w1tab, w1c, w1f, w1bit, when w1tab is set (RequestBytes1): the itab
	// of (wire.Object, the method's request type), a message whose only
	// field is bytes, the offsets of its Core and of that field in it, and
	// the field's bit: WriteInline writes such a request itself
	// (wireimpl.WriteFlatBytes1; wflat without its call).
	w1tab    unsafe.Pointer
	w1c, w1f uintptr
	w1bit    uint32
	wok      bool
	weerr    error
}

// preObj is a request serialized on the caller's goroutine whose
// zero-copy entries the call holds references on.
type preObj struct {
	head    []byte
	entries []mem.Buf
	zc      int
}

func (o *preObj) Sizes() wire.Sizes {
	return wire.Sizes{Header: len(o.head), ZeroCopy: o.zc, Entries: len(o.entries)}
}

func (o *preObj) Serialize(dst []byte, sink wire.EntrySink) error {
	copy(dst, o.head)
	for _, e := range o.entries {
		if err := sink.ZeroCopyEntry(e); err != nil {
			return err
		}
	}
	return nil
}

func (o *preObj) release() {
	if len(o.entries) != 0 { // inlined: most requests hold no entry
		o.releaseEntries()
	}
}

func (o *preObj) releaseEntries() {
	for i := range o.entries {
		_ = o.entries[i].Release()
		o.entries[i] = mem.Buf{}
	}
	o.entries = o.entries[:0]
}

// roundTrip sends one request (a message req, or raw bytes) and waits for
// its response, whose body it returns (in a, or on the heap).
func (c *Client) roundTrip(ctx context.Context, b *binding, kind uint8, a *wire.Arena, req wire.Object, raw []byte) ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClientClosed
	}
	h := reqHeader{kind: kind, handle: b.handle, fp: b.fp}
	if dl, ok := ctx.Deadline(); ok {
		t := time.Until(dl)
		if t <= 0 {
			return nil, context.DeadlineExceeded
		}
		h.flags |= flagDeadline
		h.timeout = t
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if kind == kindCall && ctx.Done() != nil {
		h.flags |= flagCallID
		h.callID = c.idBase + c.ids.Add(1)
	}
	var md Metadata
	if v, ok := ctx.Value(outMDKey{}).(Metadata); ok {
		if err := v.check(); err != nil {
			return nil, err
		}
		md = v
	}
	cl := c.calls.Get().(*clientCall)
	cl.state.Store(stPending)
	cl.buf = appendReqHeader(cl.buf[:0], &h, md)
	cl.reqType, cl.a, cl.body, cl.err = b.reqType, a, nil, nil
	cl.sess = c.sess[0]
	if len(c.sess) > 1 {
		cl.sess = c.sess[c.rr.Add(1)%uint32(len(c.sess))]
	}
	sess := cl.sess
	if err := cl.setBody(req, raw); err != nil {
		cl.pre.release()
		c.calls.Put(cl)
		return nil, err
	}
	c.callers.Add(1)
	var err error
	handed := false // cl belongs to the loop until it is done
	switch {
	case c.tryLead():
		cl.send()
		handed = true
		err = c.drive(ctx, cl)
	case c.onLoop():
		// A synchronous call from a continuation or an asynchronous
		// call's done function would wait for the loop its caller runs.
		err = ErrCallFromLoop
	default:
		if err = c.ep.Post(cl.sendFn); err == nil {
			handed = true
			err = c.wait(ctx, cl)
		}
	}
	if !handed {
		// Never handed to the loop (refused before Post or by it).
		c.callers.Add(-1)
		cl.pre.release()
		c.calls.Put(cl)
		return nil, err
	}
	c.callers.Add(-1)
	if err != nil {
		if h.flags&flagCallID != 0 && errors.Is(err, context.Canceled) {
			// A deadline needs no message: the server's context has its own.
			c.sendCancel(sess, h.callID)
		}
		return nil, err // cl is the loop's now
	}
	body, err := cl.body, cl.err
	cl.a, cl.body, cl.err = nil, nil, nil
	c.calls.Put(cl)
	return body, err
}

// setBody appends the request after the header: raw bytes, or req
// serialized (its zero-copy entries referenced by cl.pre).
func (cl *clientCall) setBody(req wire.Object, raw []byte) error {
	if req == nil {
		cl.buf = append(cl.buf, raw...)
		cl.msg = rpc.BytesMsg(cl.buf)
		return nil
	}
	if f, ok := req.(wireimpl.SGAWriter); ok {
		return cl.setBodySGA(f)
	}
	sz := req.Sizes()
	hl := len(cl.buf)
	n := hl + sz.Head()
	if cap(cl.buf) < n {
		nb := make([]byte, n, n+n/4)
		copy(nb, cl.buf)
		cl.buf = nb
	}
	cl.buf = cl.buf[:n]
	// The sink is the runtime's SGA, the one sink the generated Serialize
	// takes its direct path for (its cached sizes, no Encoder); the
	// entries it collects are borrowed from req until the call takes its
	// own references below.
	sga := &cl.sga
	err := req.Serialize(cl.buf[hl:], sga)
	if err == nil && len(sga.Entries) == 0 {
		cl.msg = rpc.BytesMsg(cl.buf)
		return nil
	}
	if err == nil {
		cl.holdEntries(sz.ZeroCopy)
	}
	clear(sga.Entries)
	sga.Entries = sga.Entries[:0]
	return err
}

// setBodySGA is setBody for a generated message: sizes and encode in one
// walk (wireimpl.SGAWriter), the head written after the service header in
// cl.buf when it has room (otherwise the runtime grows the SGA's head and
// it is copied into a larger cl.buf, kept for the next requests).
func (cl *clientCall) setBodySGA(f wireimpl.SGAWriter) error {
	hl := len(cl.buf)
	return cl.endSGA(hl, f.WireSerializeSGA(cl.startSGA()))
}

// startSGA points cl.sga's head at cl.buf's room after the header, for a
// one-walk serialization (wireimpl.SGAWriter) that endSGA then finishes.
func (cl *clientCall) startSGA() *wireimpl.SGA {
	hl := len(cl.buf)
	sga := &cl.sga
	sga.Head = cl.buf[hl:hl]
	return sga
}

// endSGA finishes setBodySGA after the serialization (err its error) into
// cl.sga, which startSGA prepared when cl.buf held hl bytes of header.
func (cl *clientCall) endSGA(hl int, err error) error {
	sga := &cl.sga
	head := sga.Head // (left in sga: cl.buf's array, or the runtime's larger one until the next request)
	if err != nil {
		clear(sga.Entries)
		sga.Entries = sga.Entries[:0]
		return err
	}
	n := hl + len(head)
	if len(head) != 0 && (cap(cl.buf)-hl < len(head) || &cl.buf[hl:n][0] != &head[0]) {
		nb := make([]byte, n, n+n/4)
		copy(nb, cl.buf[:hl])
		copy(nb[hl:], head)
		cl.buf = nb
	}
	cl.buf = cl.buf[:n]
	if len(sga.Entries) == 0 {
		cl.msg = rpc.BytesMsg(cl.buf)
		return nil
	}
	zc := 0
	for i := range sga.Entries {
		zc += sga.Entries[i].Len()
	}
	cl.holdEntries(zc)
	clear(sga.Entries)
	sga.Entries = sga.Entries[:0]
	return nil
}

// holdEntries makes the request cl.buf plus the zero-copy entries in
// cl.sga (zc bytes), on references of the call's own.
func (cl *clientCall) holdEntries(zc int) {
	for _, e := range cl.sga.Entries {
		cl.pre.entries = append(cl.pre.entries, e.Clone())
	}
	cl.pre.head, cl.pre.zc = cl.buf, zc
	cl.msg = rpc.ObjectMsg(&cl.pre)
}

// send runs on the loop: it enqueues the request.
func (cl *clientCall) send() {
	c := cl.c
	if cl.isPosted && !c.untrackPost(cl) {
		cl.recycle() // failed by Close or the endpoint's end
		return
	}
	if cl.state.Load() == stAbandoned {
		cl.pre.release()
		c.calls.Put(cl)
		return
	}
	err := c.ep.Enqueue(cl.sess, cl.reqType, cl.msg, cl.contFn)
	cl.msg = rpc.Msg{}
	cl.pre.release() // serialized by Enqueue, which took its own references
	if err != nil {
		cl.complete(nil, err)
	}
}

// cont runs on the loop with the response.
func (cl *clientCall) cont(r *rpc.Response) {
	var data []byte
	err := r.Err
	if err == nil {
		data = r.Data()
	}
	if cl.fin != nil { // an asynchronous call: straight to its finish
		cl.fin(cl, data, err)
		return
	}
	cl.complete(data, err)
}

// complete publishes the result to the caller (or recycles an abandoned
// call); an asynchronous call finishes on the loop.
func (cl *clientCall) complete(data []byte, err error) {
	if cl.fin != nil {
		cl.fin(cl, data, err)
		return
	}
	for {
		s := cl.state.Load()
		switch s {
		case stAbandoned:
			cl.a, cl.body, cl.err = nil, nil, nil
			cl.c.calls.Put(cl)
			return
		case stPending, stSleeping:
			if !cl.state.CompareAndSwap(s, stCompleting) {
				continue
			}
			if err == nil {
				off, se, perr := parseResp(data)
				switch {
				case perr != nil:
					err = perr
				case se != nil:
					err = se
				case cl.a != nil:
					cl.body = cl.a.Copy(data[off:])
				default:
					cl.body = append([]byte(nil), data[off:]...)
				}
			}
			cl.err = err
			cl.state.Store(stDone)
			if s == stSleeping {
				cl.ch <- struct{}{}
			}
			return
		default:
			return // completed already (cannot happen: one continuation per request)
		}
	}
}

// drive runs the endpoint's loop, which the caller holds, until cl is
// done (nil), or ctx is done or the client closes (cl is abandoned to the
// loop), then lets it go.
func (c *Client) drive(ctx context.Context, cl *clientCall) error {
	defer c.release(true)
	for i := 0; ; i++ {
		if cl.state.Load() == stDone {
			return nil
		}
		if i&15 == 15 {
			var err error
			switch {
			case c.closed.Load():
				err = ErrClientClosed
			case ctx.Err() != nil:
				err = ctx.Err()
			}
			if err != nil && cl.state.CompareAndSwap(stPending, stAbandoned) {
				return err
			}
			// Let the other goroutines of this process run now and then
			// (the server of a test, with GOMAXPROCS=1): the loop polls.
			runtime.Gosched()
		}
		if err := c.ep.RunOnce(); err != nil && cl.state.CompareAndSwap(stPending, stAbandoned) {
			return fmt.Errorf("service: running the endpoint: %w", err)
		}
	}
}

// tryLead takes the endpoint's loop if it is free.
func (c *Client) tryLead() bool {
	if !c.lead.Load() && c.lead.CompareAndSwap(false, true) {
		c.leadG.Store(goid.Get())
		return true
	}
	return false
}

// onLoop reports whether the calling goroutine runs the endpoint's loop.
func (c *Client) onLoop() bool { return c.leadG.Load() == goid.Get() }

// release lets the loop go and, if callers wait, hands it to one of them;
// if asynchronous calls are in flight, it also wakes an idle Run. counted
// says whether the releasing goroutine is itself one of c.callers (a
// synchronous caller that ran the loop): a releaser that is not (Run, an
// asynchronous call, sendCancel) must hand the loop on to a single waiting
// caller too, or that caller sleeps until its context ends.
func (c *Client) release(counted bool) {
	busy := c.inFlight() > 0 // read while holding the loop
	c.leadG.Store(0)
	c.lead.Store(false)
	if c.closed.Load() {
		return
	}
	waiting := c.callers.Load()
	if counted {
		waiting--
	}
	if waiting > 0 {
		select {
		case c.handoff <- struct{}{}:
		default: // a hand-off is pending already
		}
	}
	if busy {
		// Calls posted meanwhile kick the loop themselves.
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// inFlight is the number of asynchronous calls in flight; only the
// goroutine that runs the loop may ask.
func (c *Client) inFlight() int64 { return c.pending.Load() + c.loopPending }

// wait waits for cl, handed to the loop with Post: it spins for c.spin,
// then sleeps until its result, the loop's hand-off, ctx's end or the
// client's Close; whenever the loop is free it runs it itself (drive). On
// a non-nil error the call has been abandoned to the loop.
func (c *Client) wait(ctx context.Context, cl *clientCall) error {
	if c.spin > 0 {
		var start time.Time
		for i := 0; ; i++ {
			if cl.state.Load() == stDone {
				return nil
			}
			if c.tryLead() {
				return c.drive(ctx, cl)
			}
			if i&63 == 63 {
				if start.IsZero() {
					start = time.Now()
				} else if time.Since(start) > c.spin {
					break
				}
				if ctx.Err() != nil {
					break
				}
			}
		}
	}
	for {
		switch cl.state.Load() {
		case stDone:
			return nil
		case stPending:
			if !cl.state.CompareAndSwap(stPending, stSleeping) {
				continue
			}
		default: // completing: the result is being written
			runtime.Gosched()
			continue
		}
		// Sleeping. The loop may have been let go before this caller
		// went to sleep (its releaser saw it among the callers, so a
		// hand-off is pending): take it rather than sleep.
		if c.tryLead() {
			if cl.state.CompareAndSwap(stSleeping, stPending) {
				return c.drive(ctx, cl)
			}
			<-cl.ch // completed meanwhile
			c.release(true)
			return nil
		}
		var err error
		select {
		case <-cl.ch:
			return nil
		case <-c.handoff:
			if !cl.state.CompareAndSwap(stSleeping, stPending) {
				<-cl.ch
				select { // pass the hand-off on
				case c.handoff <- struct{}{}:
				default:
				}
				return nil
			}
			continue // take the loop (or sleep again if another caller did)
		case <-ctx.Done():
			err = ctx.Err()
		case <-c.closeCh:
			err = ErrClientClosed
		}
		if cl.state.CompareAndSwap(stSleeping, stAbandoned) {
			return err
		}
		<-cl.ch // the loop claimed it first: the result is on its way
		return nil
	}
}

// sendCancel tells the server that the call with id was given up, so that
// its handler's context is cancelled (best effort: no answer is awaited).
func (c *Client) sendCancel(s rpc.Session, id uint64) {
	h := reqHeader{kind: kindCancel, flags: flagCallID, callID: id}
	b := appendReqHeader(nil, &h, nil)
	_ = c.ep.Post(func() { _ = c.ep.Enqueue(s, ReqTypeDispatch, rpc.BytesMsg(b), nil) })
	if !c.closed.Load() && c.tryLead() {
		_ = c.ep.RunOnce() // send it now: nobody else may run the loop soon
		c.release(false)
	}
}
