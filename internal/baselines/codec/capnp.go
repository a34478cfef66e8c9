package codec

import (
	"encoding/binary"

	capnp "capnproto.org/go/capnp/v3"

	"github.com/cornflakes-go/cornflakes/internal/baselines/capnpb"
)

// Capnp encodes and decodes one Kind with Cap'n Proto (capnproto.org/go/capnp/v3).
//
// Encode: one reused Message, Reset before each message onto capnp.SingleSegment(nil), which
// takes an arena from the library's sync.Pool and its segment from the library's buffer pool
// (Reset releases the previous arena), so nothing is allocated once warm; values are copied in
// with SetMessage_ / DataList.Set. The output is the 8-byte stream frame header plus the segment,
// kept as two slices (what Message.Marshal would concatenate into a new buffer): a vectored
// write sends them without a copy.
//
// Decode: the frame header is checked, then a reused Message is Reset onto a reused
// capnp.ReadOnlySingleSegment whose data is replaced by the received segment (ReplaceData);
// Data accessors alias the input. Multi-segment input falls back to capnp.Unmarshal. The
// library's traversal and depth limits stay on.
type Capnp struct {
	kind Kind
	wmsg *capnp.Message
	hdr  [8]byte
	rmsg *capnp.Message
	ro   *capnp.ReadOnlySingleSegment

	leaves [][]byte
}

// NewCapnp returns a codec for messages of kind k. Close releases its messages.
func NewCapnp(k Kind) (*Capnp, error) {
	if err := checkKind(k); err != nil {
		return nil, err
	}
	return &Capnp{
		kind:   k,
		wmsg:   &capnp.Message{},
		rmsg:   &capnp.Message{},
		ro:     capnp.NewReadOnlySingleSegment(nil),
		leaves: make([][]byte, 0, TreeLeaves),
	}, nil
}

// Close returns the codec's arenas to the library's pools; the codec must not be used after.
func (c *Capnp) Close() error {
	c.wmsg.Release()
	c.rmsg.Release()
	return nil
}

// Encode serializes a message holding vals and returns it as the stream frame header and the
// segment: the message is their concatenation. Both alias the codec's reused memory and are
// valid until the next Encode. vals are only read during the call.
func (c *Capnp) Encode(vals [][]byte) (hdr, seg []byte, err error) {
	if err := CheckCount(c.kind, len(vals)); err != nil {
		return nil, nil, err
	}
	s, err := c.wmsg.Reset(capnp.SingleSegment(nil))
	if err != nil {
		return nil, nil, err
	}
	if err := c.buildInto(s, vals); err != nil {
		return nil, nil, err
	}
	seg = s.Data()
	binary.LittleEndian.PutUint32(c.hdr[0:], 0) // segment count - 1
	binary.LittleEndian.PutUint32(c.hdr[4:], uint32(len(seg)/8))
	return c.hdr[:], seg, nil
}

func (c *Capnp) buildInto(seg *capnp.Segment, vals [][]byte) error {
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
func (c *Capnp) open(in []byte) (*capnp.Message, error) {
	if len(in) < 8 {
		return nil, errFrame
	}
	if binary.LittleEndian.Uint32(in) != 0 {
		return capnp.Unmarshal(in) // several segments: the library's general path
	}
	words := uint64(binary.LittleEndian.Uint32(in[4:]))
	if words*8 > uint64(len(in)-8) {
		return nil, errFrame
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

// Decode decodes the framed message in and returns its values in schema order; they alias in,
// and the returned slice is valid until the next Decode. Errors wrap ErrMalformed or ErrCount.
func (c *Capnp) Decode(in []byte) ([][]byte, error) {
	c.leaves = c.leaves[:0]
	if err := c.decode(in); err != nil {
		c.leaves = c.leaves[:0]
		return nil, malformed("capnp", err)
	}
	return c.leaves, CheckCount(c.kind, len(c.leaves))
}

func (c *Capnp) decode(in []byte) error {
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

// Kind returns the message kind the codec was made for.
func (c *Capnp) Kind() Kind { return c.kind }
