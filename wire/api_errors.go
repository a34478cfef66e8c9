package wire

import "github.com/cornflakes-go/cornflakes/runtime/wireimpl"

// Limits of the wire format and of the runtime. They are part of the format
// specification (docs/WIRE_FORMAT.md): a writer never produces, and a reader
// rejects, anything beyond them.
const (
	// MaxMessageSize is the largest serialized object (header + copied +
	// zero-copy bytes): every size and offset is a u32.
	MaxMessageSize = wireimpl.MaxMessageSize
	// MaxFieldNumber is the largest field number of the bitmap header form;
	// larger numbers (up to MaxSparseFieldNumber) use the sparse form.
	MaxFieldNumber = wireimpl.MaxFieldNumber
	// MaxBitmapWords is the largest bitmap word count a reader accepts.
	MaxBitmapWords = wireimpl.MaxBitmapWords
	// MaxListLen is the largest element count of one list. A reader also
	// bounds every count by the bytes actually present in the input.
	MaxListLen = wireimpl.MaxListLen
	// MaxDepth is the deepest nesting of messages (the root is depth 0) that
	// Sizes, Serialize and decoding accept; deeper objects get ErrTooDeep.
	MaxDepth = wireimpl.MaxDepth
	// EntrySize is the size of every per-field entry and list entry.
	EntrySize = wireimpl.EntrySize
)

// Sentinel errors (the runtime's own values: errors.Is matches them
// whichever package reports them). Decoding errors are *DecodeError values
// that match ErrMalformed with errors.Is (and ErrTooDeep or ErrArenaLimit
// when that is the cause).
var (
	// ErrMalformed: the input is not a valid serialized message.
	ErrMalformed = wireimpl.ErrMalformed
	// ErrTooDeep: messages nested deeper than MaxDepth.
	ErrTooDeep = wireimpl.ErrTooDeep
	// ErrArenaLimit: decoding would grow the arena beyond Arena.Limit.
	ErrArenaLimit = wireimpl.ErrArenaLimit
	// ErrInvalidUTF8: a string field does not hold valid UTF-8.
	ErrInvalidUTF8 = wireimpl.ErrInvalidUTF8
	// ErrModified: the object changed between Sizes and Serialize in a way
	// that changes its layout; call Sizes again.
	ErrModified = wireimpl.ErrModified
	// ErrDstSize: Serialize's dst is not exactly Sizes().Head() bytes.
	ErrDstSize = wireimpl.ErrDstSize
	// ErrTooLarge: the object exceeds MaxMessageSize, or a list MaxListLen
	// (errors.Is(err, cornflakes.ErrTooLarge) holds too).
	ErrTooLarge = wireimpl.ErrTooLarge
	// ErrArenaReset: a message used after its arena's Reset: sized,
	// serialized or decoded into, reached as a nested message (a field or
	// list element, at any depth) by the sizes of a fresh message, or a
	// list or nested message of a decoded message first accessed after
	// the Reset of the arena that decoded it. Detected until the arena
	// hands the message's memory (for a decoded field: its record of the
	// input) out again, always in the checked build.
	ErrArenaReset = wireimpl.ErrArenaReset
	// ErrBorrowedModified: a value set with a generated SetXBorrowed or a
	// list's AppendBorrowed changed before its arena's Reset (reported by
	// the checked build only: by a serialization on the direct path and by
	// Reset).
	ErrBorrowedModified = wireimpl.ErrBorrowedModified
	// ErrNoArena: a message value that was not made by its New function.
	ErrNoArena = wireimpl.ErrNoArena
	// ErrRequired: a decoded message lacks a proto2 required field (inside
	// a *DecodeError naming the field).
	ErrRequired = wireimpl.ErrRequired
	// ErrOneof: a decoded message has more than one member of a oneof set.
	ErrOneof = wireimpl.ErrOneof
	// ErrPackedBuf: ScalarList.SetBuf's buffer is not an aligned
	// little-endian array of the list's element type.
	ErrPackedBuf = wireimpl.ErrPackedBuf
)

// DecodeError reports where and why an input was rejected:
//
//	type DecodeError struct {
//		Off    int    // byte offset in the input of the offending header word or entry
//		Field  int    // field number, 0 when not field-specific
//		Reason string // what was wrong, e.g. "offset out of range"
//		Err    error  // ErrMalformed, ErrTooDeep, ErrArenaLimit, ErrRequired or ErrOneof
//	}
//
// errors.Is(err, ErrMalformed) is true for every DecodeError; Unwrap
// returns Err, the specific cause. It is the runtime's type (an alias, so
// that errors.As with a *wire.DecodeError finds the errors the runtime
// makes).
type DecodeError = wireimpl.DecodeError
