package gen

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrUnsupported is the sentinel wrapped by every [*UnsupportedError]: the
// schema uses a protobuf construct that Cornflakes does not generate code for.
var ErrUnsupported = errors.New("not supported by protoc-gen-go-cornflakes")

// ErrUsage is wrapped by the errors of [ParseArgs] when the command line is
// malformed (the flag package has already printed the problem).
var ErrUsage = errors.New("usage")

// UnsupportedError reports one unsupported construct of a schema with its
// position in the .proto source, e.g.
//
//	kv.proto:12:3: oneof "value" in message kv.Put: not supported by protoc-gen-go-cornflakes
//
// Line and Col are 1-based; they are 0 when the descriptor carries no source
// information (then only the file is named).
type UnsupportedError struct {
	File      string // .proto path as seen by the compiler (relative to an import path)
	Line, Col int    // 1-based position of the construct; 0 if unknown
	Construct string // what is unsupported, e.g. `oneof "value" in message kv.Put`
	Hint      string // optional: what to do instead
}

func (e *UnsupportedError) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
	}
	s := fmt.Sprintf("%s: %s: %v", pos, e.Construct, ErrUnsupported)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// Unwrap returns [ErrUnsupported].
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// unsupported builds an UnsupportedError positioned at the source location
// loc of file fd.
func unsupported(fd protoreflect.FileDescriptor, loc protoreflect.SourceLocation, construct, hint string) *UnsupportedError {
	e := &UnsupportedError{File: fd.Path(), Construct: construct, Hint: hint}
	if loc.Path != nil || loc.StartLine != 0 || loc.StartColumn != 0 {
		e.Line, e.Col = loc.StartLine+1, loc.StartColumn+1
	}
	return e
}
