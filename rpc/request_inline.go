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
	if r.itx == nil {
		nested, err := r.ep.enter()
		if err != nil {
			return nil
		}
		r.itx = r.ep.getTxMsg()
		r.ep.exit(nested)
	}
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
