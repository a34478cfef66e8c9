package rpc

// InlineResp returns room for a response of up to InlineMax bytes (and at
// most MaxMsgSize) in the record the endpoint will send it from: a
// dispatch handler writes its response there and answers with
// RespondInline, and the body is not copied again (RespondBytes copies it
// into that record). Any other answer, or none, leaves the room unused
// (returned to the endpoint with the request). It returns nil for a
// worker-mode request and when called off the endpoint's goroutine. The
// room is valid until r is answered.
func (r *Request) InlineResp() []byte {
	if r.mode == Worker {
		return nil
	}
	nested, err := r.ep.enter()
	if err != nil {
		return nil
	}
	if r.itx == nil {
		r.itx = r.ep.getTxMsg()
	}
	r.ep.exit(nested)
	n := InlineMax
	if r.ep.maxMsg < n {
		n = r.ep.maxMsg
	}
	return r.itx.inline[:n:n]
}

// RespondInline answers r with the first n bytes of InlineResp's room,
// as RespondBytes would answer with them (the same goroutine rule and
// errors); ErrTooLarge when n is outside the room, or when InlineResp was
// not called (or returned nil).
func (r *Request) RespondInline(n int) error {
	t := r.itx
	if t == nil || n < 0 || n > InlineMax || n > r.ep.maxMsg {
		return ErrTooLarge
	}
	nested, err := r.ep.enter()
	if err != nil {
		return err
	}
	defer r.ep.exit(nested)
	r.itx = nil
	if r.dead {
		r.ep.msgFree = append(r.ep.msgFree, t)
		return ErrAlreadyResponded
	}
	t.flat = t.inline[:n]
	t.total = n
	return r.ep.respondTx(r, t)
}

// dropInline returns r's unused InlineResp record to the endpoint (on its
// goroutine: freeRequest).
func (r *Request) dropInline() {
	r.ep.msgFree = append(r.ep.msgFree, r.itx)
	r.itx = nil
}

// InlineReq returns room for a request body of up to InlineMax bytes (and
// at most MaxMsgSize) in a send record of the endpoint: write the request
// there and enqueue it with EnqueueInline, and the body is not copied
// again (Enqueue with a BytesMsg copies it into such a record). The room
// stays the endpoint's: InlineReq returns the same room until
// EnqueueInline sends it. It returns nil where Enqueue would return
// ErrConcurrentUse (another goroutine holds the endpoint) or ErrClosed.
func (ep *Endpoint) InlineReq() []byte {
	nested, err := ep.enter()
	if err != nil {
		return nil
	}
	if ep.itx == nil {
		ep.itx = ep.getTxMsg()
	}
	ep.exit(nested)
	n := InlineMax
	if ep.maxMsg < n {
		n = ep.maxMsg
	}
	return ep.itx.inline[:n:n]
}

// EnqueueInline is Enqueue with the first n bytes of InlineReq's room as
// the request (the same goroutine rule, errors and continuation
// contract). The room is sent on success and kept for the next InlineReq
// otherwise. ErrTooLarge: n is outside the room, or InlineReq was not
// called.
func (ep *Endpoint) EnqueueInline(s Session, reqType uint8, n int, cont func(*Response)) error {
	nested, err := ep.enter()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	t := ep.itx
	if t == nil || n < 0 || n > InlineMax || n > ep.maxMsg {
		return ErrTooLarge
	}
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		return ErrNoSession
	}
	if si.state != sessConnected {
		return ErrNotConnected
	}
	ep.itx = nil
	t.flat = t.inline[:n]
	t.total = n
	_, err = ep.enqueueTx(s, reqType, t, cont)
	return err
}
