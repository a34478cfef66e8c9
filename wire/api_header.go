package wire

import (
	"unsafe"

	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// The schema-less header codecs (for tools, tests and the unknown-field
// helpers). Their field types have the runtime's layout exactly, so the
// slices are passed to it in place (castSlice).

// Header flags and the sparse form's limit (docs/WIRE_FORMAT.md).
const (
	// MaxSparseFieldNumber is the largest field number of all (protobuf's
	// own limit, 2^29 - 1); numbers above MaxFieldNumber are written in
	// the sparse header form.
	MaxSparseFieldNumber = wireimpl.MaxSparseFieldNumber
	// SparseFlag marks the first header word of the sparse form; its low
	// 31 bits are the field count P.
	SparseFlag = wireimpl.SparseFlag
	// TypedFlag marks the first header word of the typed form (bit 30; in
	// the bitmap form W <= MaxBitmapWords keeps it clear, in the sparse
	// form it is combined with SparseFlag).
	TypedFlag = wireimpl.TypedFlag
	// PackedFlag marks the count word of a list entry whose elements are
	// out of line (bytes [offset, offset+count*width) of the object,
	// anywhere in it, like a bytes value) instead of a region of the
	// header. Its low 31 bits are the count (at most MaxListLen).
	PackedFlag = wireimpl.PackedFlag
)

// HeaderField is one present field of a message header, schema-less: its
// number and its raw 8-byte entry (an inline scalar, or {size or count,
// offset} for bytes, strings, lists and nested messages).
type HeaderField struct {
	Num   int
	Entry uint64
}

// Lo is the low 32 bits of the entry (a size or count).
func (f HeaderField) Lo() uint32 { return uint32(f.Entry) }

// Hi is the high 32 bits of the entry (an offset).
func (f HeaderField) Hi() uint32 { return uint32(f.Entry >> 32) }

// ReadHeader parses the fixed part of the message whose header starts at
// p[0] (bitmap word count, bitmap, entries), appends its present fields in
// field-number order to fields, and returns them with the fixed part's
// size. It checks only that the fixed part lies within p.
func ReadHeader(p []byte, fields []HeaderField) ([]HeaderField, int, error) {
	out, n, err := wireimpl.ReadHeader(p, castSlice[wireimpl.HeaderField](fields))
	return castSlice[HeaderField](out), n, err
}

// AppendHeader appends the fixed part of a message with the given present
// fields (strictly ascending numbers in 1..MaxSparseFieldNumber) to dst, as
// Serialize writes it: with the smallest bitmap that holds them, or in the
// sparse form when a number exceeds MaxFieldNumber.
func AppendHeader(dst []byte, fields []HeaderField) ([]byte, error) {
	return wireimpl.AppendHeader(dst, castSlice[wireimpl.HeaderField](fields))
}

// Kind is the kind byte of a field in the typed header form.
type Kind uint8

// The field kinds of the typed header form.
const (
	KindScalar      = Kind(wireimpl.KindScalar)      // inline 8-byte scalar
	KindBytes       = Kind(wireimpl.KindBytes)       // bytes or string: {size, offset}
	KindList1       = Kind(wireimpl.KindList1)       // list of bools: {count, offset}, count bytes
	KindList4       = Kind(wireimpl.KindList4)       // list of 32-bit scalars (may be out of line: PackedFlag)
	KindList8       = Kind(wireimpl.KindList8)       // list of 64-bit scalars (may be out of line: PackedFlag)
	KindBytesList   = Kind(wireimpl.KindBytesList)   // list of bytes or strings: count {size, offset} entries
	KindMessage     = Kind(wireimpl.KindMessage)     // nested message: {size, offset} of its (typed) header
	KindMessageList = Kind(wireimpl.KindMessageList) // list of messages: count {size, offset} entries, then the headers
)

// TypedField is one present field of a typed message header: its number,
// kind and raw 8-byte entry.
type TypedField struct {
	Num   int
	Kind  Kind
	Entry uint64
}

// ReadTypedHeader parses the fixed part of the typed message header at
// p[0] (either variant), appends its present fields in field-number order
// to fields, and returns them with the fixed part's size. It checks that
// the header is in the typed form, that the fixed part lies within p, that
// every kind is valid and the padding zero, and the sparse variant's
// numbers as the sparse form's reader does.
func ReadTypedHeader(p []byte, fields []TypedField) ([]TypedField, int, error) {
	out, n, err := wireimpl.ReadTypedHeader(p, castSlice[wireimpl.TypedField](fields))
	return castSlice[TypedField](out), n, err
}

// AppendTypedHeader appends the fixed part of a typed message header with
// the given present fields (strictly ascending numbers in
// 1..MaxSparseFieldNumber, valid kinds) to dst: the bitmap variant with the
// smallest bitmap that holds them, or the sparse variant when a number
// exceeds MaxFieldNumber.
func AppendTypedHeader(dst []byte, fields []TypedField) ([]byte, error) {
	return wireimpl.AppendTypedHeader(dst, castSlice[wireimpl.TypedField](fields))
}

// CopyTyped appends to dst a copy of the object obj, every message of which
// must be in the typed header form, laid out afresh: the header (every
// message, list region and nested header, in the canonical depth-first
// order) followed by the copied region holding every bytes value, with no
// zero-copy region (out-of-line lists are moved into the header). Because
// the kinds say which entries are offsets, it needs no schema: it is how a
// field that the reader's schema does not know can be moved into another
// object.
//
// obj is checked with the reader rules of docs/WIRE_FORMAT.md (every range
// in bounds; regions disjoint and in field order; counts at most
// MaxListLen; depth at most MaxDepth; valid kinds): a violation is a
// *DecodeError wrapping ErrMalformed (ErrTooDeep for depth). A copy larger
// than limit bytes (a hostile object may reference one value from many
// entries) fails with ErrTooLarge before anything is allocated. On error
// dst is returned unchanged.
func CopyTyped(dst, obj []byte, limit int) ([]byte, error) {
	return wireimpl.CopyTyped(dst, obj, limit)
}

// castSlice reinterprets s as a slice of To, a type with From's layout
// (HeaderField and TypedField mirror the runtime's field by field; the
// compile-time checks below keep them in step).
func castSlice[To, From any](s []From) []To {
	if s == nil {
		return nil
	}
	return unsafe.Slice((*To)(unsafe.Pointer(unsafe.SliceData(s))), cap(s))[:len(s)]
}

// The mirrored types keep the runtime's layout (a conversion between
// structs with identical fields compiles only if they stay identical).
var (
	_ = wireimpl.HeaderField(HeaderField{})
	_ = struct {
		Num   int
		Kind  wireimpl.Kind
		Entry uint64
	}(wireimpl.TypedField{})
	_ = struct {
		Num   int
		Kind  Kind
		Entry uint64
	}(TypedField{})
)
