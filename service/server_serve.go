package service

import (
	"errors"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

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
