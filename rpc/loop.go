package rpc

import "github.com/petermattis/goid"

// A Loop is an endpoint held by the calling goroutine inside one of the
// endpoint's callbacks (a handler, a continuation, a posted function or a
// session event, run by RunOnce): Endpoint.Loop checks the goroutine once,
// and the Loop's methods then skip the goroutine check the Endpoint's and
// Request's do on every call (the goroutine id compared with the loop's),
// for a layer above rpc that sends several messages per callback, or
// checks the goroutine itself already.
//
// A Loop is valid during the callback that obtained it, on the goroutine
// that obtained it: it must not be kept past the callback nor passed to
// another goroutine (a Loop used while no callback of its endpoint runs
// takes the checked path, and so gets the Endpoint's errors; a Loop used
// from another goroutine while a callback runs is not detected, as the
// race detector would report). The zero Loop is not valid.
type Loop struct {
	ep *Endpoint
}

// LoopHandler is a dispatch handler that receives its request's endpoint
// held (Nexus.RegisterLoop): l is valid until the handler returns, on the
// handler's goroutine (the Loop's contract).
type LoopHandler func(l Loop, r *Request)

// Loop returns ep held by the calling goroutine and true when the
// goroutine runs one of ep's callbacks; the zero Loop and false otherwise
// (outside any callback, or from another goroutine).
func (ep *Endpoint) Loop() (Loop, bool) {
	if ep.inCallback.Load() > 0 && ep.state.Load() == 1 && goid.Get() == ep.owner.Load() {
		return Loop{ep}, true
	}
	return Loop{}, false
}

// Loop returns the endpoint held by the continuation r was given to: a
// continuation runs inside one of the endpoint's callbacks, on its
// goroutine, so no check is needed. The Loop is valid until the
// continuation returns (the Loop's contract); the zero Loop for a
// Response that is not a continuation's.
func (r *Response) Loop() Loop { return Loop{r.ep} }

// Endpoint returns the endpoint l holds (nil for the zero Loop).
func (l Loop) Endpoint() *Endpoint { return l.ep }

// EnqueueInline is Endpoint.EnqueueInline from the callback that obtained
// l, without the goroutine check; outside any callback it is
// Endpoint.EnqueueInline (with the check). It panics on the zero Loop.
func (l Loop) EnqueueInline(s Session, reqType uint8, w InlineWriter, cont func(*Response)) (sent bool, err error) {
	return l.ep.enqueueInlineHeld(s, reqType, w, cont)
}

// enqueueInlineHeld is Loop.EnqueueInline: the endpoint held by the
// Loop's contract while one of its callbacks runs.
func (ep *Endpoint) enqueueInlineHeld(s Session, reqType uint8, w InlineWriter, cont func(*Response)) (sent bool, err error) {
	if ep.inCallback.Load() == 0 || ep.state.Load() != 1 {
		return ep.EnqueueInline(s, reqType, w, cont)
	}
	// EnqueueInline's body after its goroutine check (kept in step with it;
	// a shared function would cost either path a call frame).
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		return false, ErrNoSession
	}
	if si.state != sessConnected {
		return false, ErrNotConnected
	}
	// writeInline's body, written out (one call less per request; kept in
	// step with it, as EnqueueInlineLoop's copy).
	room := ep.inlineRoom()
	t := ep.getTxMsg()
	n := w.WriteInline(t.inline[:room:room])
	if n < 0 || n > room {
		ep.msgFree = append(ep.msgFree, t) // unused
		return false, nil
	}
	t.flat = t.inline[:n]
	t.total = n
	_, err = ep.enqueueTx(s, reqType, t, cont)
	return true, err
}

// RespondInline is r.RespondInline from the callback that obtained l (r a
// request of l's endpoint), without the goroutine check; outside any
// callback, or for a request of another endpoint, it is r.RespondInline
// (with the check). It panics on the zero Loop.
func (l Loop) RespondInline(r *Request, w InlineWriter) (sent bool, err error) {
	return l.ep.respondInlineHeld(r, w)
}

// respondInlineHeld is Loop.RespondInline: the endpoint held by the
// Loop's contract while one of its callbacks runs.
func (ep *Endpoint) respondInlineHeld(r *Request, w InlineWriter) (sent bool, err error) {
	if r.ep != ep || ep.inCallback.Load() == 0 || ep.state.Load() != 1 {
		return r.RespondInline(w)
	}
	// RespondInline's body after its goroutine check (kept in step with it).
	if r.mode == Worker {
		return false, nil
	}
	if r.dead {
		return false, ErrAlreadyResponded
	}
	// writeInline's body, written out (one call less per response; kept
	// in step with it).
	room := ep.inlineRoom()
	t := ep.getTxMsg()
	n := w.WriteInline(t.inline[:room:room])
	if n < 0 || n > room {
		ep.msgFree = append(ep.msgFree, t) // unused
		return false, nil
	}
	t.flat = t.inline[:n]
	t.total = n
	return true, ep.respondTx(r, t)
}

// recoverHandler ends the guarded handler that panicked with p (its
// request ep.guardR): the handler's recovered function, then the
// handler's end as after a return.
func (ep *Endpoint) recoverHandler(p any) {
	r := ep.guardR
	ep.guarding, ep.guardR = false, nil
	r.ent.recovered(Loop{ep}, r, p)
	ep.afterHandler(r)
}
