package rpc

import (
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

func (ep *Endpoint) newRequest() *Request {
	if k := len(ep.reqFree); k > 0 {
		r := ep.reqFree[k-1]
		ep.reqFree = ep.reqFree[:k-1]
		return r
	}
	return &Request{ep: ep}
}

func (ep *Endpoint) freeRequest(r *Request) {
	if r.tracked {
		r.tracked = false
		if si := ep.session(r.h.Session); si != nil && si.reqs != nil && si.reqs[r.h.Slot] == r {
			si.reqs[r.h.Slot] = nil
		}
	}
	if !r.buf.IsZero() {
		_ = r.buf.Release()
		r.buf = mem.Buf{}
	}
	if r.mode == Worker {
		// The worker goroutine may still read r (after posting its
		// answer); worker requests are not recycled.
		return
	}
	*r = Request{ep: ep}
	ep.reqFree = append(ep.reqFree, r)
}

// finish ends r after it was answered (or the answer failed).
func (ep *Endpoint) finish(r *Request) {
	if r.inHandler {
		r.done = true // handleRequest frees it when the handler returns
		return
	}
	ep.freeRequest(r)
}

func (ep *Endpoint) handleRequest(e *proto.Event) {
	h := ep.nx.handlers[e.ReqType].Load()
	if h == nil {
		_ = ep.core.RespondStatus(e.Handle, proto.StatusNoHandler)
		if e.Buf != nil {
			e.Buf.Release()
		}
		return
	}
	r := ep.newRequest()
	r.h, r.reqType, r.mode = e.Handle, e.ReqType, h.mode
	r.ent = h
	if ep.nx.cfg.Keys != nil {
		if si := ep.session(e.Session); si != nil {
			r.key, r.role = si.key, si.role
		}
	}
	if e.Buf != nil {
		r.buf = e.Buf.(*rxBuf).take()
		r.data = r.buf.Bytes()
	} else if ep.cfg.CopyRequests && len(e.Data) > 0 && h.mode == Dispatch { // toWorker copies worker requests anyway
		b, err := ep.pool.Alloc(len(e.Data))
		if err != nil {
			_ = ep.core.RespondStatus(e.Handle, proto.StatusRejected)
			ep.freeRequest(r)
			return
		}
		copy(b.Bytes(), e.Data)
		r.buf, r.data = b, b.Bytes()
	} else {
		r.data = e.Data
		r.rxID = e.RxID
		r.borrowed = true
	}
	ep.stats.Handlers++
	if h.mode == Worker {
		ep.toWorker(r)
		return
	}
	r.inHandler = true
	if h.lfn != nil { // (RegisterLoop) the loop is held: this goroutine runs the callback section
		if h.recovered != nil {
			// Armed for the batch's guard (handleEventsFrom): a panic
			// ends in h.recovered and the next events are handled.
			ep.guardR, ep.guarding = r, true
			h.lfn(Loop{ep}, r)
			ep.guarding = false
		} else {
			h.lfn(Loop{ep}, r)
		}
	} else {
		h.fn(r) // inside handleEvents' callback section
	}
	// afterHandler, written out (one call less per request).
	r.inHandler = false
	if r.done {
		ep.freeRequest(r)
		return
	}
	r.own() // answered later: keep the request bytes alive until then
	ep.track(r)
	_ = ep.core.Ack(r.h) // and acknowledge it now (Core.Ack)
}

// afterHandler ends the dispatch handler's part of r: freed if answered,
// kept and acknowledged otherwise (handleRequest's end, after a panic
// recovered; kept in step with it).
func (ep *Endpoint) afterHandler(r *Request) {
	r.inHandler = false
	if r.done {
		ep.freeRequest(r)
		return
	}
	r.own() // answered later: keep the request bytes alive until then
	ep.track(r)
	_ = ep.core.Ack(r.h) // and acknowledge it now (Core.Ack)
}

// toWorker hands r to the Nexus's workers. Its bytes are copied into the
// Nexus's concurrent pool first (eRPC copies background requests too): a
// worker may decode them, which takes references, while this goroutine
// goes on using its own single-goroutine pools, and they stay the
// worker's until it answers, even if the session goes away meanwhile.
func (ep *Endpoint) toWorker(r *Request) {
	var wb mem.Buf
	if len(r.data) > 0 {
		var err error
		if wb, err = ep.nx.workPool.Alloc(len(r.data)); err != nil {
			_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
			ep.freeRequest(r)
			return
		}
		copy(wb.Bytes(), r.data)
	}
	if !r.buf.IsZero() {
		_ = r.buf.Release()
		r.buf = mem.Buf{}
	}
	r.borrowed = false
	r.wbuf, r.data = wb, wb.Bytes()
	ep.track(r)
	select {
	case ep.nx.work <- r:
		ep.atWorkers++
		_ = ep.core.Ack(r.h) // the response waits for a worker: acknowledge the request now (Core.Ack)
	default:
		_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
		r.releaseWorkerBufs()
		ep.freeRequest(r)
	}
}

// track records an unanswered request in its session (which fails it if
// the session goes away first). Requests answered during their dispatch
// handler, the common case, are never recorded: one cold cache line less
// per request with many sessions.
func (ep *Endpoint) track(r *Request) {
	si := ep.session(r.h.Session)
	if si == nil {
		return
	}
	if si.reqs == nil {
		si.reqs = make([]*Request, ep.core.Config().Window)
	}
	si.reqs[r.h.Slot] = r
	r.tracked = true
}

// preResp returns the preallocated response buffer of the slot h names,
// replacing it if a previous response still uses it.
func (ep *Endpoint) preResp(h proto.ReqHandle) []byte {
	si := ep.session(h.Session)
	if si == nil {
		return nil
	}
	if si.pre == nil {
		si.pre = make([]mem.Buf, ep.core.Config().Window)
	}
	b := &si.pre[h.Slot]
	if !b.IsZero() && b.Refs() > 1 {
		_ = b.Release() // still referenced by an unfinished send: let it go
		*b = mem.Buf{}
	}
	if b.IsZero() {
		nb, err := ep.pool.Alloc(ep.cfg.PreRespSize)
		if err != nil {
			return nil
		}
		*b = nb
	}
	return b.Bytes()
}

// respond answers r with m on the endpoint goroutine; m is always consumed.
func (ep *Endpoint) respond(r *Request, m Msg, pre int) error {
	if r.dead {
		m.release()
		return ErrAlreadyResponded
	}
	var tx *txMsg
	if pre >= 0 {
		si := ep.session(r.h.Session)
		if si == nil || int(r.h.Slot) >= len(si.pre) {
			ep.finish(r)
			return ErrAlreadyResponded
		}
		b := &si.pre[r.h.Slot]
		if b.IsZero() || pre > b.Len() {
			ep.finish(r)
			return ErrAlreadyResponded
		}
		// Move the slot's buffer into the message (txMsg.home): the
		// core's copy of the response keeps it until it is buried.
		tx = ep.newTxMsgPre(si, int(r.h.Slot), *b, pre)
		*b = mem.Buf{}
	} else {
		var err error
		if tx, err = ep.newTxMsg(m); err != nil {
			m.release()
			_ = ep.core.RespondStatus(r.h, proto.StatusRejected)
			ep.finish(r)
			return err
		}
	}
	return ep.respondTx(r, tx)
}

// respondTx saves tx as r's response and sends it (tx is consumed), and
// ends r.
func (ep *Endpoint) respondTx(r *Request, tx *txMsg) error {
	err := ep.core.Respond(r.h, tx)
	if err != nil {
		tx.Release()
	}
	ep.finish(r)
	if err != nil {
		return mapCoreErr(err)
	}
	if !ep.inLoop {
		ep.process()
		_ = ep.flush()
	}
	return nil
}

// respondStatus answers r with a status instead of a response, and ends r.
func (ep *Endpoint) respondStatus(r *Request, st proto.Status) error {
	if r.dead {
		return ErrAlreadyResponded
	}
	err := ep.core.RespondStatus(r.h, st)
	ep.finish(r)
	if err != nil {
		return mapCoreErr(err)
	}
	if !ep.inLoop {
		ep.process()
		_ = ep.flush()
	}
	return nil
}

// respondPrepared sends the answer a worker prepared for r (Request.prepare),
// or rejects r when it could not be prepared.
func (ep *Endpoint) respondPrepared(r *Request) {
	if r.dead {
		r.releaseAnswer()
		return
	}
	if r.wstatus != proto.StatusOK {
		_ = ep.core.RespondStatus(r.h, r.wstatus)
		ep.finish(r)
		return
	}
	tx := ep.getTxMsg()
	tx.segs = append(tx.segs, r.wsegs...)
	if len(r.wsegs) == 1 {
		tx.flat = r.wsegs[0].Bytes()
	}
	tx.total = r.wtotal
	clear(r.wsegs) // the references are tx's now
	r.wsegs = nil
	_ = ep.respondTx(r, tx) // a failure has no one to report to: the worker returned
}

// sessionNoCC reports whether a client session to peer is exempt from
// congestion control: in automatic mode, when no network lies between (a
// peer on this host, or a datapath that cannot congest), where Timely would
// measure only the hosts' scheduling (a descheduled peer reads as a
// congested link, see docs/RPC.md).
func (ep *Endpoint) sessionNoCC(peer netip.AddrPort) bool {
	if !ep.ccAuto {
		return false
	}
	a := peer.Addr().Unmap()
	if ep.ccUncongested || a.IsLoopback() {
		return true
	}
	_, local := datapath.InterfaceOf(a) // an address of this host: packets to it never leave it
	return local
}
