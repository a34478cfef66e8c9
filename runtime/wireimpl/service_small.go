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
			PutFlatBytes1Head((*[hdr]byte)(dst), bit, n)
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

// FlatBytes1Size is the length of the message header and entry that
// PutFlatBytes1Head writes: a message of the shape WriteFlatBytes1 serves
// with a value of n bytes is FlatBytes1Size+n bytes long.
const FlatBytes1Size = 8 + EntrySize

// FlatBytes1 returns the value of f, the only field of the message whose
// Core is c (WriteFlatBytes1's shape), and true when WriteFlatBytes1 would
// write that message with the value copied: the message is on the direct
// path (bound to its arena's current batch, no kept unknown fields) and
// the value is not zero-copy. Otherwise it returns false, and the caller
// calls WriteFlatBytes1 (which decides). It is small enough to be inlined:
// with PutFlatBytes1Head a caller writes the common message without a
// call.
func FlatBytes1(c *Core, f *Bytes) ([]byte, bool) {
	if a := c.a; a != nil && c.epoch == uint32(a.epoch) && c.uk == nil && !a.lentModified() && f.buf.IsZero() {
		return f.data, true
	}
	return nil, false
}

// PutFlatBytes1Head writes the FlatBytes1Size bytes that precede the value
// in WriteFlatBytes1's message with a non-empty value of n bytes (n below
// MaxMessageSize-FlatBytes1Size) in field bit bit: the one-word header and
// the value's entry. The value follows at dst's end.
func PutFlatBytes1Head(dst *[FlatBytes1Size]byte, bit uint32, n int) {
	binary.LittleEndian.PutUint64(dst[:8], 1|uint64(bit)<<32)
	// The entry: length, then offset (two stores: one of a value the
	// compiler knows in part is written byte by byte).
	binary.LittleEndian.PutUint32(dst[8:12], uint32(n))
	binary.LittleEndian.PutUint32(dst[12:], FlatBytes1Size)
}

// DecodeBorrowedBytes1 is DecodeKeptBytes1's decode for input bytes d
// that the caller lends for the batch, as under Arena.BorrowInput (no
// reference is taken, none is needed: d must stay valid until a's Reset),
// in its common case. d holds an 8-byte framing word equal to pre (the
// service's response status), then the message: a one-word header whose
// bitmap is exactly bit, with one entry whose value is non-empty, lies in
// the message and is shorter than a.Threshold (Decode reads it copied,
// aliasing d). It then makes the message empty and binds it to a
// (Core.InitNew), sets f to the value as Decode under BorrowInput sets it
// and returns true. Unlike Decode it records nothing in the arena (no
// input record: a later decode in the batch of bytes within d takes its
// own reference instead of sharing d's). Otherwise (another framing word
// or input, a zero-copy value, which needs d's buffer, the checked build,
// which records every borrowed input) it changes nothing and returns
// false: the caller decodes the general way.
func DecodeBorrowedBytes1(c *Core, f *Bytes, bit uint32, a *Arena, d []byte, pre uint64) bool {
	const at = 8 // the message's start in d
	if mem.Checked || len(d) < at+8+EntrySize || binary.LittleEndian.Uint64(d[:at]) != pre || binary.LittleEndian.Uint64(d[at:at+8]) != 1|uint64(bit)<<32 {
		return false
	}
	e := binary.LittleEndian.Uint64(d[at+8 : at+8+EntrySize])
	o, k := at+int(e>>32), int(uint32(e))
	// Offsets and sizes are below 2^32: the sum does not overflow. A value
	// below the threshold is copied, at or above it zero-copy (BeginDecode's
	// record: copied below Threshold, zero-copy from max(Threshold, 1)).
	if o+k > len(d) || k == 0 || k >= a.Threshold {
		return false
	}
	c.InitNew(a)
	*f = Bytes{data: d[o : o+k : o+k]}
	return true
}
