package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The two RPC request types this package occupies on a Nexus: every
// method of every service registered on a Server shares them (methods are
// told apart by the service header's method handle, assigned at bind
// time). Other request types stay free for plain rpc handlers.
const (
	// ReqTypeDispatch carries binds, cancellations and calls of methods
	// served in the endpoint's loop (rpc.Dispatch).
	ReqTypeDispatch uint8 = 0xCE
	// ReqTypeWorker carries calls of methods served on the Nexus's worker
	// pool (rpc.Worker).
	ReqTypeWorker uint8 = 0xCF
)

// MethodInfo describes the method an interceptor sees.
type MethodInfo struct {
	FullMethod string // "/helloworld.Greeter/SayHello"
	Service    *ServiceDesc
	Method     int // index in Service.Methods
}

// UnaryHandler runs a method (the next interceptor, or the method itself).
type UnaryHandler func(ctx context.Context, req, resp any) error

// UnaryServerInterceptor wraps every method a Server runs: it may inspect
// ctx (IncomingMetadata), req and resp (the generated message pointers),
// call handler or refuse with an error.
type UnaryServerInterceptor func(ctx context.Context, req, resp any, info *MethodInfo, handler UnaryHandler) error

// ServerOption configures a Server.
type ServerOption func(*Server)

// WithServerInterceptor installs interceptors, run in the order given
// (the first one outermost).
func WithServerInterceptor(ics ...UnaryServerInterceptor) ServerOption {
	return func(s *Server) { s.icList = append(s.icList, ics...); s.ic = chainServer(s.icList) }
}

func chainServer(ics []UnaryServerInterceptor) UnaryServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(ctx context.Context, req, resp any, info *MethodInfo, h UnaryHandler) error {
		var next func(i int) UnaryHandler
		next = func(i int) UnaryHandler {
			if i == len(ics) {
				return h
			}
			return func(ctx context.Context, req, resp any) error { return ics[i](ctx, req, resp, info, next(i+1)) }
		}
		return next(0)(ctx, req, resp)
	}
}

// RegisterOption configures how RegisterService serves a service.
type RegisterOption func(*regOpts)

type regOpts struct {
	mode    rpc.Mode
	methods map[string]rpc.Mode
}

// WithMode serves every method of the service in mode m: rpc.Dispatch
// (the default: in the endpoint's loop, the request decoded zero-copy
// from the receive buffer; the handler must be short) or rpc.Worker (on
// the Nexus's worker pool; see rpc.Worker for the memory rules).
func WithMode(m rpc.Mode) RegisterOption { return func(o *regOpts) { o.mode = m } }

// WithMethodMode serves the named method (its name in the service block,
// "SayHello") in mode m, overriding WithMode.
func WithMethodMode(method string, m rpc.Mode) RegisterOption {
	return func(o *regOpts) {
		if o.methods == nil {
			o.methods = map[string]rpc.Mode{}
		}
		o.methods[method] = m
	}
}

// Server serves the services registered on it over every endpoint of one
// Nexus. It is safe for concurrent use.
type Server struct {
	nx     *rpc.Nexus
	ic     UnaryServerInterceptor
	icList []UnaryServerInterceptor
	obs    Observer

	mu         sync.Mutex
	byName     map[string]uint32
	methods    atomic.Pointer[[]*method]
	workerOnce sync.Once
	workerErr  error

	inflight inflight // worker-mode calls a client may cancel
	calls    sync.Pool
	// loopCalls keeps, per endpoint id, the serverCall of the endpoint's
	// dispatch-mode requests: they run one at a time on the endpoint's
	// loop, so the next one takes it back without a sync.Pool round trip.
	loopCalls [256]loopCall
	resetErrs atomic.Int64 // Reset errors of call arenas (resetArena)
}

type method struct {
	info     MethodInfo
	desc     *MethodDesc
	impl     any
	mode     rpc.Mode
	schema   *methodSchema
	fp       uint64
	mu       sync.Mutex
	accepted atomic.Pointer[[]uint64] // client fingerprints bound as compatible
	// bigResp: a response of the method did not fit serverCall.respond's
	// fused path (too large, or zero-copy entries); it is not tried again.
	bigResp atomic.Bool
	// direct serves the method's calls on handle's common path: the
	// MethodDesc's Direct bound to impl (rpc.Dispatch mode, a Server
	// without interceptors or Observer); nil otherwise.
	direct MethodDirect
	// wflat writes a flat response of direct in place (MethodDesc.WriteResponse, tried
	// first by serverCall.WriteInline); nil: none.
	wflat  func(DirectResponse, []byte) int
	handle uint32 // the method's index in Server.methods (serverCall.keepFor)
}

// maxAccepted bounds the distinct compatible client versions a method
// remembers; beyond it, binds of further versions are refused
// (ResourceExhausted) rather than growing without bound.
const maxAccepted = 64

func (m *method) accepts(fp uint64) bool {
	if p := m.accepted.Load(); p != nil {
		for _, x := range *p {
			if x == fp {
				return true
			}
		}
	}
	return false
}

func (m *method) accept(fp uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur []uint64
	if p := m.accepted.Load(); p != nil {
		cur = *p
	}
	for _, x := range cur {
		if x == fp {
			return true
		}
	}
	if len(cur) >= maxAccepted {
		return false
	}
	next := append(append([]uint64(nil), cur...), fp)
	m.accepted.Store(&next)
	return true
}

type inflightKey struct {
	ep   *rpc.Endpoint
	sess rpc.Session
	id   uint64
}

// NewServer makes a Server on nx: it registers the handler of
// ReqTypeDispatch now, and that of ReqTypeWorker when a method is first
// registered in rpc.Worker mode.
func NewServer(nx *rpc.Nexus, opts ...ServerOption) (*Server, error) {
	s := &Server{nx: nx, byName: map[string]uint32{}}
	for _, o := range opts {
		o(s)
	}
	s.methods.Store(new([]*method)) // never nil: the dispatch handler does not test it
	s.calls.New = func() any {
		sc := &serverCall{arena: *wire.NewArena()}
		sc.a, sc.ctx, sc.keep = &sc.arena, &sc.ctx0, sc.keep0[:]
		// serveDirect's deferred panic guard: the runtime's recover is
		// called only when the call did not return (guarded still set).
		sc.guard = func() {
			if sc.guarded {
				if p := recover(); p != nil {
					s.directPanic(sc, p)
				}
			}
		}
		return sc
	}
	if err := nx.RegisterLoop(ReqTypeDispatch, s.dispatchHandler(), s.dispatchPanic); err != nil {
		return nil, err
	}
	return s, nil
}

// ErrDuplicate: RegisterService of a method already registered.
var ErrDuplicate = errors.New("service: method already registered")

// RegisterService registers impl, which must implement d's server
// interface, to serve d's methods. Generated Register<Service>Server
// functions call it. Services and methods may be registered at any time;
// registering a method twice is ErrDuplicate.
func (s *Server) RegisterService(d *ServiceDesc, impl any, opts ...RegisterOption) error {
	if err := d.check(); err != nil {
		return err
	}
	if d.HandlerType != nil {
		ht := reflect.TypeOf(d.HandlerType).Elem()
		if impl == nil || !reflect.TypeOf(impl).Implements(ht) {
			return fmt.Errorf("service: RegisterService(%s): %T does not implement %v", d.Name, impl, ht)
		}
	}
	var o regOpts
	for _, f := range opts {
		f(&o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur []*method
	if p := s.methods.Load(); p != nil {
		cur = *p
	}
	next := append([]*method(nil), cur...)
	for i := range d.Methods {
		name := d.FullMethod(i)
		if _, dup := s.byName[name]; dup {
			return fmt.Errorf("%w: %s", ErrDuplicate, name)
		}
		mode := o.mode
		if m, ok := o.methods[d.Methods[i].Name]; ok {
			mode = m
		}
		if mode == rpc.Worker {
			s.workerOnce.Do(func() { s.workerErr = s.nx.Register(ReqTypeWorker, rpc.Worker, s.serve) })
			if s.workerErr != nil {
				return s.workerErr
			}
		}
		var direct MethodDirect
		if bind := d.Methods[i].Direct; bind != nil && mode == rpc.Dispatch && s.ic == nil && s.obs == nil {
			direct = bind(impl) // nil when impl does not implement the server interface
		}
		next = append(next, &method{info: MethodInfo{FullMethod: name, Service: d, Method: i}, desc: &d.Methods[i],
			impl: impl, mode: mode, schema: schemaOf(d, i), fp: d.Methods[i].Fingerprint, direct: direct,
			wflat: d.Methods[i].WriteResponse, handle: uint32(len(next))})
	}
	for i := len(cur); i < len(next); i++ {
		s.byName[next[i].info.FullMethod] = uint32(i)
	}
	s.methods.Store(&next)
	return nil
}

// serverCall is the per-call state a handler needs, pooled. The fields
// the dispatch handler's common call touches come first (one cache line).
type serverCall struct {
	a   *wire.Arena
	ctx *callCtx // the handler's context; replaced when a call let it escape (callCtx.finish)
	// keep: each Direct method's kept messages (MethodDirect), by the
	// method's handle.
	keep []DirectKeep
	// guarded: serveDirect runs the call of request gr (its method in
	// ctx.info); its deferred guard (made with the serverCall, see
	// NewServer) recovers a panic only while guarded is set. gr is left as
	// it is after the call (read only while guarded).
	guarded bool
	gr      *rpc.Request
	// The first context and the first methods' DirectKeeps, and below the
	// arena, live in the serverCall itself: the common call's state is one
	// object (ctx and keep point here until a context escapes or a handle
	// outgrows keep0), its hot fields first.
	ctx0  callCtx
	keep0 [4]DirectKeep

	h   reqHeader
	ro  respObj
	buf []byte
	sga wireimpl.SGA // respond's sink (empty between calls)
	// The response and method WriteInline writes (serveDirect, respondSGA), and the
	// serialization's error when it declined for one.
	wout  DirectResponse
	wm    *method
	werr  error
	guard func()
	arena wire.Arena // a points here
}

// keepFor returns m's DirectKeep in sc.
func (sc *serverCall) keepFor(m *method) *DirectKeep {
	h := int(m.handle)
	if h >= len(sc.keep) {
		sc.growKeep(h)
	}
	return &sc.keep[h]
}

// growKeep makes sc.keep long enough for handle h.
//
//go:noinline
func (sc *serverCall) growKeep(h int) {
	k := make([]DirectKeep, h+1)
	copy(k, sc.keep)
	sc.keep = k
}

// loopCall is one endpoint's cached serverCall, touched only by the
// dispatch handler (dispatchHandler), which runs on the endpoint's loop
// goroutine inside its callbacks (rpc.Nexus.RegisterLoop: the endpoint
// held): one goroutine at a time, ordered by the endpoint's own entry and
// exit (another goroutine may run it, or a new endpoint take the id, only
// after that), so busy is a plain flag — no locked compare-and-swap and
// exchange per call. busy still tells a request that finds the slot taken
// (a handler that panicked out of the dispatch handler) to use the pool
// instead.
type loopCall struct {
	busy bool
	sc   *serverCall
}

// dispatchHandler returns the rpc handler of ReqTypeDispatch (the
// dispatch handler): serve with the endpoint's cached serverCall (a
// request that finds it taken uses the pool instead). l, the endpoint
// held (rpc.Nexus.RegisterLoop), answers the common call without a second
// goroutine check.
//
// The common call — the fixed header only, under the method's own
// fingerprint, no Observer, a method with a MethodDirect — is served in
// the handler itself as serveDirect serves it (serveDirect's body,
// written out: one call less per request; keep the two in step), under
// the rpc loop's panic guard (dispatchPanic). The handler is a closure,
// not a method value (no wrapper call per request); dispatchHandler is
// not inlined so that the closure is compiled as a function of its own
// (calls in it inlined).
//
//go:noinline
func (s *Server) dispatchHandler() func(l rpc.Loop, r *rpc.Request) {
	return func(l rpc.Loop, r *rpc.Request) {
		slot := &s.loopCalls[r.Endpoint().ID()]
		if slot.busy {
			sc := s.calls.Get().(*serverCall)
			s.handle(r, sc)
			s.calls.Put(sc)
			return
		}
		sc := slot.sc
		if sc == nil {
			sc = s.calls.Get().(*serverCall)
			slot.sc = sc
		}
		slot.busy = true
		data := r.Data()
		var m *method
		if handle, fp, ok := fixedCall(data); ok {
			// (m.direct is nil with an Observer: RegisterService)
			if p := *s.methods.Load(); uint(handle) < uint(len(p)) {
				if m = p[handle]; fp != m.fp || m.direct == nil {
					m = nil
				}
			}
		}
		if m == nil {
			s.handle(r, sc)
			slot.busy = false
			return
		}
		// serveDirect's body.
		a, ctx := sc.a, sc.ctx
		sc.gr, sc.guarded = r, true
		ctx.info = &m.info // nothing can end the call early (no deadline, no call id)
		var in mem.Buf
		if body := len(data) - reqFixed; body != 0 {
			var ok bool
			if in, ok = r.BorrowedTail(body); !ok {
				in = r.InputBuf()
				in = in.SliceTrusted(in.Len()-body, body)
			}
		}
		a.BorrowInput = true
		k := sc.keepFor(m)
		out, err := m.direct(ctx, a, in, k)
		a.BorrowInput = false // (the handler should have cleared it after its decode)
		if err == nil && out != nil {
			sent := false
			if !m.bigResp.Load() {
				if w := k.W; w != nil { // the generated writer: status and response
					sent, err = l.RespondInline(r, w)
				}
				if !sent && err == nil {
					sc.wout, sc.wm = out, m // (left set after the call: read by WriteInline only)
					sent, err = l.RespondInline(r, sc)
					if !sent && err == nil && sc.werr != nil { // the serialization failed
						err, sc.werr = sc.werr, nil
						sent = true
					}
				}
			}
			if !sent {
				err = sc.respondObject(r, out)
			}
			if err != nil {
				s.respondFailed(r, sc, err)
			}
		} else {
			s.fail(r, sc, callStatus(err))
		}
		sc.guarded = false
		ctx.info = nil
		if ctx.state.Load() != 0 || ctx.md != nil {
			s.endCtx(sc)
		}
		s.resetArena(a)
		slot.busy = false
	}
}

// serve is the rpc handler of ReqTypeWorker (requests on the Nexus's
// worker goroutines).
func (s *Server) serve(r *rpc.Request) {
	sc := s.calls.Get().(*serverCall)
	s.handle(r, sc)
	s.calls.Put(sc)
}

// handle serves one request with sc. The common request (a call with
// the fixed header only, under the method's own fingerprint, no
// Observer) is served straight here: the header read as two words, one
// method lookup, one fingerprint comparison, the handler, the response;
// every other request goes through handleSlow. A method with a
// MethodDirect (decided once, at RegisterService: rpc.Dispatch mode, no
// interceptor) is served by serveDirect, which resets the arena itself.
func (s *Server) handle(r *rpc.Request, sc *serverCall) {
	data := r.Data()
	if handle, fp, ok := fixedCall(data); ok && s.obs == nil {
		if p := s.methods.Load(); p != nil && uint(handle) < uint(len(*p)) {
			if m := (*p)[handle]; fp == m.fp {
				if m.direct != nil {
					s.serveDirectGuarded(m, sc, r, data[reqFixed:])
					return
				}
				sc.h = reqHeader{kind: kindCall, handle: handle, fp: m.fp}
				ctx := sc.ctx
				ctx.info = &m.info // nothing can end the call early (no deadline, no call id)
				out, err := s.invoke(m, ctx, sc.a, r, data[reqFixed:])
				if err == nil && out != nil {
					err = sc.respond(r, m, out)
					if err != nil {
						s.respondFailed(r, sc, err)
					}
				} else {
					s.fail(r, sc, callStatus(err))
				}
				s.endCall(sc)
				return
			}
		}
	}
	s.handleSlow(r, sc, data)
}

// endCall ends a call served on handle's common path: its context (given
// back, or replaced if the handler let it escape) and its arena's batch.
func (s *Server) endCall(sc *serverCall) {
	ctx := sc.ctx
	ctx.info = nil
	if ctx.state.Load() != 0 || ctx.md != nil {
		s.endCtx(sc)
	}
	s.resetArena(sc.a)
}

// handleSlow serves any request handle does not serve itself.
func (s *Server) handleSlow(r *rpc.Request, sc *serverCall, data []byte) {
	if parseFixedCall(data, &sc.h) {
		s.call(r, sc, data[reqFixed:])
		return
	}
	off, err := parseReqHeader(data, &sc.h)
	switch {
	case err != nil:
		s.fail(r, sc, &Error{Code: InvalidArgument, Message: err.Error()})
	case sc.h.kind == kindBind:
		s.bind(r, sc, data[off:])
	case sc.h.kind == kindCancel:
		s.inflight.cancel(inflightKey{r.Endpoint(), r.Session(), sc.h.callID})
		sc.buf = appendRespOK(sc.buf[:0])
		_ = r.RespondBytes(sc.buf)
	default:
		s.call(r, sc, data[off:])
	}
	sc.h.md = nil
}

// callStatus is the status a failed handler answers with (err nil: the
// handler returned no response).
func callStatus(err error) *Error {
	if err == nil {
		return &Error{Code: Internal, Message: "handler returned no response"}
	}
	return toStatus(err)
}

// respondFailed answers with Internal when sending the response failed
// for another reason than the session or the request being gone.
func (s *Server) respondFailed(r *rpc.Request, sc *serverCall, err error) {
	if !errors.Is(err, rpc.ErrClosed) && !errors.Is(err, rpc.ErrAlreadyResponded) {
		s.fail(r, sc, &Error{Code: Internal, Message: "sending the response: " + err.Error()})
	}
}

// endCtx ends the call of sc's context and gives sc a new one if the
// handler let it escape (callCtx.finish).
func (s *Server) endCtx(sc *serverCall) {
	if !sc.ctx.finish() {
		sc.ctx = new(callCtx)
	}
}

// rebindDetail marks a status that asks the client to bind again (the
// server does not know the handle or the fingerprint: it restarted, or the
// client skipped the bind); the client does so once, transparently.
const rebindDetail = "cornflakes.rebind"

// incompatibleDetail marks a bind refused for incompatible schemas.
const incompatibleDetail = "cornflakes.incompatible"

func (s *Server) fail(r *rpc.Request, sc *serverCall, e *Error) {
	sc.buf = appendRespStatus(sc.buf[:0], e)
	_ = r.RespondBytes(sc.buf)
}

func (s *Server) call(r *rpc.Request, sc *serverCall, body []byte) {
	h := &sc.h
	var m *method
	if p := s.methods.Load(); p != nil && int(h.handle) < len(*p) {
		m = (*p)[h.handle]
	}
	if m == nil || (h.fp != m.fp && !m.accepts(h.fp)) {
		s.fail(r, sc, &Error{Code: FailedPrecondition, Message: "method not bound", Details: []byte(rebindDetail)})
		return
	}
	var t0 time.Time
	if s.obs != nil {
		t0 = time.Now()
	}
	// No context.WithTimeout: the deadline is carried by sc.ctx, whose
	// timer starts only if the handler waits on Done. Only a worker-mode
	// call can be cancelled by the client while it runs (a dispatch
	// handler holds the loop that would read the cancellation).
	if h.flags&(flagDeadline|flagCallID) == 0 {
		sc.ctx.info = &m.info // start's fast path: nothing can end the call early
	} else {
		var dl time.Time
		if h.flags&flagDeadline != 0 {
			dl = time.Now().Add(h.timeout)
		}
		cancellable := h.flags&flagCallID != 0 && m.mode == rpc.Worker
		sc.ctx.start(&m.info, dl, cancellable)
		if cancellable {
			k := inflightKey{r.Endpoint(), r.Session(), h.callID}
			s.inflight.add(k, sc.ctx)
			defer s.inflight.remove(k)
		}
	}
	if len(h.md) > 0 {
		sc.ctx.md = decodeMetadata(h.md)
	}
	out, err := s.invoke(m, sc.ctx, sc.a, r, body)
	if err != nil || out == nil {
		st := callStatus(err)
		s.fail(r, sc, st)
		if s.obs != nil {
			s.obs.ObserveCall(ServerSide, &m.info, st.Code, time.Since(t0))
		}
	} else {
		if rerr := sc.respond(r, m, out); rerr != nil {
			s.respondFailed(r, sc, rerr)
		}
		if s.obs != nil {
			s.obs.ObserveCall(ServerSide, &m.info, OK, time.Since(t0))
		}
	}
	s.endCtx(sc)
	s.resetArena(sc.a)
}

// invoke runs the method, turning a panic into an Internal error. body is
// the request's body, the end of r.Data().
//
// A method in rpc.Dispatch mode with a BufHandler gets the body as r's
// own reference (rpc.Request.InputBuf), which its decode borrows
// (wire.Arena.BorrowInput): no reference is taken on it, nor released at
// a's Reset. That is safe because the bytes outlive the arena's use: a
// dispatch request's bytes are released after its rpc handler (serve*)
// returns, and every path of handle and call (response, error, panic,
// deadline, failed response) resets a before returning; a zero-copy
// field of the request set into the response takes its own reference
// (Bytes.Set), and the rpc layer takes its own on what it sends. A
// worker-mode request's bytes are released when it is answered, before
// the Reset: it keeps Handler and the arena's own reference.
func (s *Server) invoke(m *method, ctx *callCtx, a *wire.Arena, r *rpc.Request, body []byte) (out wire.Object, err error) {
	returned := false
	defer func() {
		if returned { // no panic: the runtime's recover call is skipped
			return
		}
		if p := recover(); p != nil {
			a.BorrowInput = false // a MethodBufHandler's panic
			out, err = nil, &Error{Code: Internal, Message: fmt.Sprintf("panic in %s: %v", m.info.FullMethod, p)}
		}
	}()
	if ctx.state.Load() != 0 {
		if err := ctx.Err(); err != nil { // the deadline passed on the way
			return nil, err
		}
	}
	if bh := m.desc.BufHandler; bh != nil && m.mode == rpc.Dispatch {
		var in mem.Buf
		if n := len(body); n != 0 {
			var ok bool
			if in, ok = r.BorrowedTail(n); !ok {
				in = r.InputBuf()
				in = in.SliceTrusted(in.Len()-n, n)
			}
		}
		a.BorrowInput = true
		out, err = bh(m.impl, ctx, a, in, s.ic, &m.info)
		a.BorrowInput = false // (the handler should have cleared it after its decode)
		returned = true
		return out, err
	}
	out, err = m.desc.Handler(m.impl, ctx, a, body, s.ic, &m.info)
	returned = true
	return out, err
}

// serveDirect runs a method bound to its implementation (MethodDesc.Direct;
// rpc.Dispatch mode, no interceptor) on handle's common path, answers
// the call and ends it (endCall): the request borrowed as by a
// MethodBufHandler, the response written in one walk into the record the
// endpoint sends it from when it fits (WriteInline), a handler's error
// or panic (Internal) as a status.
//
// The panic guard is armed by sc.guarded (with sc.gr, the request): a
// panic in the handler, the request's decode or the response's
// serialization fails this call only (directPanic), and the arena and
// context are ended as on every other path. The guard is the rpc loop's,
// one per batch of requests (the dispatch handler is registered with
// rpc.Nexus.RegisterLoop and dispatchPanic; it serves its common call
// with this body written out), or serveDirectGuarded's.
func (s *Server) serveDirect(m *method, sc *serverCall, r *rpc.Request, body []byte) {
	a, ctx := sc.a, sc.ctx
	sc.gr, sc.guarded = r, true
	ctx.info = &m.info // nothing can end the call early (no deadline, no call id)
	var in mem.Buf
	if n := len(body); n != 0 {
		var ok bool
		if in, ok = r.BorrowedTail(n); !ok {
			in = r.InputBuf()
			in = in.SliceTrusted(in.Len()-n, n)
		}
	}
	a.BorrowInput = true
	k := sc.keepFor(m)
	out, err := m.direct(ctx, a, in, k)
	a.BorrowInput = false // (the handler should have cleared it after its decode)
	if err == nil && out != nil {
		// The response written in
		// one walk into the record the endpoint sends it from
		// (rpc.Request.RespondInline, the generated writer k.W or sc as
		// the writer).
		sent := false
		if !m.bigResp.Load() {
			if w := k.W; w != nil {
				sent, err = r.RespondInline(w)
			}
			if !sent && err == nil {
				sc.wout, sc.wm = out, m // (left set after the call: read by WriteInline only)
				sent, err = r.RespondInline(sc)
				if !sent && err == nil && sc.werr != nil { // the serialization failed
					err, sc.werr = sc.werr, nil
					sent = true
				}
			}
		}
		if !sent {
			err = sc.respondObject(r, out)
		}
		if err != nil {
			s.respondFailed(r, sc, err)
		}
	} else {
		s.fail(r, sc, callStatus(err))
	}
	sc.guarded = false
	ctx.info = nil
	if ctx.state.Load() != 0 || ctx.md != nil {
		s.endCtx(sc)
	}
	s.resetArena(a)
}

// serveDirectGuarded is serveDirect under a panic guard of its own
// (sc.guard, deferred as a func value: no closure built per call), for
// the calls that the dispatch handler does not serve itself (handle).
func (s *Server) serveDirectGuarded(m *method, sc *serverCall, r *rpc.Request, body []byte) {
	defer sc.guard()
	s.serveDirect(m, sc, r, body)
}

// dispatchPanic is the rpc loop's recovery of the dispatch handler's
// panics (rpc.Nexus.RegisterLoop): a direct call (serveDirect's body) on
// the endpoint's cached serverCall that panicked (sc.guarded, for r) ends
// as directPanic says and frees the slot; anything else — a panic outside a method's
// call, a bug of this package — panics on.
func (s *Server) dispatchPanic(_ rpc.Loop, r *rpc.Request, p any) {
	slot := &s.loopCalls[r.Endpoint().ID()]
	if sc := slot.sc; slot.busy && sc != nil && sc.guarded && sc.gr == r {
		s.directPanic(sc, p)
		slot.busy = false
		return
	}
	panic(p)
}

// directPanic ends a call of serveDirect that panicked with p (recovered
// by dispatchPanic or sc.guard): the call (sc.gr, of method sc.ctx.info) is answered
// with Internal and its arena and context ended, as on every other path.
func (s *Server) directPanic(sc *serverCall, p any) {
	sc.guarded = false
	sc.a.BorrowInput = false
	sc.wout, sc.wm, sc.werr = nil, nil, nil // a panic in the response's serialization
	clear(sc.sga.Entries)
	sc.sga.Entries = sc.sga.Entries[:0]
	sc.sga.Head = nil
	s.fail(sc.gr, sc, &Error{Code: Internal, Message: fmt.Sprintf("panic in %s: %v", sc.ctx.info.FullMethod, p)})
	s.endCall(sc)
}

// resetArena ends a call's batch of a, counting a Reset error (a
// reference released twice, or, in the checked build, a borrowed request
// released before the Reset: a broken MethodBufHandler contract).
func (s *Server) resetArena(a *wire.Arena) {
	if err := a.Reset(); err != nil {
		s.resetErrs.Add(1)
	}
}

// bind answers a bind request: the method's handle and mode if the
// client's schema is identical or compatible, an error otherwise.
func (s *Server) bind(r *rpc.Request, sc *serverCall, body []byte) {
	cs, err := parseSchema(body, sc.h.fp)
	if err != nil {
		s.fail(r, sc, &Error{Code: InvalidArgument, Message: err.Error()})
		return
	}
	s.mu.Lock()
	idx, ok := s.byName[cs.name]
	s.mu.Unlock()
	if !ok {
		s.fail(r, sc, &Error{Code: Unimplemented, Message: "method " + cs.name + " is not implemented by the server"})
		return
	}
	m := (*s.methods.Load())[idx]
	match := byte(0)
	if cs.fp != m.fp {
		if err := compatible(cs, m.schema); err != nil {
			s.fail(r, sc, &Error{Code: FailedPrecondition, Message: err.Error(), Details: []byte(incompatibleDetail)})
			return
		}
		if !m.accept(cs.fp) {
			s.fail(r, sc, &Error{Code: ResourceExhausted, Message: fmt.Sprintf("method %s: more than %d client versions", cs.name, maxAccepted)})
			return
		}
		match = 1
	}
	b := appendRespOK(sc.buf[:0])
	b = binary.LittleEndian.AppendUint32(b, idx)
	b = append(b, byte(m.mode), match, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, m.fp)
	sc.buf = b
	_ = r.RespondBytes(b)
}

// ---- contexts ----

type mdKey struct{}
type outMDKey struct{}
type infoKey struct{}

// IncomingMetadata returns the metadata the client sent with the call
// whose handler ctx is (nil if none). The pairs are the handler's to keep.
func IncomingMetadata(ctx context.Context) Metadata {
	if p, ok := ctx.Value(mdKey{}).(*Metadata); ok {
		return *p
	}
	return nil
}

// MethodFromContext returns the method a handler's ctx belongs to.
func MethodFromContext(ctx context.Context) (*MethodInfo, bool) {
	m, ok := ctx.Value(infoKey{}).(*MethodInfo)
	return m, ok
}

// WithMetadata returns a context whose calls carry md (replacing any
// metadata ctx already carries). md must respect the limits (Metadata);
// a call with metadata beyond them fails with ErrBadHeader.
func WithMetadata(ctx context.Context, md Metadata) context.Context {
	return context.WithValue(ctx, outMDKey{}, md)
}
