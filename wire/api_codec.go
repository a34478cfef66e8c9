package wire

import (
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// Msg is implemented by generated message types (as pointers): an Object
// that can also be decoded, printed and cloned. Its Wire* methods are the
// hooks that the generated-code runtime (package runtime/wireimpl) drives;
// applications use the generated accessors, the Object methods and the
// functions of this package instead.
type Msg interface {
	Object
	wireimpl.Msg
}

// Decode decodes m from b, zero-copy: m's fields alias b's bytes, and the
// arena takes its own reference on b (Clone), released at Reset, so the
// caller may release b at once; with Arena.BorrowInput the arena borrows
// the caller's reference instead, and the caller keeps b until Reset. Nested messages and lists are decoded when
// first accessed. Fields of at least the arena's Threshold bytes are
// zero-copy again when m (or a message built from its fields) is sent.
// Malformed input gives a *DecodeError; a message used after its arena's
// Reset ErrArenaReset; a message not made by its New function ErrNoArena.
func Decode(m Msg, b mem.Buf) error { return wireimpl.Decode(m, b) }

// DecodeBytes decodes m from p, aliasing p. When p lies in registered
// memory the arena takes a reference (released at Reset) and large fields
// are zero-copy; otherwise the caller must keep p alive and unchanged
// until the arena's Reset. Errors as Decode.
func DecodeBytes(m Msg, p []byte) error { return wireimpl.DecodeBytes(m, p) }

// DecodeSegments decodes m from the object that starts at offset off of
// segs[0] and continues, in order, through segs[1:] (the payload is the
// concatenation of segs). hold is a reference that keeps every segment
// alive and unchanged: the arena takes its own reference (Clone), released
// at Reset, and the caller keeps and must still release its own. Decoded
// fields alias the segments until the arena's Reset.
//
// Fields of a segmented input are never zero-copy when the message (or a
// value taken from it) is serialized again: memory outside this process's
// registered spaces is copied (mem.Recover does not know it).
//
// Errors are those of Decode; an object longer than MaxMessageSize, or an
// off beyond segs[0], is malformed.
func DecodeSegments(m Msg, segs [][]byte, off int, hold mem.Buf) error {
	return wireimpl.DecodeSegments(m, segs, off, hold)
}

// SizesOf computes m's Sizes (as m.Sizes() does).
func SizesOf(m Msg) Sizes { return Sizes(wireimpl.SizesOf(m)) }

// SerializeTo writes m's header and copied region into dst (exactly
// Sizes().Head() bytes) and hands each zero-copy entry to sink, in wire
// order (as m.Serialize does). It uses the sizes of the last Sizes of m
// when no other message of the arena was sized since (computing them
// otherwise); a change of m since then that alters the layout is detected
// and reported as ErrModified (nothing is written out of place).
func SerializeTo(m Msg, dst []byte, sink EntrySink) error { return wireimpl.SerializeTo(m, dst, sink) }

// Clone returns a deep copy of src made in arena a with newT (the
// generated New function of src's type; generated messages have a Clone
// method that calls this). The copy shares nothing with src or its arena:
// every value, zero-copy ones included, is copied into a's memory (one
// contiguous allocation, which the copy's fields alias), so the copy stays
// valid after src's arena is Reset, until a's Reset.
//
// With a nil a, the copy is made in a new private arena that holds no
// registered memory and no references and is never Reset: a plain Go heap
// value, reclaimed by the garbage collector when unreachable, for
// messages kept in caches or maps. Its setters allocate from that private
// arena.
//
// Errors are those of sizing src (e.g. ErrArenaReset when src's arena was
// Reset) and of decoding the copy (ErrArenaLimit when the copy exceeds
// a.Limit; ErrRequired when src lacks a proto2 required field).
func Clone[P MessagePtr](src P, a *Arena, newT func(*Arena) P) (P, error) {
	return wireimpl.Clone(src, (*wireimpl.Arena)(a), func(b *wireimpl.Arena) P { return newT((*Arena)(b)) })
}
