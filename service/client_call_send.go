package service

import (
	"unsafe"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// AsyncCall's request writing: the in-place writer (rpc.InlineWriter) and
// the sends of a request it declined.

// sendDeclined sends a request whose in-place serialization was declined
// (WriteInline): not the method's request type (the general send), or a
// body that did not fit or failed to serialize (in cl.buf after the
// header; the first turns the in-place path off for the call).
func (k *AsyncCall[R]) sendDeclined(req wire.Object, sess rpc.Session) error {
	cl := &k.cl
	if !cl.wok {
		return k.sendGeneral(req, sess, false) // not the method's request type
	}
	eerr := cl.weerr
	cl.weerr = nil
	if eerr == nil {
		k.bigReq, k.fast = true, false
	}
	return k.enqueue(sess, cl.endSGA(reqFixed, eerr))
}

// sendGeneral serializes req into cl.buf after the request header (enc:
// with the method's EncodeRequest, one walk) or through setBody, and
// enqueues it.
func (k *AsyncCall[R]) sendGeneral(req wire.Object, sess rpc.Session, enc bool) error {
	cl := &k.cl
	if enc {
		sga := &cl.sga
		sga.Head = cl.buf[reqFixed:reqFixed]
		ok, eerr := cl.wenc(req, sga)
		if ok {
			head := sga.Head
			if n := reqFixed + len(head); eerr == nil && len(sga.Entries) == 0 && len(head) != 0 && n <= cap(cl.buf) && &cl.buf[reqFixed:n][0] == &head[0] {
				cl.msg = rpc.BytesMsg(cl.buf[:n]) // (cl.buf keeps its length: every Start reslices it)
				return k.enqueue(sess, nil)
			}
			cl.buf = cl.buf[:reqFixed]
			return k.enqueue(sess, cl.endSGA(reqFixed, eerr))
		}
	}
	cl.buf = cl.buf[:reqFixed]
	var err error
	if f, ok := req.(wireimpl.SGAWriter); ok {
		err = cl.setBodySGA(f)
	} else {
		err = cl.setBody(req, nil)
	}
	return k.enqueue(sess, err)
}

// enqueue sends cl.msg (err: preparing it failed, the call ends here).
func (k *AsyncCall[R]) enqueue(sess rpc.Session, err error) error {
	cl := &k.cl
	c := cl.c
	if err != nil {
		cl.pre.release()
		k.busy.Store(false)
		return err
	}
	c.loopPending++
	// clientCall.send without its checks for posted and abandoned calls
	// (this call is never posted, nor waited for). cl.msg is overwritten
	// by the next setBody.
	err = c.ep.Enqueue(sess, cl.reqType, cl.msg, cl.contFn)
	cl.pre.release() // serialized by Enqueue, which took its own references
	if err != nil {
		k.finish(cl, nil, err)
	}
	return nil
}

// WriteInline implements rpc.InlineWriter for AsyncCall.Start: the request
// header cl.buf keeps and cl.wreq serialized in one walk (cl.wenc) into
// dst. It declines (-1), with cl.wok and cl.weerr saying why, a request
// that is not the method's type (wok false), whose serialization failed,
// or that does not fit dst: then cl.buf holds the header and the body's
// head and cl.sga its zero-copy entries, as endSGA wants them. cl.wok and
// cl.weerr are set on a decline only.
func (cl *clientCall) WriteInline(dst []byte) int {
	// RequestBytes1's request type with a value of 16 to 32 bytes, copied
	// (WriteFlatBytes1's common case) without a call: the header, the
	// message's header, then the value in two 16-byte moves. Everything
	// else is writeInline's.
	const h = reqFixed + wireimpl.FlatBytes1Size
	if w := (*iface)(unsafe.Pointer(&cl.wreq)); w.tab == cl.w1tab && w.data != nil && len(dst) >= h+32 && len(cl.buf) >= reqFixed {
		if v, ok := wireimpl.FlatBytes1((*wireimpl.Core)(unsafe.Add(w.data, cl.w1c)), (*wireimpl.Bytes)(unsafe.Add(w.data, cl.w1f))); ok && len(v) >= 16 && len(v) <= 32 {
			n := len(v)
			*(*[reqFixed]byte)(dst) = *(*[reqFixed]byte)(cl.buf) // the header, two stores
			wireimpl.PutFlatBytes1Head((*[wireimpl.FlatBytes1Size]byte)(dst[reqFixed:]), cl.w1bit, n)
			*(*[16]byte)(dst[h:]) = *(*[16]byte)(v)
			*(*[16]byte)(dst[h+n-16:]) = *(*[16]byte)(v[n-16:])
			return h + n
		}
	}
	return cl.writeInline(dst)
}

// writeInline is WriteInline outside its common case.
func (cl *clientCall) writeInline(dst []byte) int {
	if len(dst) <= reqFixed {
		cl.wok, cl.weerr = false, nil
		return -1
	}
	*(*[reqFixed]byte)(dst) = *(*[reqFixed]byte)(cl.buf) // the header, two stores
	if tab := cl.w1tab; tab != nil {                     // RequestBytes1's request type: wflat's work without its call
		if w := (*iface)(unsafe.Pointer(&cl.wreq)); w.tab == tab && w.data != nil {
			if n := wireimpl.WriteFlatBytes1(dst[reqFixed:], (*wireimpl.Core)(unsafe.Add(w.data, cl.w1c)), (*wireimpl.Bytes)(unsafe.Add(w.data, cl.w1f)), cl.w1bit); n > 0 {
				return reqFixed + n
			}
		}
	}
	if cl.wflat != nil { // a flat request without zero-copy values, written in place
		if n := cl.wflat(cl.wreq, dst[reqFixed:]); n > 0 {
			return reqFixed + n
		}
	}
	body := dst[reqFixed:reqFixed:len(dst)]
	sga := &cl.sga
	sga.Head = body
	ok, eerr := cl.wenc(cl.wreq, sga)
	head := sga.Head
	sga.Head = nil // (dst is the endpoint's once sent)
	if !ok {
		cl.wok, cl.weerr = false, eerr
		return -1
	}
	// Written in place: the serialization kept body's array (it did not
	// grow it), so head lies within dst.
	if eerr == nil && len(sga.Entries) == 0 && len(head) != 0 && len(head) <= cap(body) && unsafe.SliceData(head) == unsafe.SliceData(body) {
		return reqFixed + len(head)
	}
	cl.wok, cl.weerr = true, eerr
	cl.buf = append(cl.buf[:reqFixed], head...)
	sga.Head = cl.buf[reqFixed:]
	return -1
}
