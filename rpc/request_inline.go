package rpc

import "github.com/petermattis/goid"

// InlineWriter writes a message body straight into the record the
// endpoint sends it from (Request.RespondInline, Endpoint.EnqueueInline):
// WriteInline writes at most len(dst) bytes into dst and returns their
// number, or -1 to send nothing (the body does not fit, or the writer
// declines). It runs on the endpoint's goroutine with the endpoint held:
// it must not call the endpoint, and must keep nothing of dst.
type InlineWriter interface {
	WriteInline(dst []byte) int
}

// inlineRoom is the room of a send record: InlineMax bytes, at most the
// endpoint's MaxMsgSize.
func (ep *Endpoint) inlineRoom() int {
	if ep.maxMsg < InlineMax {
		return ep.maxMsg
	}
	return InlineMax
}

// RespondInline answers r with the body w writes straight into the record
// the endpoint sends it from (at most InlineMax bytes): the body is not
// copied again (RespondBytes copies it into such a record). sent reports
// whether w wrote the body: false with a nil error when w declined (r is
// then still to be answered) and for a worker-mode request (which answers
// with Respond). A body written is r's answer, with Respond's goroutine
// rule and errors.
func (r *Request) RespondInline(w InlineWriter) (sent bool, err error) {
	if r.mode == Worker {
		return false, nil
	}
	ep := r.ep
	nested, err := ep.enter()
	if err != nil {
		return false, err
	}
	if !nested { // from a handler or continuation exit has nothing to do
		defer ep.exit(false)
	}
	if r.dead {
		return false, ErrAlreadyResponded
	}
	t := ep.writeInline(w)
	if t == nil {
		return false, nil
	}
	return true, ep.respondTx(r, t)
}

// EnqueueInline is Enqueue with a request body that w writes straight into
// the record the endpoint sends it from (at most InlineMax bytes): the body
// is not copied again (Enqueue with a BytesMsg copies it into such a
// record). sent reports whether w wrote the body: false with a nil error
// when w declined (nothing was enqueued; cont will not run). A non-nil
// error is Enqueue's (cont will not run; w is not called when the session
// cannot take the request); the goroutine rule and the continuation
// contract are Enqueue's.
func (ep *Endpoint) EnqueueInline(s Session, reqType uint8, w InlineWriter, cont func(*Response)) (sent bool, err error) {
	nested, err := ep.enter()
	if err != nil {
		return false, err
	}
	if !nested { // from a handler or continuation exit has nothing to do
		defer ep.exit(false)
	}
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		return false, ErrNoSession
	}
	if si.state != sessConnected {
		return false, ErrNotConnected
	}
	t := ep.writeInline(w)
	if t == nil {
		return false, nil
	}
	_, err = ep.enqueueTx(s, reqType, t, cont)
	return true, err
}

// EnqueueInlineLoop is Endpoint.Loop and Loop.EnqueueInline in one call,
// for a layer above rpc that sends from the endpoint's callbacks and
// checks the goroutine no other way: when the calling goroutine runs one
// of ep's callbacks (Loop's check), it is Loop.EnqueueInline (held true;
// sent and err as EnqueueInline's); otherwise it does nothing and returns
// held false (w is not called, cont will not run), and the caller takes
// its general path (Endpoint.EnqueueInline, with the checks).
func (ep *Endpoint) EnqueueInlineLoop(s Session, reqType uint8, w InlineWriter, cont func(*Response)) (held, sent bool, err error) {
	if ep.inCallback.Load() == 0 || ep.state.Load() != 1 || goid.Get() != ep.owner.Load() {
		return false, false, nil
	}
	// Loop.EnqueueInline's body after its checks (kept in step with it).
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		return true, false, ErrNoSession
	}
	if si.state != sessConnected {
		return true, false, ErrNotConnected
	}
	// writeInline's body (kept in step with it; no call frame of its own).
	room := ep.inlineRoom()
	t := ep.getTxMsg()
	n := w.WriteInline(t.inline[:room:room])
	if n < 0 || n > room {
		ep.msgFree = append(ep.msgFree, t) // unused
		return true, false, nil
	}
	t.flat = t.inline[:n]
	t.total = n
	_, err = ep.enqueueTx(s, reqType, t, cont)
	return true, true, err
}

// writeInline has w write a body into a send record's inline area and
// returns the record, or nil (the record back on the free list) when w
// declined or wrote out of bounds.
func (ep *Endpoint) writeInline(w InlineWriter) *txMsg {
	room := ep.inlineRoom()
	t := ep.getTxMsg()
	n := w.WriteInline(t.inline[:room:room])
	if n < 0 || n > room {
		ep.msgFree = append(ep.msgFree, t) // unused
		return nil
	}
	t.flat = t.inline[:n]
	t.total = n
	return t
}
