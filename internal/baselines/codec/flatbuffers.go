package codec

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/cornflakes-go/cornflakes/internal/baselines/fb"
)

// FlatBuffers encodes and decodes one Kind with the FlatBuffers Go runtime. Encode: one Builder,
// Reset before every message, values copied in with CreateByteVector, tables built bottom-up;
// the output is Builder.FinishedBytes (aliases the builder). Decode: the generated accessors on
// reused table structs (Init instead of GetRootAs…, which allocates); values alias the input.
//
// The Go accessors do not bounds-check: DecodeTrusted is for messages this process produced
// (the microbenchmark's prepared inputs); Decode, for anything received, checks the root offset
// and turns the library's panics into ErrMalformed.
type FlatBuffers struct {
	kind Kind
	b    *flatbuffers.Builder
	offs []flatbuffers.UOffsetT // scratch for child offsets

	// reused read-side tables
	single fb.SingleBuffer
	list   fb.ListBuffers
	leaf   fb.SingleBuffer
	t5     fb.Tree5
	t4     fb.Tree4
	t3     fb.Tree3
	t2     fb.Tree2
	t1     fb.Tree1

	leaves [][]byte
}

// NewFlatBuffers returns a codec for messages of kind k whose builder starts with size bytes
// (it grows, allocating, when a message needs more: size it for the largest message).
func NewFlatBuffers(k Kind, size int) (*FlatBuffers, error) {
	if err := checkKind(k); err != nil {
		return nil, err
	}
	return &FlatBuffers{
		kind:   k,
		b:      flatbuffers.NewBuilder(size),
		offs:   make([]flatbuffers.UOffsetT, 0, TreeLeaves),
		leaves: make([][]byte, 0, TreeLeaves),
	}, nil
}

// fbLeaf writes a SingleBuffer holding v and returns its offset.
func fbLeaf(b *flatbuffers.Builder, v []byte) flatbuffers.UOffsetT {
	off := b.CreateByteVector(v)
	fb.SingleBufferStart(b)
	fb.SingleBufferAddMessage(b, off)
	return fb.SingleBufferEnd(b)
}

// Encode serializes a message holding vals. The result aliases the builder: it is valid until
// the next Encode. vals are only read during the call.
func (c *FlatBuffers) Encode(vals [][]byte) ([]byte, error) {
	if err := CheckCount(c.kind, len(vals)); err != nil {
		return nil, err
	}
	b := c.b
	b.Reset()
	var root flatbuffers.UOffsetT
	switch c.kind {
	case KindSingle:
		root = fbLeaf(b, vals[0])
	case KindList:
		offs := c.offs[:0]
		for _, v := range vals {
			offs = append(offs, fbLeaf(b, v))
		}
		fb.ListBuffersStartMessagesVector(b, len(offs))
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		vec := b.EndVector(len(offs))
		fb.ListBuffersStart(b)
		fb.ListBuffersAddMessages(b, vec)
		root = fb.ListBuffersEnd(b)
		c.offs = offs
	default:
		offs := c.offs[:0]
		for _, v := range vals {
			offs = append(offs, fbLeaf(b, v))
		}
		for i := 0; i < 16; i++ {
			fb.Tree1Start(b)
			fb.Tree1AddLeft(b, offs[2*i])
			fb.Tree1AddRight(b, offs[2*i+1])
			offs[i] = fb.Tree1End(b)
		}
		for i := 0; i < 8; i++ {
			fb.Tree2Start(b)
			fb.Tree2AddLeft(b, offs[2*i])
			fb.Tree2AddRight(b, offs[2*i+1])
			offs[i] = fb.Tree2End(b)
		}
		for i := 0; i < 4; i++ {
			fb.Tree3Start(b)
			fb.Tree3AddLeft(b, offs[2*i])
			fb.Tree3AddRight(b, offs[2*i+1])
			offs[i] = fb.Tree3End(b)
		}
		for i := 0; i < 2; i++ {
			fb.Tree4Start(b)
			fb.Tree4AddLeft(b, offs[2*i])
			fb.Tree4AddRight(b, offs[2*i+1])
			offs[i] = fb.Tree4End(b)
		}
		fb.Tree5Start(b)
		fb.Tree5AddLeft(b, offs[0])
		fb.Tree5AddRight(b, offs[1])
		root = fb.Tree5End(b)
		c.offs = offs
	}
	b.Finish(root)
	return b.FinishedBytes(), nil
}

// Decode decodes a received message: it checks the root offset, caps in so that an
// out-of-range vector cannot reach the memory after it, and turns a panic of the library's
// accessors into an error wrapping ErrMalformed; a wrong number of values wraps ErrCount. The
// values alias in; the returned slice is valid until the next decode.
func (c *FlatBuffers) Decode(in []byte) (vals [][]byte, err error) {
	if len(in) < 8 || int(binary.LittleEndian.Uint32(in)) > len(in)-4 {
		return nil, fmt.Errorf("%w: flatbuffers message of %d bytes", ErrMalformed, len(in))
	}
	defer func() {
		if p := recover(); p != nil {
			c.leaves = c.leaves[:0]
			vals, err = nil, fmt.Errorf("%w: flatbuffers: %v", ErrMalformed, p)
		}
	}()
	vals = c.DecodeTrusted(in[:len(in):len(in)])
	return vals, CheckCount(c.kind, len(vals))
}

// DecodeTrusted decodes a message this process produced, without any check (the library's
// accessors do not bounds-check: malformed input panics or reads past it). The values alias in;
// the returned slice is valid until the next decode.
func (c *FlatBuffers) DecodeTrusted(in []byte) [][]byte {
	c.leaves = c.leaves[:0]
	root := flatbuffers.GetUOffsetT(in)
	switch c.kind {
	case KindSingle:
		c.single.Init(in, root)
		c.leaves = append(c.leaves, c.single.MessageBytes())
	case KindList:
		c.list.Init(in, root)
		n := c.list.MessagesLength()
		for j := 0; j < n; j++ {
			if c.list.Messages(&c.leaf, j) {
				c.leaves = append(c.leaves, c.leaf.MessageBytes())
			}
		}
	default:
		c.t5.Init(in, root)
		for a := 0; a < 2; a++ {
			var t4 *fb.Tree4
			if a == 0 {
				t4 = c.t5.Left(&c.t4)
			} else {
				t4 = c.t5.Right(&c.t4)
			}
			if t4 == nil {
				continue
			}
			for b := 0; b < 2; b++ {
				var t3 *fb.Tree3
				if b == 0 {
					t3 = t4.Left(&c.t3)
				} else {
					t3 = t4.Right(&c.t3)
				}
				if t3 == nil {
					continue
				}
				for d := 0; d < 2; d++ {
					var t2 *fb.Tree2
					if d == 0 {
						t2 = t3.Left(&c.t2)
					} else {
						t2 = t3.Right(&c.t2)
					}
					if t2 == nil {
						continue
					}
					for e := 0; e < 2; e++ {
						var t1 *fb.Tree1
						if e == 0 {
							t1 = t2.Left(&c.t1)
						} else {
							t1 = t2.Right(&c.t1)
						}
						if t1 == nil {
							continue
						}
						if l := t1.Left(&c.leaf); l != nil {
							c.leaves = append(c.leaves, l.MessageBytes())
						}
						if r := t1.Right(&c.leaf); r != nil {
							c.leaves = append(c.leaves, r.MessageBytes())
						}
					}
				}
			}
		}
	}
	return c.leaves
}

// Kind returns the message kind the codec was made for.
func (c *FlatBuffers) Kind() Kind { return c.kind }
