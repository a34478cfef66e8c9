package kvbench

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvcodec"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvpbgo"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// pbCodec is protobuf-go (code from protoc-gen-go) or, with vt, vtprotobuf
// (protoc-gen-go-vtproto methods on the same types). Both produce one
// contiguous buffer: the message is sized, a registered buffer of exactly
// that size is allocated and the message is marshalled straight into it
// (no intermediate copy), and that buffer is sent.
//
// Decoding: protobuf-go's Unmarshal copies every bytes field (it has no
// aliasing mode); vtprotobuf's UnmarshalVTUnsafe aliases the input.
type pbCodec struct {
	vt   bool
	req  kvpbgo.Req
	resp kvpbgo.Resp
}

func newPBCodec(vt bool) *pbCodec { return &pbCodec{vt: vt} }

func (c *pbCodec) Done() {
	clear(c.req.Keys)
	clear(c.req.Vals)
	c.req.Keys, c.req.Vals, c.req.Index = c.req.Keys[:0], c.req.Vals[:0], 0
	clear(c.resp.Vals)
	c.resp.Status, c.resp.Val, c.resp.Vals = 0, nil, c.resp.Vals[:0]
}

var (
	pbMarshal   = proto.MarshalOptions{UseCachedSize: true}
	pbUnmarshal = proto.UnmarshalOptions{Merge: true} // into the emptied, reused message
)

func (c *pbCodec) marshal(m interface {
	proto.Message
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
}, pool *mem.Pool) (kv.Body, error) {
	var n int
	if c.vt {
		n = m.SizeVT()
	} else {
		n = proto.Size(m)
	}
	b, err := kvcodec.AllocMsg(pool, n)
	if err != nil {
		return kv.Body{}, err
	}
	if c.vt {
		_, err = m.MarshalToSizedBufferVT(b.Bytes())
	} else {
		var out []byte
		out, err = pbMarshal.MarshalAppend(b.Bytes()[:0], m)
		if err == nil && len(out) != n {
			err = fmt.Errorf("kv: protobuf marshalled %d bytes, sized %d", len(out), n)
		}
	}
	if err != nil {
		_ = b.Release()
		return kv.Body{}, err
	}
	return kv.Body{Buf: b}, nil
}

func (c *pbCodec) EncodeRequest(req *workload.Request, pool *mem.Pool) (kv.Body, error) {
	c.req.Keys = append(c.req.Keys[:0], req.Keys...)
	c.req.Vals = append(c.req.Vals[:0], req.Values...)
	c.req.Index = uint32(req.Index)
	return c.marshal(&c.req, pool)
}

func (c *pbCodec) unmarshal(p []byte, m interface {
	proto.Message
	UnmarshalVTUnsafe([]byte) error
}) error {
	var err error
	if c.vt {
		// UnmarshalVT* merge into the receiver: done() emptied it keeping
		// its capacity.
		err = m.UnmarshalVTUnsafe(p)
		if r := m.ProtoReflect(); len(r.GetUnknown()) > 0 {
			r.SetUnknown(nil) // unknown fields would accumulate across reuses
		}
	} else {
		err = pbUnmarshal.Unmarshal(p, m)
		if r := m.ProtoReflect(); len(r.GetUnknown()) > 0 {
			r.SetUnknown(nil)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %v", kv.ErrBadMessage, err)
	}
	return nil
}

func (c *pbCodec) DecodeResponse(op workload.Op, p []byte, resp *workload.Response) error {
	if err := c.unmarshal(p, &c.resp); err != nil {
		return err
	}
	st, err := kvcodec.StatusFromWire(c.resp.Status)
	if err != nil {
		return err
	}
	resp.Status = st
	resp.Values = resp.Values[:0]
	if st != workload.StatusOK {
		return nil
	}
	if kvcodec.SingleValue(op) {
		resp.Values = append(resp.Values, c.resp.Val)
	} else {
		resp.Values = append(resp.Values, c.resp.Vals...)
	}
	return nil
}

func (c *pbCodec) DecodeRequest(op workload.Op, p []byte, q *kv.Query) error {
	if err := c.unmarshal(p, &c.req); err != nil {
		return err
	}
	q.Keys = append(q.Keys, c.req.Keys...)
	q.Vals = append(q.Vals, c.req.Vals...)
	var err error
	q.Index, err = kvcodec.CheckIndex(c.req.Index, kv.MaxListLen)
	return err
}

func (c *pbCodec) EncodeResponse(op workload.Op, res *kv.Result, pool *mem.Pool) (kv.Body, error) {
	c.resp.Status = kvcodec.StatusToWire(res.Status)
	if res.Status == workload.StatusOK && op.IsRead() {
		if kvcodec.SingleValue(op) && len(res.Vals) == 1 {
			c.resp.Val = res.Vals[0].Bytes()
		} else {
			for _, b := range res.Vals {
				c.resp.Vals = append(c.resp.Vals, b.Bytes())
			}
		}
	}
	return c.marshal(&c.resp, pool)
}
