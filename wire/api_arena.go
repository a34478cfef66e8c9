package wire

import (
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// Arena owns everything a batch of messages needs: the bytes of copied
// fields, the message structs and list backing arrays, and the mem.Buf
// references that zero-copy fields and decoded messages hold. It is reset
// in one step per batch (Reset), which releases every reference; after
// warm-up a steady workload allocates nothing from the Go heap, because
// chunks and slabs are kept and reused across resets.
//
// An Arena has these settings, fields of the struct:
//
//   - Threshold int, the copy threshold: a bytes or string value shorter
//     than Threshold is copied into the arena; a value of at least
//     Threshold bytes that lies in registered memory (mem.Recover) is held
//     zero-copy. 0 zero-copies every non-empty registered value; CopyAll
//     copies everything. NewArena sets DefaultThreshold. It may be changed
//     between batches; each field is decided when it is set (or decoded).
//   - Limit int bounds the memory (bytes) that decoding may make the arena
//     grow to; exceeding it fails the decode with ErrArenaLimit. NewArena
//     sets DefaultArenaLimit; 0 means no limit.
//   - WriteTyped bool makes messages made after it is set write the typed
//     header form (see wireimpl.Arena.WriteTyped).
//   - BorrowInput bool makes Decode borrow the caller's reference on its
//     input instead of taking the arena's own (no reference-count work per
//     decode): the caller then keeps every input it decodes unreleased
//     until the arena's next Reset. The checked build (-tags cfcheck)
//     verifies this: Reset returns an error wrapping
//     *mem.UseAfterReleaseError when a borrowed input was released before
//     it. DecodeBytes, DecodeSegments and Hold are unchanged.
//
// An Arena is used by one goroutine at a time. Every message made by a New
// function, every value it returns (slices from getters, lists, nested
// messages) and every decoded field is valid only until the next Reset.
//
// A built message may be kept across serializations: serialized any
// number of times, its fields set again in between. With the borrowed
// setters (SetXBorrowed, SetXBufBorrowed, a list's Truncate(0) then
// AppendBorrowed/AppendBufBorrowed) re-setting grows nothing (no arena
// memory, no reference, no allocation), so an arena kept for such messages
// need not be Reset; the copying setters grow the arena until Reset
// (docs/CODEGEN.md, "Reusing a built message").
type Arena wireimpl.Arena

// NewArena returns an arena with DefaultThreshold and DefaultArenaLimit.
func NewArena() *Arena { return (*Arena)(wireimpl.NewArena()) }

// Reset ends a batch: it releases every reference the arena holds
// (zero-copy fields, decoded input buffers, Hold), and makes all copied
// bytes, messages and lists of the batch available for reuse. Messages and
// every slice obtained from them must not be used after Reset. It returns
// the first release error (a reference released twice elsewhere), after
// releasing all the others.
func (a *Arena) Reset() error { return (*wireimpl.Arena)(a).Reset() }

// Hold gives the arena one reference that it releases at Reset. The caller
// must not release b itself.
func (a *Arena) Hold(b mem.Buf) { (*wireimpl.Arena)(a).Hold(b) }

// Held is the number of references the arena holds (released at Reset).
func (a *Arena) Held() int { return (*wireimpl.Arena)(a).Held() }

// Grown is the number of bytes of chunks and slabs the arena has allocated
// from the Go heap since it was made (it does not shrink at Reset).
func (a *Arena) Grown() int { return (*wireimpl.Arena)(a).Grown() }

// Copy returns a copy of p in arena memory, valid until Reset.
func (a *Arena) Copy(p []byte) []byte { return (*wireimpl.Arena)(a).Copy(p) }

// CopyString returns a copy of s in arena memory, valid until Reset.
func (a *Arena) CopyString(s string) []byte { return (*wireimpl.Arena)(a).CopyString(s) }

// SilentCopies returns the number and total size of the values this arena
// copied although they were at least Threshold long (they were not in
// registered memory), since NewArena (Reset does not clear them).
func (a *Arena) SilentCopies() (values, bytes uint64) { return (*wireimpl.Arena)(a).SilentCopies() }

// SilentCopies returns the number and total size of the values, in every
// arena of the process since it started, that were at least their arena's
// Threshold long but were copied because they were not in registered
// memory (mem.Recover failed). Safe for concurrent use.
func SilentCopies() (values, bytes uint64) { return wireimpl.SilentCopies() }

// DefaultThreshold is the copy threshold of NewArena: bytes and string
// values shorter than it are copied, longer ones are sent zero-copy when
// they lie in registered memory (Cornflakes §5: 512 B on the papers' NICs).
const DefaultThreshold = wireimpl.DefaultThreshold

// RefCopyMin is the size from which a generated SetXBuf keeps a reference
// to a registered value below the threshold and copies it at
// serialization, instead of copying it into the arena first: below it one
// more copy is cheaper than a reference count taken and dropped.
const RefCopyMin = wireimpl.RefCopyMin

// CopyAll is the threshold that copies every value (the "copy" mode).
// Threshold 0 is the "zero-copy" mode: every non-empty registered value is
// sent zero-copy.
const CopyAll = wireimpl.CopyAll

// DefaultArenaLimit is the default Arena.Limit: the most memory (bytes of
// arena chunks and slabs) that decoding may make an arena grow to. Setters
// are not limited (the application controls them); decoding is, because an
// untrusted message chooses how many list elements and messages it has.
const DefaultArenaLimit = wireimpl.DefaultArenaLimit
