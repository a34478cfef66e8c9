package echo

import (
	"encoding/binary"
	"fmt"

	capnp "capnproto.org/go/capnp/v3"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/protobuf/proto"

	"github.com/cornflakes-go/cornflakes/internal/baselines/pb"
	"github.com/cornflakes-go/cornflakes/wire"
)

// libCodec is one serialization library for a shape's message kind. encode
// returns the serialized message as up to two parts (capnp: frame header and
// segment), valid until the next encode; decode returns the values, which
// may alias in, valid until the next decode. Neither is safe for concurrent
// use; the server and the client each have their own.
type libCodec interface {
	encode(vals [][]byte) ([2][]byte, error)
	decode(in []byte) ([][]byte, error)
}

func newCodec(lib string, kind Kind) (libCodec, error) {
	switch lib {
	case "protobuf":
		c := &pbCodec{kind: kind, tree: newPBTree()}
		c.treeLeaves = pbTreeNodes(c.tree, nil)
		c.dTree = newPBTree()
		return c, nil
	case "flatbuffers":
		return &fbCodec{kind: kind, b: flatbuffers.NewBuilder(1 << 14)}, nil
	case "capnp":
		return &capnpCodec{kind: kind, wmsg: &capnp.Message{}, rmsg: &capnp.Message{}, ro: capnp.NewReadOnlySingleSegment(nil)}, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownApproach, lib)
}

// checkCount rejects a decoded message with the wrong number of values for
// its kind (a tree must have all its leaves, a single buffer one).
func checkCount(k Kind, n int) error {
	switch {
	case k == KindSingle && n != 1:
		return fmt.Errorf("%w: %d values in a SingleBuffer", ErrBadMessage, n)
	case k == KindTree && n != TreeLeaves:
		return fmt.Errorf("%w: %d leaves in a Tree5", ErrBadMessage, n)
	}
	return nil
}

// pbCodec: protobuf-go. Unmarshal copies every bytes field (protobuf-go has
// no aliasing decode); MarshalAppend writes into a reused buffer.
type pbCodec struct {
	kind       Kind
	single     pb.SingleBuffer
	list       pb.ListBuffers
	tree       *pb.Tree5
	treeLeaves []*pb.SingleBuffer
	dSingle    pb.SingleBuffer
	dList      pb.ListBuffers
	dTree      *pb.Tree5
	leaves     [][]byte
	buf        []byte
}

func (c *pbCodec) encode(vals [][]byte) ([2][]byte, error) {
	var m proto.Message
	switch c.kind {
	case KindSingle:
		c.single.Message = vals[0]
		m = &c.single
	case KindList:
		c.list.Messages = append(c.list.Messages[:0], vals...)
		m = &c.list
	default:
		for i, leaf := range c.treeLeaves {
			leaf.Message = vals[i]
		}
		m = c.tree
	}
	var err error
	c.buf, err = proto.MarshalOptions{}.MarshalAppend(c.buf[:0], m)
	return [2][]byte{c.buf}, err
}

func (c *pbCodec) decode(in []byte) ([][]byte, error) {
	c.leaves = c.leaves[:0]
	switch c.kind {
	case KindSingle:
		if err := (proto.UnmarshalOptions{}).Unmarshal(in, &c.dSingle); err != nil {
			return nil, err
		}
		c.leaves = append(c.leaves, c.dSingle.Message)
	case KindList:
		if err := (proto.UnmarshalOptions{}).Unmarshal(in, &c.dList); err != nil {
			return nil, err
		}
		c.leaves = append(c.leaves, c.dList.Messages...)
	default:
		if err := (proto.UnmarshalOptions{}).Unmarshal(in, c.dTree); err != nil {
			return nil, err
		}
		c.leaves = pbTreeValues(c.dTree, c.leaves)
	}
	return c.leaves, checkCount(c.kind, len(c.leaves))
}

// FlatBuffers: the Builder is reset per message; accessors alias the input.
func (c *fbCodec) encode(vals [][]byte) ([2][]byte, error) {
	c.build(vals)
	return [2][]byte{c.out}, nil
}

// decode checks the root offset and turns the library's panics on
// malformed input (it does not bounds-check) into an error.
func (c *fbCodec) decode(in []byte) (vals [][]byte, err error) {
	if len(in) < 8 || int(binary.LittleEndian.Uint32(in)) > len(in)-4 {
		return nil, fmt.Errorf("%w: flatbuffers message of %d bytes", ErrBadMessage, len(in))
	}
	defer func() {
		if p := recover(); p != nil {
			vals, err = nil, fmt.Errorf("%w: flatbuffers: %v", ErrBadMessage, p)
		}
	}()
	c.decodeTables(in)
	return c.leaves, checkCount(c.kind, len(c.leaves))
}

// capnp: one reused single-segment message; output is the stream frame
// header plus the segment.
func (c *capnpCodec) encode(vals [][]byte) ([2][]byte, error) {
	if err := c.build(vals); err != nil {
		return [2][]byte{}, err
	}
	return [2][]byte{c.hdr[:], c.seg}, nil
}

func (c *capnpCodec) decode(in []byte) ([][]byte, error) {
	if err := c.decodeMsg(in); err != nil {
		return nil, fmt.Errorf("%w: capnp: %v", ErrBadMessage, err)
	}
	return c.leaves, checkCount(c.kind, len(c.leaves))
}

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
