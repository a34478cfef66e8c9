package echo

// The library codecs of the echo experiment. The tree walking and building
// code is adapted from microbench (protobuf.go, flatbuffers.go, capnp.go:
// same generated types, same reuse of builders and read-side structs) so
// that `cornflakes echo` and `cornflakes microbench` measure the libraries
// the same way; here the input is a received packet rather than a prepared
// buffer.

import (
	"encoding/binary"
	"errors"

	capnp "capnproto.org/go/capnp/v3"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/cornflakes-go/cornflakes/internal/baselines/capnpb"
	"github.com/cornflakes-go/cornflakes/internal/baselines/fb"
	"github.com/cornflakes-go/cornflakes/internal/baselines/pb"
	"github.com/cornflakes-go/cornflakes/microbench"
)

// Kind aliases of the shapes' message kinds.
type Kind = microbench.Kind

const (
	KindSingle = microbench.KindSingle
	KindList   = microbench.KindList
	KindTree   = microbench.KindTree
	TreeLeaves = microbench.TreeLeaves
)

// ---- protobuf (adapted from microbench/protobuf.go) ----

// newPBTree allocates a full Tree5 with all 63 nested messages.
func newPBTree() *pb.Tree5 {
	t1 := func() *pb.Tree1 { return &pb.Tree1{Left: &pb.SingleBuffer{}, Right: &pb.SingleBuffer{}} }
	t2 := func() *pb.Tree2 { return &pb.Tree2{Left: t1(), Right: t1()} }
	t3 := func() *pb.Tree3 { return &pb.Tree3{Left: t2(), Right: t2()} }
	t4 := func() *pb.Tree4 { return &pb.Tree4{Left: t3(), Right: t3()} }
	return &pb.Tree5{Left: t4(), Right: t4()}
}

// pbTreeNodes appends the leaves of t in depth-first left-to-right order; absent nodes are
// skipped.
func pbTreeNodes(t *pb.Tree5, dst []*pb.SingleBuffer) []*pb.SingleBuffer {
	for _, t4 := range [2]*pb.Tree4{t.GetLeft(), t.GetRight()} {
		for _, t3 := range [2]*pb.Tree3{t4.GetLeft(), t4.GetRight()} {
			for _, t2 := range [2]*pb.Tree2{t3.GetLeft(), t3.GetRight()} {
				for _, t1 := range [2]*pb.Tree1{t2.GetLeft(), t2.GetRight()} {
					if l := t1.GetLeft(); l != nil {
						dst = append(dst, l)
					}
					if r := t1.GetRight(); r != nil {
						dst = append(dst, r)
					}
				}
			}
		}
	}
	return dst
}

// pbTreeValues appends the leaf values of t in depth-first left-to-right order.
func pbTreeValues(t *pb.Tree5, dst [][]byte) [][]byte {
	for _, t4 := range [2]*pb.Tree4{t.GetLeft(), t.GetRight()} {
		for _, t3 := range [2]*pb.Tree3{t4.GetLeft(), t4.GetRight()} {
			for _, t2 := range [2]*pb.Tree2{t3.GetLeft(), t3.GetRight()} {
				for _, t1 := range [2]*pb.Tree1{t2.GetLeft(), t2.GetRight()} {
					if l := t1.GetLeft(); l != nil {
						dst = append(dst, l.GetMessage())
					}
					if r := t1.GetRight(); r != nil {
						dst = append(dst, r.GetMessage())
					}
				}
			}
		}
	}
	return dst
}

// ---- flatbuffers (adapted from microbench/flatbuffers.go) ----

type fbCodec struct {
	kind   Kind
	b      *flatbuffers.Builder
	offs   []flatbuffers.UOffsetT
	out    []byte
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

// fbLeaf writes a SingleBuffer holding v and returns its offset.
func fbLeaf(b *flatbuffers.Builder, v []byte) flatbuffers.UOffsetT {
	off := b.CreateByteVector(v)
	fb.SingleBufferStart(b)
	fb.SingleBufferAddMessage(b, off)
	return fb.SingleBufferEnd(b)
}

// build serializes a message of c.kind holding vals into the reused builder; c.out is the result.
func (c *fbCodec) build(vals [][]byte) {
	b := c.b
	b.Reset()
	var root flatbuffers.UOffsetT
	switch c.kind {
	case KindSingle:
		root = fbLeaf(b, vals[0])
	case KindList:
		c.offs = c.offs[:0]
		for _, v := range vals {
			c.offs = append(c.offs, fbLeaf(b, v))
		}
		fb.ListBuffersStartMessagesVector(b, len(c.offs))
		for i := len(c.offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(c.offs[i])
		}
		vec := b.EndVector(len(c.offs))
		fb.ListBuffersStart(b)
		fb.ListBuffersAddMessages(b, vec)
		root = fb.ListBuffersEnd(b)
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
	c.out = b.FinishedBytes()
}

// decode reads in into c.leaves (aliasing in) through the reused tables.
func (c *fbCodec) decodeTables(in []byte) {
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
}

// ---- capnp (adapted from microbench/capnp.go) ----

type capnpCodec struct {
	kind   Kind
	wmsg   *capnp.Message
	hdr    [8]byte
	seg    []byte
	rmsg   *capnp.Message
	ro     *capnp.ReadOnlySingleSegment
	leaves [][]byte
}

// errCapnpFrame is returned for input that is not a complete stream frame.
var errCapnpFrame = errors.New("capnp: malformed stream frame")

// build writes a message holding vals into the reused segment and frames it.
func (c *capnpCodec) build(vals [][]byte) error {
	seg, err := c.wmsg.Reset(capnp.SingleSegment(nil))
	if err != nil {
		return err
	}
	if err := c.buildInto(seg, vals); err != nil {
		return err
	}
	c.seg = seg.Data()
	binary.LittleEndian.PutUint32(c.hdr[0:], 0) // segment count - 1
	binary.LittleEndian.PutUint32(c.hdr[4:], uint32(len(c.seg)/8))
	return nil
}

func (c *capnpCodec) buildInto(seg *capnp.Segment, vals [][]byte) error {
	switch c.kind {
	case KindSingle:
		root, err := capnpb.NewRootSingleBuffer(seg)
		if err != nil {
			return err
		}
		return root.SetMessage_(vals[0])
	case KindList:
		root, err := capnpb.NewRootListBuffers(seg)
		if err != nil {
			return err
		}
		l, err := root.NewMessages(int32(len(vals)))
		if err != nil {
			return err
		}
		for i, v := range vals {
			if err := l.Set(i, v); err != nil {
				return err
			}
		}
		return nil
	default:
		root, err := capnpb.NewRootTree5(seg)
		if err != nil {
			return err
		}
		return capnpBuildTree5(root, vals)
	}
}

func capnpBuildTree5(t capnpb.Tree5, vals [][]byte) error {
	for i := 0; i < 2; i++ {
		var t4 capnpb.Tree4
		var err error
		if i == 0 {
			t4, err = t.NewLeft()
		} else {
			t4, err = t.NewRight()
		}
		if err != nil {
			return err
		}
		if err := capnpBuildTree4(t4, vals[i*16:]); err != nil {
			return err
		}
	}
	return nil
}

func capnpBuildTree4(t capnpb.Tree4, vals [][]byte) error {
	for i := 0; i < 2; i++ {
		var t3 capnpb.Tree3
		var err error
		if i == 0 {
			t3, err = t.NewLeft()
		} else {
			t3, err = t.NewRight()
		}
		if err != nil {
			return err
		}
		if err := capnpBuildTree3(t3, vals[i*8:]); err != nil {
			return err
		}
	}
	return nil
}

func capnpBuildTree3(t capnpb.Tree3, vals [][]byte) error {
	for i := 0; i < 2; i++ {
		var t2 capnpb.Tree2
		var err error
		if i == 0 {
			t2, err = t.NewLeft()
		} else {
			t2, err = t.NewRight()
		}
		if err != nil {
			return err
		}
		if err := capnpBuildTree2(t2, vals[i*4:]); err != nil {
			return err
		}
	}
	return nil
}

func capnpBuildTree2(t capnpb.Tree2, vals [][]byte) error {
	for i := 0; i < 2; i++ {
		var t1 capnpb.Tree1
		var err error
		if i == 0 {
			t1, err = t.NewLeft()
		} else {
			t1, err = t.NewRight()
		}
		if err != nil {
			return err
		}
		l, err := t1.NewLeft()
		if err != nil {
			return err
		}
		if err := l.SetMessage_(vals[i*2]); err != nil {
			return err
		}
		r, err := t1.NewRight()
		if err != nil {
			return err
		}
		if err := r.SetMessage_(vals[i*2+1]); err != nil {
			return err
		}
	}
	return nil
}

// open points the reused read Message at the framed message in (aliasing it).
func (c *capnpCodec) open(in []byte) (*capnp.Message, error) {
	if len(in) < 8 {
		return nil, errCapnpFrame
	}
	if binary.LittleEndian.Uint32(in) != 0 {
		return capnp.Unmarshal(in) // several segments: the library's general path
	}
	words := uint64(binary.LittleEndian.Uint32(in[4:]))
	if words*8 > uint64(len(in)-8) {
		return nil, errCapnpFrame
	}
	if _, err := c.rmsg.Reset(nil); err != nil {
		return nil, err
	}
	c.ro.ReplaceData(in[8 : 8+words*8])
	if _, err := c.rmsg.Reset(c.ro); err != nil {
		return nil, err
	}
	return c.rmsg, nil
}

// decode reads the message in into c.leaves (aliasing in).
func (c *capnpCodec) decodeMsg(in []byte) error {
	c.leaves = c.leaves[:0]
	msg, err := c.open(in)
	if err != nil {
		return err
	}
	switch c.kind {
	case KindSingle:
		root, err := capnpb.ReadRootSingleBuffer(msg)
		if err != nil {
			return err
		}
		v, err := root.Message_()
		if err != nil {
			return err
		}
		c.leaves = append(c.leaves, v)
	case KindList:
		root, err := capnpb.ReadRootListBuffers(msg)
		if err != nil {
			return err
		}
		l, err := root.Messages()
		if err != nil {
			return err
		}
		for i := 0; i < l.Len(); i++ {
			v, err := l.At(i)
			if err != nil {
				return err
			}
			c.leaves = append(c.leaves, v)
		}
	default:
		root, err := capnpb.ReadRootTree5(msg)
		if err != nil {
			return err
		}
		c.leaves, err = capnpReadTree5(root, c.leaves)
		return err
	}
	return nil
}

func capnpReadTree5(t capnpb.Tree5, dst [][]byte) ([][]byte, error) {
	for i := 0; i < 2; i++ {
		var t4 capnpb.Tree4
		var err error
		if i == 0 {
			t4, err = t.Left()
		} else {
			t4, err = t.Right()
		}
		if err != nil {
			return dst, err
		}
		for j := 0; j < 2; j++ {
			var t3 capnpb.Tree3
			if j == 0 {
				t3, err = t4.Left()
			} else {
				t3, err = t4.Right()
			}
			if err != nil {
				return dst, err
			}
			for k := 0; k < 2; k++ {
				var t2 capnpb.Tree2
				if k == 0 {
					t2, err = t3.Left()
				} else {
					t2, err = t3.Right()
				}
				if err != nil {
					return dst, err
				}
				for m := 0; m < 2; m++ {
					var t1 capnpb.Tree1
					if m == 0 {
						t1, err = t2.Left()
					} else {
						t1, err = t2.Right()
					}
					if err != nil {
						return dst, err
					}
					l, err := t1.Left()
					if err != nil {
						return dst, err
					}
					lv, err := l.Message_()
					if err != nil {
						return dst, err
					}
					r, err := t1.Right()
					if err != nil {
						return dst, err
					}
					rv, err := r.Message_()
					if err != nil {
						return dst, err
					}
					dst = append(dst, lv, rv)
				}
			}
		}
	}
	return dst, nil
}
