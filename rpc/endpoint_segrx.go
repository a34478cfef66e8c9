package rpc

import (
	"unsafe"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// Receiving in place (datapath.SegmentReceiver, datapath/shm).
//
// A segmented packet is a head copied into the receiver's memory (the RPC
// header and whatever the sender copied: an object's header and copied
// fields) followed by read-only views of the sender's memory (its
// zero-copy entries). A single-packet response is handed to its
// continuation as it is: Response.Segments are the head's payload and the
// views, and the packet's Hold (in ep.rx, released with the batch) keeps
// the sender's memory from being reused until every clone of it (a
// decoder's arena) is released. Every other packet, and any packet a
// datapath hands over in a shape this code does not expect, is gathered
// into one buffer of the endpoint's pool and its Hold released at once:
// the protocol core parses requests, control packets and the parts of
// large messages from contiguous bytes only.

// rxInPlace is a packet of the receive batch delivered in place: its parts
// (the datapath's Segs: parts[0] is the head, RPC header included) and the
// payload bytes after the head.
type rxInPlace struct {
	parts [][]byte
	tail  int
}

// recvSegmented receives a batch with RecvSegments into ep.rx (each
// packet's Buf is its Hold or a gathered copy; a zero Buf is a packet
// dropped for want of memory, counted in Stats.RecvErrors) and ep.rxIn.
func (ep *Endpoint) recvSegmented() (int, error) {
	n, err := ep.segRx.RecvSegments(ep.rxSeg)
	for i := 0; i < n; i++ {
		p := &ep.rxSeg[i]
		ep.rxIn[i] = rxInPlace{}
		if len(p.Segs) == 1 && sameBytes(p.Hold, p.Segs[0]) {
			// Copied whole (no zero-copy entry): the head is the packet.
			ep.rx[i] = datapath.Packet{Buf: p.Hold, From: p.From}
			continue
		}
		if tail, ok := ep.inPlace(p); ok {
			ep.rx[i] = datapath.Packet{Buf: p.Hold, From: p.From}
			ep.rxIn[i] = rxInPlace{parts: p.Segs, tail: tail}
			continue
		}
		ep.stats.RxGathered++
		ep.rx[i] = datapath.Packet{Buf: ep.gatherPacket(p), From: p.From}
		if !p.Hold.IsZero() {
			_ = p.Hold.Release()
		}
		*p = datapath.Segmented{}
	}
	return n, err
}

// inPlace reports whether p is a response that fits in one packet (so the
// core can complete it in place) and returns its payload bytes beyond the
// head. The core checks the header again against the session's state.
func (ep *Endpoint) inPlace(p *datapath.Segmented) (int, bool) {
	if len(p.Segs) < 2 || p.Hold.IsZero() || !headOf(p.Hold, p.Segs[0]) {
		return 0, false
	}
	var h proto.Header
	if h.Decode(p.Segs[0]) != nil || h.Type != proto.PktResp || int(h.MsgSize) > ep.dpp {
		return 0, false
	}
	tail := 0
	for _, s := range p.Segs[1:] {
		tail += len(s)
	}
	if len(p.Segs[0])-proto.HeaderSize+tail != int(h.MsgSize) {
		return 0, false
	}
	return tail, true
}

// gatherPacket copies p's payload into one buffer of the endpoint's pool,
// or returns the zero Buf (counted) when the pool has no memory: the
// packet is lost and the protocol recovers it.
func (ep *Endpoint) gatherPacket(p *datapath.Segmented) mem.Buf {
	n := p.Len()
	b, err := ep.pool.Alloc(max(n, 1))
	if err != nil {
		ep.stats.RecvErrors++
		ep.stats.LastDatapathErr = err
		return mem.Buf{}
	}
	b = b.Slice(0, n)
	dst := b.Bytes()
	w := 0
	for _, s := range p.Segs {
		w += copy(dst[w:], s)
	}
	return b
}

// sameBytes reports whether b's window is exactly s.
func sameBytes(b mem.Buf, s []byte) bool {
	w := b.Bytes()
	if len(w) != len(s) {
		return false
	}
	return len(s) == 0 || unsafe.SliceData(w) == unsafe.SliceData(s)
}

// headOf reports whether s starts b's window (the head the datapath copied
// into the memory Hold references, never the sender's).
func headOf(b mem.Buf, s []byte) bool {
	w := b.Bytes()
	return len(s) <= len(w) && (len(s) == 0 || unsafe.SliceData(w) == unsafe.SliceData(s))
}

// setSegments makes r, a borrowed response of the receive batch, a
// response received in place when its packet was one: Segments are the
// payload's parts and Data gathers them on demand.
func (ep *Endpoint) setSegments(r *Response, rxID int) {
	if ep.segRx == nil || rxID < 0 || rxID >= len(ep.rxIn) || ep.rxIn[rxID].parts == nil {
		return
	}
	parts := ep.rxIn[rxID].parts
	segs := append(ep.respSegs[:0], parts[0][proto.HeaderSize:])
	segs = append(segs, parts[1:]...)
	ep.respSegs = segs
	ep.stats.RxInPlace++
	r.segs, r.hold, r.total = segs, ep.rx[rxID].Buf, len(segs[0])+ep.rxIn[rxID].tail
}

// gatherResp copies a response received in place into the endpoint's
// scratch buffer (its length is bounded by the session's MaxMsgSize, as
// the core checked) and makes that r's Data.
func (r *Response) gatherResp() {
	ep := r.ep
	ep.stats.RxInPlaceGathered++
	if cap(ep.gather) < r.total {
		ep.gather = make([]byte, r.total)
	}
	b := ep.gather[:r.total]
	w := 0
	for _, s := range r.segs {
		w += copy(b[w:], s)
	}
	r.data, r.gathered = b, true
}
