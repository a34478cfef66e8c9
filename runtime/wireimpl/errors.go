package wireimpl

import (
	"errors"
	"math"
	"strconv"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
)

// Limits of the wire format and of the runtime. They are part of the format
// specification (docs/WIRE_FORMAT.md): a writer never produces, and a reader
// rejects, anything beyond them.
const (
	// MaxMessageSize is the largest serialized object (header + copied +
	// zero-copy bytes): every size and offset is a u32.
	MaxMessageSize = math.MaxUint32
	// MaxFieldNumber is the largest field number a schema may use. It bounds
	// the presence bitmap to MaxBitmapWords words (8 KiB).
	MaxFieldNumber = 65536
	// MaxBitmapWords is the largest bitmap word count a reader accepts.
	MaxBitmapWords = MaxFieldNumber / 32
	// MaxListLen is the largest element count of one list. A reader also
	// bounds every count by the bytes actually present in the input.
	MaxListLen = 1 << 28
	// MaxDepth is the deepest nesting of messages (the root is depth 0) that
	// Sizes, Serialize and decoding accept; deeper objects get ErrTooDeep.
	MaxDepth = 64
	// EntrySize is the size of every per-field entry and list entry.
	EntrySize = 8
)

// DefaultThreshold is the copy threshold of NewArena: bytes and string
// values shorter than it are copied, longer ones are sent zero-copy when
// they lie in registered memory (Cornflakes §5: 512 B on the papers' NICs).
const DefaultThreshold = 512

// RefCopyMin is the size from which Bytes.SetBuf keeps a reference to a
// registered value below the threshold and copies it at serialization,
// instead of copying it into the arena first: below it one more copy is
// cheaper than a reference count taken and dropped.
const RefCopyMin = 256

// CopyAll is the threshold that copies every value (the "copy" mode).
// Threshold 0 is the "zero-copy" mode: every non-empty registered value is
// sent zero-copy.
const CopyAll = math.MaxInt

// DefaultArenaLimit is the default Arena.Limit: the most memory (bytes of
// arena chunks and slabs) that decoding may make an arena grow to. Setters
// are not limited (the application controls them); decoding is, because an
// untrusted message chooses how many list elements and messages it has.
const DefaultArenaLimit = 256 << 20

// Sentinel errors. Decoding errors are *DecodeError values that match
// ErrMalformed with errors.Is (and ErrTooDeep or ErrArenaLimit when that is
// the cause).
var (
	// ErrMalformed: the input is not a valid serialized message.
	ErrMalformed = errors.New("wire: malformed message")
	// ErrTooDeep: messages nested deeper than MaxDepth.
	ErrTooDeep = errors.New("wire: messages nested deeper than MaxDepth")
	// ErrArenaLimit: decoding would grow the arena beyond Arena.Limit.
	ErrArenaLimit = errors.New("wire: arena limit exceeded")
	// ErrInvalidUTF8: a string field does not hold valid UTF-8.
	ErrInvalidUTF8 = errors.New("wire: string field is not valid UTF-8")
	// ErrModified: the object changed between Sizes and Serialize in a way
	// that changes its layout; call Sizes again.
	ErrModified = errors.New("wire: object modified between Sizes and Serialize")
	// ErrDstSize: Serialize's dst is not exactly Sizes().Head() bytes.
	ErrDstSize = errors.New("wire: dst length is not Sizes().Head()")
	// ErrTooLarge: the object exceeds MaxMessageSize, or a list MaxListLen.
	ErrTooLarge = errs.New("wire: object exceeds the format's limits", cornflakes.ErrTooLarge)
	// ErrArenaReset: a message used after its arena's Reset: sized,
	// serialized or decoded into, reached as a nested message (a field or
	// list element, at any depth) by the sizes of a fresh message, or a
	// list or nested message of a decoded message first accessed after
	// the Reset of the arena that decoded it. Detected until the arena
	// hands the message's memory (for a decoded field: its record of the
	// input) out again, always in the checked build.
	ErrArenaReset = errors.New("wire: message used after its arena's Reset")
	// ErrNoArena: a message value that was not made by its New function.
	ErrNoArena = errors.New("wire: message has no arena (make it with its New function)")
)

// DecodeError reports where and why an input was rejected. errors.Is(err,
// ErrMalformed) is true for every DecodeError; Err is the specific cause
// (ErrMalformed, ErrTooDeep or ErrArenaLimit).
type DecodeError struct {
	Off    int    // byte offset in the input of the offending header word or entry
	Field  int    // field number, 0 when not field-specific
	Reason string // what was wrong, e.g. "offset out of range"
	Err    error  // ErrMalformed, ErrTooDeep or ErrArenaLimit
}

func (e *DecodeError) Error() string {
	s := "wire: decode: " + e.Reason + " at offset " + strconv.Itoa(e.Off)
	if e.Field != 0 {
		s += " (field " + strconv.Itoa(e.Field) + ")"
	}
	if e.Err != nil && e.Err != ErrMalformed {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the specific cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is makes every DecodeError match ErrMalformed.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

func malformed(off, field int, reason string) error {
	return &DecodeError{Off: off, Field: field, Reason: reason, Err: ErrMalformed}
}
