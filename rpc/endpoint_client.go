package rpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// Enqueue sends a request of type reqType on session s; cont runs on the
// endpoint goroutine when the response arrives or the request fails
// (Response.Err). req is consumed in every case (released on error).
// With all of the session's slots busy, the request waits in a backlog.
func (ep *Endpoint) Enqueue(s Session, reqType uint8, req Msg, cont func(*Response)) error {
	_, err := ep.enqueue(s, reqType, req, cont)
	return err
}

func (ep *Endpoint) enqueue(s Session, reqType uint8, req Msg, cont func(*Response)) (uint64, error) {
	nested, err := ep.enter()
	if err != nil {
		req.release()
		return 0, err
	}
	defer ep.exit(nested)
	return ep.enqueueLocked(s, reqType, req, cont)
}

func (ep *Endpoint) enqueueLocked(s Session, reqType uint8, req Msg, cont func(*Response)) (uint64, error) {
	si := ep.session(uint16(s))
	if si == nil || !si.client {
		req.release()
		return 0, ErrNoSession
	}
	if si.state != sessConnected {
		req.release()
		return 0, ErrNotConnected
	}
	tx, err := ep.newTxMsg(req)
	if err != nil {
		req.release()
		return 0, err
	}
	return ep.enqueueTx(s, reqType, tx, cont)
}

// enqueueTx enqueues tx (consumed) as a request on client session s,
// connected.
func (ep *Endpoint) enqueueTx(s Session, reqType uint8, tx *txMsg, cont func(*Response)) (uint64, error) {
	tag := uint64(ep.conts.Add(contEntry{fn: cont, used: true}))
	if !ep.inLoop && !ep.batching {
		// The core's clock advances only in the loop, and an idle client
		// may not have run it for milliseconds: without this, the new
		// request's send time (its loss-detection reference) would be
		// stale and the next loss scan would retransmit it spuriously
		// (an RTO rollback with go-back-N costs the client an extra
		// round trip and the server a duplicate response). Observe, not
		// Tick: the loss scan waits until the loop has received what
		// arrived meanwhile.
		ep.core.Observe(ep.now())
	}
	if err := ep.core.Enqueue(uint16(s), reqType, tx, tag); err != nil {
		tx.Release()
		ep.conts.Take(int32(tag))
		return 0, mapCoreErr(err)
	}
	if !ep.inLoop && !ep.batching {
		ep.process()
		_ = ep.flush()
	}
	return tag, nil
}

func (ep *Endpoint) handleResponse(e *proto.Event) {
	if e.Tag >= uint64(ep.conts.Len()) || !ep.conts.At(int32(e.Tag)).used {
		if e.Buf != nil {
			e.Buf.Release()
		}
		return
	}
	fn := ep.conts.Take(int32(e.Tag)).fn
	r := &ep.resp
	*r = Response{ep: ep}
	switch {
	case e.Err != nil:
		r.Err = mapCoreErr(e.Err)
		if errors.Is(e.Err, proto.ErrNoMemory) {
			r.Err = fmt.Errorf("rpc: response reassembly: %w", e.Err)
		}
	case e.Status == proto.StatusNoHandler:
		r.Err = ErrNoHandler
	case e.Status == proto.StatusNoMemory:
		r.Err = ErrOverBudget
	case e.Status == proto.StatusDenied:
		r.Err = ErrDenied
	case e.Status != proto.StatusOK:
		r.Err = ErrRejected
	}
	if e.Buf != nil {
		r.buf = e.Buf.(*rxBuf).take()
		r.data = r.buf.Bytes()
	} else if r.Err == nil {
		r.data = e.Data
		r.rxID = e.RxID
		r.borrowed = true
		ep.setSegments(r, e.RxID)
	}
	ep.stats.Continuations++
	if fn != nil {
		fn(r) // inside handleEvents' callback section
	}
	if !r.buf.IsZero() {
		_ = r.buf.Release()
	}
	*r = Response{}
}

// Call sends a request and runs the event loop until its response arrives,
// ctx is done (the request is cancelled: late packets are dropped and the
// server may still run it once) or the request fails. The returned buffer
// holds the response (zero Buf for an empty response); the caller must
// Release it. req is consumed. Call must not be used from handlers or
// continuations (ErrReentrant): use Enqueue there.
func (ep *Endpoint) Call(ctx context.Context, s Session, reqType uint8, req Msg) (mem.Buf, error) {
	nested, err := ep.enterLoop()
	if err != nil {
		req.release()
		return mem.Buf{}, err
	}
	defer ep.exit(nested)
	if err := ctx.Err(); err != nil {
		req.release()
		return mem.Buf{}, err
	}
	var (
		done bool
		out  mem.Buf
		cerr error
	)
	tag, err := ep.enqueueLocked(s, reqType, req, func(r *Response) {
		done = true
		if cerr = r.Err; cerr == nil {
			out, cerr = r.retain()
		}
	})
	if err != nil {
		return mem.Buf{}, err
	}
	dctx := ctx.Done()
	for !done {
		select {
		case <-dctx:
			ep.core.Cancel(uint16(s), tag, ctx.Err())
			ep.process()
			return mem.Buf{}, ctx.Err()
		default:
		}
		if _, err := ep.runOnce(); err != nil {
			ep.core.Cancel(uint16(s), tag, err)
			ep.process()
			return mem.Buf{}, err
		}
	}
	return out, cerr
}
