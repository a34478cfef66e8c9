package service

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// A Server's responses: the one-walk writer of the common path
// (serverCall.WriteInline) and the general paths (respond).

// respObj prepends the OK response header to a response message.
type respObj struct{ obj wire.Object }

func (o *respObj) Sizes() wire.Sizes {
	sz := o.obj.Sizes()
	sz.Header += respFixed
	return sz
}

func (o *respObj) Serialize(dst []byte, sink wire.EntrySink) error {
	if len(dst) < respFixed {
		return ErrBadHeader
	}
	appendRespOK(dst[:0])
	return o.obj.Serialize(dst[respFixed:], sink)
}

// respond answers r with the OK header and out. A response without
// zero-copy fields whose serialization fits rpc.InlineMax is serialized
// into sc.buf and sent as bytes (the endpoint copies it into its record
// of the message: no serialization through an entry collector); any other
// is sent as an object (its zero-copy fields from where they live).
//
// A generated message (wireimpl.SGAWriter, hence a DirectResponse) of a method whose responses
// have all been such small ones is sized and serialized by one walk
// straight into sc.buf; the first response of the method that is not
// (too large, or with zero-copy entries) turns that off for the method
// (m.bigResp) and is sent the general way.
func (sc *serverCall) respond(r *rpc.Request, m *method, out wire.Object) error {
	if f, ok := out.(DirectResponse); ok && !m.bigResp.Load() {
		if sent, err := sc.respondSGA(r, m, f); sent || err != nil {
			return err
		}
	}
	return sc.respondObject(r, out)
}

// WriteInline implements rpc.InlineWriter for serveDirect and
// respondSGA: the OK header and sc.wout serialized in one walk
// (wireimpl.SGAWriter) into dst. It declines (-1) a response that does
// not fit or has zero-copy entries (m.bigResp is set now: sc.wm's
// responses take the general path from now on) or whose serialization
// failed (sc.werr).
func (sc *serverCall) WriteInline(dst []byte) int {
	if len(dst) <= respFixed {
		return -1
	}
	binary.LittleEndian.PutUint64(dst, respOKWord) // appendRespOK, in one store
	if f := sc.wm.wflat; f != nil {                // a flat response without zero-copy values, written in place
		if n := f(sc.wout, dst[respFixed:]); n > 0 {
			return respFixed + n
		}
	}
	body := dst[respFixed:respFixed:len(dst)]
	sga := &sc.sga
	sga.Head = body
	err := sc.wout.WireSerializeSGA(sga)
	head := sga.Head
	sga.Head = nil // (dst is the caller's)
	// Written in place: the serialization kept body's array (it did not
	// grow it), so head lies within dst.
	if err == nil && len(sga.Entries) == 0 && len(head) <= cap(body) && (len(head) == 0 || unsafe.SliceData(head) == unsafe.SliceData(body)) {
		return respFixed + len(head)
	}
	sc.werr = sc.sgaMissed(sc.wm, err)
	return -1
}

// respondSGA is respond's fused path: the response sized and serialized
// by one walk into sc.buf after the OK header (WriteInline) and sent as
// bytes (sent); not sent and no error: it did not fit (m.bigResp is set
// now).
func (sc *serverCall) respondSGA(r *rpc.Request, m *method, f DirectResponse) (sent bool, err error) {
	if cap(sc.buf) < rpc.InlineMax {
		sc.buf = make([]byte, 0, rpc.InlineMax)
	}
	sc.wout, sc.wm = f, m
	n := sc.WriteInline(sc.buf[:rpc.InlineMax])
	sc.wout, sc.wm = nil, nil
	if n < 0 {
		err, sc.werr = sc.werr, nil
		return false, err
	}
	sc.buf = sc.buf[:n]
	return true, r.RespondBytes(sc.buf)
}

// sgaMissed ends a fused serialization that did not fit in sc.buf (err
// nil: too large, or zero-copy entries; the method's responses take the
// general path from now on) or failed (err).
func (sc *serverCall) sgaMissed(m *method, err error) error {
	sga := &sc.sga
	clear(sga.Entries) // borrowed from the response
	sga.Entries = sga.Entries[:0]
	if err == nil {
		m.bigResp.Store(true)
	}
	return err
}

// respondObject is respond's general path: a response without zero-copy
// fields that fits rpc.InlineMax serialized into sc.buf, any other sent as
// an object.
func (sc *serverCall) respondObject(r *rpc.Request, out wire.Object) error {
	sz := out.Sizes()
	if n := respFixed + sz.Head(); sz.Entries == 0 && n <= rpc.InlineMax {
		if cap(sc.buf) < n {
			sc.buf = make([]byte, n, rpc.InlineMax)
		}
		b := appendRespOK(sc.buf[:0])[:n]
		sc.buf = b
		// The runtime's SGA: the generated Serialize's direct path.
		err := out.Serialize(b[respFixed:], &sc.sga)
		if err == nil && len(sc.sga.Entries) != 0 {
			err = errZeroCopyInline
		}
		clear(sc.sga.Entries)
		sc.sga.Entries = sc.sga.Entries[:0]
		if err != nil {
			return err
		}
		return r.RespondBytes(b)
	}
	sc.ro.obj = out
	err := r.Respond(rpc.ObjectMsg(&sc.ro))
	sc.ro.obj = nil
	return err
}

// errZeroCopyInline: a response sized without zero-copy entries produced
// one (the message changed between Sizes and Serialize).
var errZeroCopyInline = errors.New("service: a zero-copy entry in a response sized without any")
