package codec

import (
	"google.golang.org/protobuf/proto"

	"github.com/cornflakes-go/cornflakes/internal/baselines/pb"
)

// Protobuf encodes and decodes one Kind with protobuf-go or, with VT, vtprotobuf (the same
// generated types). Encode: the build-side message structs are reused (a Tree5's 63 nested
// messages are allocated once and stay wired; building sets the leaf fields) and serialized
// into a reused buffer (proto.MarshalOptions.MarshalAppend, or SizeVT plus
// MarshalToSizedBufferVT). Decode: protobuf-go's Unmarshal into a reused message (it copies every
// bytes field), or UnmarshalVTUnsafe, whose values alias the input, into a reused message reset
// keeping its slices and nested messages (UnmarshalVT* merge into a non-empty receiver).
type Protobuf struct {
	kind Kind
	vt   bool

	// build side; treeLeaves are tree's 32 leaves in depth-first order
	single     pb.SingleBuffer
	list       pb.ListBuffers
	tree       *pb.Tree5
	treeLeaves []*pb.SingleBuffer

	// decode side
	dSingle pb.SingleBuffer
	dList   pb.ListBuffers
	dTree   *pb.Tree5

	leaves [][]byte // decoded values
	buf    []byte   // reused output
}

// NewProtobuf returns a codec for messages of kind k; vt selects vtprotobuf's methods.
func NewProtobuf(k Kind, vt bool) (*Protobuf, error) {
	if err := checkKind(k); err != nil {
		return nil, err
	}
	c := &Protobuf{kind: k, vt: vt, leaves: make([][]byte, 0, TreeLeaves)}
	if k == KindTree {
		c.tree, c.dTree = newPBTree(), newPBTree()
		c.treeLeaves = pbTreeNodes(c.tree, nil)
	}
	return c, nil
}

// Encode serializes a message holding vals. The result aliases the codec's reused buffer: it is
// valid until the next Encode. vals are only read during the call.
func (c *Protobuf) Encode(vals [][]byte) ([]byte, error) {
	if err := CheckCount(c.kind, len(vals)); err != nil {
		return nil, err
	}
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
	if !c.vt {
		var err error
		c.buf, err = proto.MarshalOptions{}.MarshalAppend(c.buf[:0], m)
		return c.buf, err
	}
	type vtMessage interface {
		SizeVT() int
		MarshalToSizedBufferVT([]byte) (int, error)
	}
	vm := m.(vtMessage)
	n := vm.SizeVT()
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	_, err := vm.MarshalToSizedBufferVT(c.buf)
	return c.buf, err
}

// Decode decodes in and returns its values in schema order (a Tree5's leaves depth-first,
// left to right). With vtprotobuf the values alias in; with protobuf-go they are copies. The
// returned slice is reused: it is valid until the next Decode. Errors wrap ErrMalformed or
// ErrCount.
func (c *Protobuf) Decode(in []byte) ([][]byte, error) {
	c.leaves = c.leaves[:0]
	var err error
	switch c.kind {
	case KindSingle:
		if c.vt {
			c.dSingle.Reset()
			err = c.dSingle.UnmarshalVTUnsafe(in)
		} else {
			err = proto.UnmarshalOptions{}.Unmarshal(in, &c.dSingle)
		}
		c.leaves = append(c.leaves, c.dSingle.Message)
	case KindList:
		if c.vt {
			msgs := c.dList.Messages[:0]
			c.dList.Reset()
			c.dList.Messages = msgs
			err = c.dList.UnmarshalVTUnsafe(in)
		} else {
			err = proto.UnmarshalOptions{}.Unmarshal(in, &c.dList)
		}
		c.leaves = append(c.leaves, c.dList.Messages...)
	default:
		if c.vt {
			vtResetTree(c.dTree)
			err = c.dTree.UnmarshalVTUnsafe(in)
		} else {
			err = proto.UnmarshalOptions{}.Unmarshal(in, c.dTree)
		}
		c.leaves = pbTreeValues(c.dTree, c.leaves)
	}
	if err != nil {
		c.leaves = c.leaves[:0]
		return nil, malformed("protobuf", err)
	}
	return c.leaves, CheckCount(c.kind, len(c.leaves))
}

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

// pbTreeValues appends the leaf values of t in depth-first left-to-right order; absent leaves
// are skipped (so a partial tree fails CheckCount).
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

// vtResetTree resets every node of a full tree in place, keeping the nested messages, so that
// UnmarshalVTUnsafe (which merges) reuses them. Merging never clears a child pointer, so the
// tree stays full.
func vtResetTree(t *pb.Tree5) {
	for _, t4 := range [2]*pb.Tree4{t.Left, t.Right} {
		for _, t3 := range [2]*pb.Tree3{t4.Left, t4.Right} {
			for _, t2 := range [2]*pb.Tree2{t3.Left, t3.Right} {
				for _, t1 := range [2]*pb.Tree1{t2.Left, t2.Right} {
					t1.Left.Reset()
					t1.Right.Reset()
					l, r := t1.Left, t1.Right
					t1.Reset()
					t1.Left, t1.Right = l, r
				}
				l, r := t2.Left, t2.Right
				t2.Reset()
				t2.Left, t2.Right = l, r
			}
			l, r := t3.Left, t3.Right
			t3.Reset()
			t3.Left, t3.Right = l, r
		}
		l, r := t4.Left, t4.Right
		t4.Reset()
		t4.Left, t4.Right = l, r
	}
	l, r := t.Left, t.Right
	t.Reset()
	t.Left, t.Right = l, r
}

// Kind returns the message kind the codec was made for.
func (c *Protobuf) Kind() Kind { return c.kind }
