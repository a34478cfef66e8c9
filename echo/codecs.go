package echo

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/baselines/codec"
	"github.com/cornflakes-go/cornflakes/microbench"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Kind aliases the shapes' message kinds (microbench.Kind, defined in
// internal/baselines/codec).
type Kind = microbench.Kind

// The message kinds and the number of leaves of a Tree5, as in microbench.
const (
	KindSingle = microbench.KindSingle
	KindList   = microbench.KindList
	KindTree   = microbench.KindTree
	TreeLeaves = microbench.TreeLeaves
)

// libCodec is one serialization library for a shape's message kind: the
// codecs of internal/baselines/codec, which microbench times the same way.
// encode returns the serialized message as up to two parts (capnp: frame
// header and segment), valid until the next encode; decode returns the
// values, which may alias in, valid until the next decode; its errors wrap
// ErrBadMessage. Neither is safe for concurrent use; the server and the
// client each have their own.
type libCodec interface {
	encode(vals [][]byte) ([2][]byte, error)
	decode(in []byte) ([][]byte, error)
}

func newCodec(lib string, kind Kind) (libCodec, error) {
	switch lib {
	case "protobuf":
		c, err := codec.NewProtobuf(kind, false)
		return pbCodec{c}, err
	case "flatbuffers":
		c, err := codec.NewFlatBuffers(kind, 1<<14)
		return fbCodec{c}, err
	case "capnp":
		c, err := codec.NewCapnp(kind)
		return capnpCodec{c}, err
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownApproach, lib)
}

// badMessage wraps a codec's decode error in ErrBadMessage.
func badMessage(vals [][]byte, err error) ([][]byte, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	return vals, nil
}

// pbCodec: protobuf-go. Decode copies every bytes field (protobuf-go has
// no aliasing decode); encode writes into a reused buffer.
type pbCodec struct{ c *codec.Protobuf }

func (c pbCodec) encode(vals [][]byte) ([2][]byte, error) {
	b, err := c.c.Encode(vals)
	return [2][]byte{b}, err
}

func (c pbCodec) decode(in []byte) ([][]byte, error) { return badMessage(c.c.Decode(in)) }

// fbCodec: FlatBuffers. The Builder is reset per message; decode checks
// the input (the library's accessors do not) and its values alias it.
type fbCodec struct{ c *codec.FlatBuffers }

func (c fbCodec) encode(vals [][]byte) ([2][]byte, error) {
	b, err := c.c.Encode(vals)
	return [2][]byte{b}, err
}

func (c fbCodec) decode(in []byte) ([][]byte, error) { return badMessage(c.c.Decode(in)) }

// capnpCodec: Cap'n Proto. One reused single-segment message; the output
// is the stream frame header plus the segment.
type capnpCodec struct{ c *codec.Capnp }

func (c capnpCodec) encode(vals [][]byte) ([2][]byte, error) {
	hdr, seg, err := c.c.Encode(vals)
	return [2][]byte{hdr, seg}, err
}

func (c capnpCodec) decode(in []byte) ([][]byte, error) { return badMessage(c.c.Decode(in)) }

// partsObject is a wire.Object whose bytes are all copied into the head:
// how a library's contiguous output is handed to the datapath (one copy
// into the TX buffer).
type partsObject struct{ parts [2][]byte }

func (o *partsObject) Sizes() wire.Sizes {
	return wire.Sizes{Header: len(o.parts[0]) + len(o.parts[1])}
}

func (o *partsObject) Serialize(dst []byte, _ wire.EntrySink) error {
	n := copy(dst, o.parts[0])
	copy(dst[n:], o.parts[1])
	return nil
}

var _ wire.Object = (*partsObject)(nil)
