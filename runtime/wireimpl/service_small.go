package wireimpl

import (
	"encoding/binary"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Straight-line helpers for the service stubs' kept messages whose only
// field is a bytes field of implicit presence numbered 1..32 (an echo, a
// value, a blob: the small RPC's message). The service stubs
// (internal/gen, emit_service.go) call them instead of the per-field body
// of their in-place writer and fused reuse-and-decode helper; each does
// exactly what that body does for the common case and declines every
// other case, which the caller then hands to the general body.

// WriteFlatBytes1 is WireWriteFlat for a message whose only field is the
// bytes field f of implicit presence, bit bit of bitmap word 0 (field
// number 1..32), c the message's Core: it writes the message at the start
// of dst and returns its length, or -1, having written nothing the caller
// may use, in exactly the cases where the message's WireWriteFlat returns
// -1 (not on the direct path, a zero-copy value, not fitting in dst). The
// bytes written are WireWriteFlat's. A value of 16 to 32 bytes (the small
// RPC's) is written here with two 16-byte moves and no further call;
// every other case is writeFlatBytes1's. f's value must not overlap dst
// (dst is a send record the caller owns).
func WriteFlatBytes1(dst []byte, c *Core, f *Bytes, bit uint32) int {
	const hdr = 8 + EntrySize
	if a := c.a; a != nil && c.epoch == uint32(a.epoch) && c.uk == nil && !a.lentModified() {
		p := f.data
		if n := len(p); n >= 16 && n <= 32 && f.buf.IsZero() && len(dst) >= hdr+32 {
			binary.LittleEndian.PutUint64(dst, 1|uint64(bit)<<32)
			binary.LittleEndian.PutUint64(dst[8:], uint64(n)|hdr<<32) // the entry: length, offset
			*(*[16]byte)(dst[hdr:]) = *(*[16]byte)(p)
			*(*[16]byte)(dst[hdr+n-16:]) = *(*[16]byte)(p[n-16:])
			return hdr + n
		}
	}
	return writeFlatBytes1(dst, c, f, bit)
}

// writeFlatBytes1 is WriteFlatBytes1 outside its inlined case.
func writeFlatBytes1(dst []byte, c *Core, f *Bytes, bit uint32) int {
	a := c.a
	if a == nil || c.epoch != uint32(a.epoch) || c.uk != nil || a.lentModified() {
		return -1
	}
	p := f.data
	n := len(p)
	if n == 0 { // absent: the header of a message without present fields
		if len(dst) < 4 {
			return -1
		}
		binary.LittleEndian.PutUint32(dst[:4], 0)
		return 4
	}
	const hdr = 8 + EntrySize
	if !f.buf.IsZero() || n > len(dst)-hdr || n > MaxMessageSize-hdr {
		return -1
	}
	binary.LittleEndian.PutUint64(dst[:8], 1|uint64(bit)<<32)
	binary.LittleEndian.PutUint32(dst[8:12], uint32(n)) // the entry: length, then offset
	binary.LittleEndian.PutUint32(dst[12:hdr], hdr)
	copySmall(dst[hdr:hdr+n], p)
	return hdr + n
}

// copySmall copies p into d (len(d) == len(p), not overlapping): 8 to 32
// bytes with two (possibly overlapping) loads and stores of 8 or 16 bytes,
// anything else with copy.
func copySmall(d, p []byte) {
	switch n := len(p); {
	case n >= 16 && n <= 32 && len(d) == n:
		*(*[16]byte)(d) = *(*[16]byte)(p)
		*(*[16]byte)(d[n-16:]) = *(*[16]byte)(p[n-16:])
	case n >= 8 && n < 16 && len(d) == n:
		binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(p))
		binary.LittleEndian.PutUint64(d[n-8:], binary.LittleEndian.Uint64(p[n-8:]))
	default:
		copy(d, p)
	}
}

// DecodeKeptBytes1 is the common case of the fused reuse-and-decode helper
// of a message that consists of exactly c, its Core, and f, its only
// field (a bytes field of implicit presence, bit bit of bitmap word 0):
// it makes the message empty and binds it to a, writing c and f whole
// (Core.InitNew; the caller need not zero the message first), and, when
// the decode takes BeginDecode's common case (DecodeReady, TryHoldInput:
// the same checks, the same reference taken, the same record, Input0),
// returns the input's record src. ok reports that it also decoded the
// message: a one-word header whose bitmap is exactly bit, with one entry
// whose value is non-empty and lies in the input, read copied or
// zero-copy as Source.BytesRange and SetBytes read it. Otherwise (ok
// false) f is empty and the caller decodes from src with its general
// body, or, when src is nil (nothing was recorded nor held), through
// BeginDecode first. a must not be nil.
func DecodeKeptBytes1(c *Core, f *Bytes, bit uint32, a *Arena, b mem.Buf) (src *Source, ok bool) {
	c.InitNew(a)
	if !a.DecodeReady(b) || !a.TryHoldInput(b) {
		*f = Bytes{}
		return nil, false
	}
	src = a.Input0(b)
	d := src.data
	if len(d) < 8+EntrySize || binary.LittleEndian.Uint64(d[:8]) != 1|uint64(bit)<<32 {
		*f = Bytes{}
		return src, false
	}
	e := binary.LittleEndian.Uint64(d[8 : 8+EntrySize])
	o, k := int(e>>32), int(uint32(e))
	zc := k >= src.zcFrom
	// Offsets and sizes are below 2^32: the sum does not overflow.
	if o+k > len(d) || k == 0 || k >= src.cpBelow && !zc {
		*f = Bytes{}
		return src, false
	}
	v := d[o : o+k : o+k]
	if zc {
		*f = Bytes{data: v, buf: src.buf.SliceTrusted(o, k)}
	} else {
		*f = Bytes{data: v}
	}
	return src, true
}
