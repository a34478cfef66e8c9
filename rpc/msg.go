package rpc

import (
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Msg is a request or response body: a registered-memory buffer, a
// Cornflakes object (serialize-and-send), or bytes to copy. Build one with
// BufMsg, ObjectMsg or BytesMsg; it is a small value (no allocation).
type Msg struct {
	buf   mem.Buf
	obj   wire.Object
	bytes []byte
	kind  uint8
}

const (
	msgBuf uint8 = iota + 1
	msgObj
	msgBytes
)

// BufMsg sends b's window zero-copy. Ownership of the reference passes to
// the endpoint when Enqueue/Respond succeeds; it is released once the
// message is no longer needed (the request completed, or the response was
// buried by the next request on its slot) and every send of it completed.
func BufMsg(b mem.Buf) Msg { return Msg{buf: b, kind: msgBuf} }

// ObjectMsg serializes o when it is enqueued: its header and copied fields
// go into one buffer and each zero-copy entry is referenced (Clone) and sent
// from where it lives, split across packets by offset. The caller may
// release or reuse o (its arena) after Enqueue/Respond returns.
func ObjectMsg(o wire.Object) Msg { return Msg{obj: o, kind: msgObj} }

// BytesMsg copies p when it is enqueued; p is not retained. Up to
// InlineMax bytes go into the endpoint's own record of the message (no
// buffer from the pool, no reference count: the cheapest way to send a
// small body); larger bodies into registered memory.
func BytesMsg(p []byte) Msg { return Msg{bytes: p, kind: msgBytes} }

// InlineMax is the largest body the endpoint keeps inside its record of a
// message instead of a registered-memory buffer: a BytesMsg, or an
// ObjectMsg without zero-copy fields, of at most this many bytes is
// copied (serialized) there when it is enqueued. It is below SmallCopyMax,
// so such a message always goes out copied into its packet.
const InlineMax = 128

// SlotInline is the largest response a server slot saves as a copy of its
// own for retransmissions (at-most-once): the response's message is
// released once its first packet is handed to the datapath, and burying
// the response on the slot's next request touches no other object.
const SlotInline = proto.SlotInline

// Len is the message size in bytes.
func (m Msg) Len() int {
	switch m.kind {
	case msgBuf:
		return m.buf.Len()
	case msgObj:
		return m.obj.Sizes().Total()
	case msgBytes:
		return len(m.bytes)
	}
	return 0
}

// release gives up a Msg that was not accepted (only Buf messages own memory).
func (m Msg) release() {
	if m.kind == msgBuf && !m.buf.IsZero() {
		_ = m.buf.Release()
	}
}

// txMsg is a message being sent: its bytes in wire order are the
// concatenation of segs (each an owned reference). It implements
// proto.Msg; the core releases it when no slot and no queued packet needs it.
type txMsg struct {
	ep    *Endpoint
	segs  []mem.Buf // starts on one1: a one-buffer message touches no second object
	one1  [1]mem.Buf
	total int
	// cursor for sequential packet extraction
	curIdx, curOff int
	// A preallocated-response message (RespondPre) holds its slot's
	// buffer by ownership, not by a second reference: respond moves
	// home.pre[homeSlot] (the full buffer, homeBuf) into the message,
	// segs[0] is a window of that same reference, and Release moves it
	// back (or releases it when the session is gone or the slot got a new
	// buffer meanwhile). No refcount change per response; preResp still
	// replaces a buffer a datapath send holds (Refs() > 1).
	home     *sessInfo
	homeSlot int
	homeBuf  mem.Buf
	// flat is the bytes of a one-buffer message (a window of segs[0],
	// valid while the message holds it) or of an inline one, nil
	// otherwise: copyRange's common case without copying the segment's
	// reference to compute its window per packet.
	flat []byte
	// dpHolds counts the datapath's sends of m's segments not yet
	// completed (datapath.HeldSender: the datapath reads m's references
	// instead of cloning them); released records that the core let go of
	// m meanwhile, so the last hold frees it.
	dpHolds  int
	released bool
	// inline holds a body of at most InlineMax bytes (flat is a window
	// of it and segs is empty): last, so that a small body touches only
	// the cache lines it needs.
	inline [InlineMax]byte
}

// txHold is a txMsg as the datapath.Holder of one held send.
type txHold txMsg

// Release implements datapath.Holder: the datapath is done with one send
// of m's segments.
func (h *txHold) Release() {
	m := (*txMsg)(h)
	if m.dpHolds--; m.dpHolds == 0 && m.released {
		m.released = false
		m.free()
	}
}

func (m *txMsg) Len() int { return m.total }

// Flat returns m's bytes when they are one slice, or nil (proto.Msg: the
// core keeps a small response in its slot).
func (m *txMsg) Flat() []byte { return m.flat }

// Release implements proto.Msg: the core is done with m. While a datapath
// send still reads m's segments (dpHolds), m is freed by its last hold.
func (m *txMsg) Release() {
	if m.dpHolds > 0 {
		m.released = true
		return
	}
	m.free()
}

// free releases m's references and puts m on the free list.
func (m *txMsg) free() {
	m.flat = nil
	if m.home != nil {
		// segs[0] is a window of homeBuf's reference: give that back.
		if si := m.home; si.pre != nil && si.pre[m.homeSlot].IsZero() {
			si.pre[m.homeSlot] = m.homeBuf
		} else {
			_ = m.homeBuf.Release()
		}
		m.home, m.homeBuf = nil, mem.Buf{}
		m.segs[0] = mem.Buf{}
		m.segs = m.segs[:0]
		m.total, m.curIdx, m.curOff = 0, 0, 0
		m.ep.msgFree = append(m.ep.msgFree, m)
		return
	}
	for i := range m.segs {
		_ = m.segs[i].Release()
		m.segs[i] = mem.Buf{}
	}
	m.segs = m.segs[:0]
	m.total, m.curIdx, m.curOff = 0, 0, 0
	m.ep.msgFree = append(m.ep.msgFree, m)
}

// window appends to dst the segments covering bytes [off, off+n) of m, as
// windows on m's references (no reference taken: the datapath clones).
func (m *txMsg) window(dst []mem.Buf, off, n int) []mem.Buf {
	if n == 0 {
		return dst
	}
	// Sequential access (the common case) continues from the cursor.
	i, base := m.curIdx, m.curOff
	if off < base {
		i, base = 0, 0
	}
	for i < len(m.segs) && base+m.segs[i].Len() <= off {
		base += m.segs[i].Len()
		i++
	}
	m.curIdx, m.curOff = i, base
	for n > 0 && i < len(m.segs) {
		s := m.segs[i]
		lo := off - base
		k := s.Len() - lo
		if k > n {
			k = n
		}
		dst = append(dst, s.Slice(lo, k))
		off += k
		n -= k
		base += s.Len()
		i++
	}
	return dst
}

// copyRange copies bytes [off, off+len(dst)) of m into dst and returns the
// count copied (short only if m is shorter), for packets sent by copy.
func (m *txMsg) copyRange(dst []byte, off int) int {
	if m.flat != nil {
		if off >= len(m.flat) {
			return 0
		}
		return copy(dst, m.flat[off:])
	}
	if len(m.segs) == 1 {
		// One buffer (BufMsg, BytesMsg, preallocated responses): the
		// common case of small packets.
		b := m.segs[0].Bytes()
		if off >= len(b) {
			return 0
		}
		return copy(dst, b[off:])
	}
	n := 0
	base := 0
	for i := 0; i < len(m.segs) && n < len(dst); i++ {
		l := m.segs[i].Len()
		if base+l > off {
			n += copy(dst[n:], m.segs[i].Bytes()[off-base:])
			off = base + l
		}
		base += l
	}
	return n
}

// getTxMsg takes an empty txMsg from the free list.
func (ep *Endpoint) getTxMsg() *txMsg {
	if k := len(ep.msgFree); k > 0 {
		t := ep.msgFree[k-1]
		ep.msgFree = ep.msgFree[:k-1]
		return t
	}
	t := &txMsg{ep: ep}
	t.segs = t.one1[:0]
	return t
}

// newTxMsgPre makes the message of a RespondPre: the first n bytes of
// buf, the preallocated response buffer of si's slot, which the caller
// moves out of si.pre (Release moves it back).
func (ep *Endpoint) newTxMsgPre(si *sessInfo, slot int, buf mem.Buf, n int) *txMsg {
	t := ep.getTxMsg()
	t.home, t.homeSlot, t.homeBuf = si, slot, buf
	// The whole buffer as the segment: every reader stays inside total
	// (the core names ranges within Len), and no narrowed copy of the
	// reference is made.
	t.segs = append(t.segs, buf)
	t.flat = buf.Bytes()[:n]
	t.total = n
	return t
}

// newTxMsg turns m into a txMsg owning its memory. On error m is not consumed.
func (ep *Endpoint) newTxMsg(m Msg) (*txMsg, error) {
	if m.kind == msgBuf && !m.buf.IsZero() && m.buf.Len() <= ep.maxMsg {
		// The common case first.
		t := ep.getTxMsg()
		t.segs = append(t.segs, m.buf)
		t.flat = m.buf.Bytes()
		t.total = m.buf.Len()
		return t, nil
	}
	if m.kind == msgBytes && len(m.bytes) <= InlineMax && len(m.bytes) <= ep.maxMsg {
		// A small body: copied into the record itself.
		t := ep.getTxMsg()
		t.flat = t.inline[:copy(t.inline[:], m.bytes)]
		t.total = len(t.flat)
		return t, nil
	}
	if m.kind == msgObj && m.obj != nil {
		sz := m.obj.Sizes() // once: Sizes walks the whole object
		if sz.Total() > ep.maxMsg {
			return nil, ErrTooLarge
		}
		t := ep.getTxMsg()
		if sz.Entries == 0 && sz.Total() == sz.Head() && sz.Head() <= InlineMax {
			// Small and copied whole: serialized into the record. Collect
			// enforces the declared sizes, so no entry can appear.
			dst := t.inline[:sz.Head()]
			if err := ep.coll.Collect(m.obj, sz, dst); err != nil {
				ep.msgFree = append(ep.msgFree, t)
				return nil, err
			}
			ep.coll.Reset() // collected nothing
			t.flat, t.total = dst, sz.Head()
			return t, nil
		}
		segs, err := objSegs(m.obj, sz, ep.pool, &ep.coll, t.segs)
		if err != nil {
			ep.msgFree = append(ep.msgFree, t)
			return nil, err
		}
		t.segs, t.total = segs, sz.Total()
		return t, nil
	}
	t := ep.getTxMsg()
	segs, total, err := msgSegs(m, ep.pool, &ep.coll, ep.maxMsg, t.segs)
	if err != nil {
		ep.msgFree = append(ep.msgFree, t)
		return nil, err
	}
	t.segs, t.total = segs, total
	return t, nil
}

// msgSegs appends to segs the references of m's bytes in wire order and
// returns them with m's length: a buffer as it is, bytes copied into a
// buffer of pool, an object's head and copied fields serialized into one
// buffer of pool and its zero-copy entries referenced (through coll, left
// empty). The endpoint's loop calls it with its own pool, a worker with
// the Nexus's concurrent one. m is consumed on success only.
func msgSegs(m Msg, pool *mem.Pool, coll *driver.EntryCollector, maxMsg int, segs []mem.Buf) ([]mem.Buf, int, error) {
	switch m.kind {
	case msgBuf:
		if m.buf.IsZero() {
			return segs, 0, ErrBadMessage
		}
		if m.buf.Len() > maxMsg {
			return segs, 0, ErrTooLarge
		}
		return append(segs, m.buf), m.buf.Len(), nil
	case msgBytes:
		if len(m.bytes) > maxMsg {
			return segs, 0, ErrTooLarge
		}
		if len(m.bytes) > 0 {
			b, err := pool.AllocCopy(m.bytes)
			if err != nil {
				return segs, 0, err
			}
			segs = append(segs, b)
		}
		return segs, len(m.bytes), nil
	case msgObj:
		if m.obj == nil {
			return segs, 0, ErrBadMessage
		}
		sz := m.obj.Sizes()
		if sz.Total() > maxMsg {
			return segs, 0, ErrTooLarge
		}
		segs, err := objSegs(m.obj, sz, pool, coll, segs)
		return segs, sz.Total(), err
	}
	return segs, 0, ErrBadMessage
}

// objSegs appends o's head and copied fields, serialized into one buffer
// of pool, and o's zero-copy entries (referenced through coll, left empty)
// to segs; sz is o.Sizes().
func objSegs(o wire.Object, sz wire.Sizes, pool *mem.Pool, coll *driver.EntryCollector, segs []mem.Buf) ([]mem.Buf, error) {
	var head mem.Buf
	var dst []byte
	if sz.Head() > 0 {
		b, err := pool.Alloc(sz.Head())
		if err != nil {
			return segs, err
		}
		head, dst = b, b.Bytes()
	}
	if err := coll.Collect(o, sz, dst); err != nil {
		if !head.IsZero() {
			_ = head.Release()
		}
		return segs, err
	}
	if !head.IsZero() {
		segs = append(segs, head)
	}
	segs = append(segs, coll.Bufs...)
	coll.Reset() // the references now belong to segs
	return segs, nil
}

// rxBuf is a reassembly buffer for a multi-packet message (proto.RxBuf).
type rxBuf struct {
	ep  *Endpoint
	buf mem.Buf
}

func (r *rxBuf) Bytes() []byte { return r.buf.Bytes() }

func (r *rxBuf) Release() {
	_ = r.buf.Release()
	r.buf = mem.Buf{}
	r.ep.rxFree = append(r.ep.rxFree, r)
}

// take hands the reference to the caller and recycles the wrapper.
func (r *rxBuf) take() mem.Buf {
	b := r.buf
	r.buf = mem.Buf{}
	r.ep.rxFree = append(r.ep.rxFree, r)
	return b
}
