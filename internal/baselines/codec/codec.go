// Package codec builds and decodes the benchmark shapes' messages (internal/benchschema:
// SingleBuffer, ListBuffers, Tree5) with the baseline libraries (protobuf-go, vtprotobuf,
// FlatBuffers, Cap'n Proto) through their fastest documented APIs, reusing every builder,
// message struct and read-side table so that steady-state encode and decode allocate nothing
// (protobuf-go's Unmarshal, which copies every bytes field, excepted).
//
// It is the one implementation behind `cornflakes microbench` (which times Encode and Decode on
// prepared inputs) and `cornflakes echo` (which decodes received packets and encodes the
// response into a TX-bound buffer), together with the Tree5 walks of the Cornflakes generated
// types (CFBuildTree, CFTreeValues) that both use. Each codec is a concrete type, not an interface, so the
// benchmarks call it directly; a codec is used by one goroutine.
//
// Lifetimes: the values Decode returns and the bytes Encode returns alias, respectively, the
// input and the codec's reused output memory; both are valid until the next call on the same
// codec (and, for decoded values, while the input is untouched). See docs/BASELINES.md.
package codec

import (
	"errors"
	"fmt"
	"strconv"
)

// Kind is the message type of a shape in internal/benchschema/bench.proto.
type Kind int

const (
	// KindSingle is SingleBuffer: one bytes field.
	KindSingle Kind = iota
	// KindList is ListBuffers: a repeated bytes field.
	KindList
	// KindTree is Tree5: a binary tree of depth 5 whose 32 leaves are SingleBuffer.
	KindTree
)

// String returns the schema message name of k.
func (k Kind) String() string {
	switch k {
	case KindSingle:
		return "SingleBuffer"
	case KindList:
		return "ListBuffers"
	case KindTree:
		return "Tree5"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// TreeDepth is the depth of a Tree5; it has 1<<TreeDepth leaves.
const TreeDepth = 5

// TreeLeaves is the number of leaves of a Tree5.
const TreeLeaves = 1 << TreeDepth

var (
	// ErrCount: a message has the wrong number of values for its kind (a SingleBuffer needs
	// exactly one, a Tree5 all TreeLeaves leaves), on encode or after decode.
	ErrCount = errors.New("codec: wrong number of values")
	// ErrMalformed: the input is not a well-formed message of the library.
	ErrMalformed = errors.New("codec: malformed message")
	// ErrKind: a codec was asked for a Kind it does not know.
	ErrKind = errors.New("codec: unknown message kind")
)

// CheckCount returns an error wrapping ErrCount unless n values make a message of kind k. It
// inlines: the hot paths pay two comparisons.
func CheckCount(k Kind, n int) error {
	if (k == KindSingle && n != 1) || (k == KindTree && n != TreeLeaves) {
		return countError(k, n)
	}
	return nil
}

func countError(k Kind, n int) error {
	if k == KindSingle {
		return fmt.Errorf("%w: %d values in a SingleBuffer", ErrCount, n)
	}
	return fmt.Errorf("%w: %d leaves in a Tree5", ErrCount, n)
}

// checkKind returns an error wrapping ErrKind unless k is a known Kind.
func checkKind(k Kind) error {
	if k < KindSingle || k > KindTree {
		return fmt.Errorf("%w: %v", ErrKind, k)
	}
	return nil
}

// malformed wraps a library's decode error in ErrMalformed. It is only called on the error
// path (fmt allocates).
func malformed(lib string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrMalformed, lib, err)
}

// errFrame: input that is not a complete Cap'n Proto stream frame.
var errFrame = errors.New("malformed stream frame")
