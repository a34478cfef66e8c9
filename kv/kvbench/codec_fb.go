package kvbench

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvcodec"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvfb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// fbCodec is FlatBuffers (code from flatc --go): one reused Builder, values
// copied in with CreateByteVector, the output is Builder.FinishedBytes,
// one contiguous buffer in the builder's own (Go heap) memory that the RPC
// layer copies into a packet buffer. Decoding aliases the input; the Go
// runtime has no verifier, so decoding checks vector lengths against the
// input size and turns an out-of-range access into kv.ErrBadMessage.
type fbCodec struct {
	b    *flatbuffers.Builder
	offs []flatbuffers.UOffsetT
	req  kvfb.Req
	resp kvfb.Resp
	val  kvfb.Value
}

func newFBCodec() *fbCodec { return &fbCodec{b: flatbuffers.NewBuilder(16 << 10)} }

func (c *fbCodec) Done() {}

// vector builds a vector of Value tables holding vals.
func (c *fbCodec) vector(vals [][]byte, start func(*flatbuffers.Builder, int) flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	c.offs = c.offs[:0]
	for _, v := range vals {
		d := c.b.CreateByteVector(v)
		kvfb.ValueStart(c.b)
		kvfb.ValueAddData(c.b, d)
		c.offs = append(c.offs, kvfb.ValueEnd(c.b))
	}
	start(c.b, len(c.offs))
	for i := len(c.offs) - 1; i >= 0; i-- {
		c.b.PrependUOffsetT(c.offs[i])
	}
	return c.b.EndVector(len(c.offs))
}

func (c *fbCodec) EncodeRequest(req *workload.Request, pool *mem.Pool) (kv.Body, error) {
	c.b.Reset()
	keys := c.vector(req.Keys, kvfb.ReqStartKeysVector)
	var vals flatbuffers.UOffsetT
	if len(req.Values) > 0 {
		vals = c.vector(req.Values, kvfb.ReqStartValsVector)
	}
	kvfb.ReqStart(c.b)
	kvfb.ReqAddKeys(c.b, keys)
	if len(req.Values) > 0 {
		kvfb.ReqAddVals(c.b, vals)
	}
	kvfb.ReqAddIndex(c.b, uint32(req.Index))
	c.b.Finish(kvfb.ReqEnd(c.b))
	return kv.Body{Bytes: c.b.FinishedBytes()}, nil
}

func (c *fbCodec) EncodeResponse(op workload.Op, res *kv.Result, pool *mem.Pool) (kv.Body, error) {
	c.b.Reset()
	var val, vals flatbuffers.UOffsetT
	read := res.Status == workload.StatusOK && op.IsRead()
	single := read && kvcodec.SingleValue(op) && len(res.Vals) == 1
	if single {
		val = c.b.CreateByteVector(res.Vals[0].Bytes())
	} else if read {
		c.offs = c.offs[:0]
		for _, b := range res.Vals {
			d := c.b.CreateByteVector(b.Bytes())
			kvfb.ValueStart(c.b)
			kvfb.ValueAddData(c.b, d)
			c.offs = append(c.offs, kvfb.ValueEnd(c.b))
		}
		kvfb.RespStartValsVector(c.b, len(c.offs))
		for i := len(c.offs) - 1; i >= 0; i-- {
			c.b.PrependUOffsetT(c.offs[i])
		}
		vals = c.b.EndVector(len(c.offs))
	}
	kvfb.RespStart(c.b)
	kvfb.RespAddStatus(c.b, kvcodec.StatusToWire(res.Status))
	if single {
		kvfb.RespAddVal(c.b, val)
	} else if read {
		kvfb.RespAddVals(c.b, vals)
	}
	c.b.Finish(kvfb.RespEnd(c.b))
	return kv.Body{Bytes: c.b.FinishedBytes()}, nil
}

// fbSafe runs a FlatBuffers decode, turning the runtime's out-of-range
// panics on malformed input into kv.ErrBadMessage.
func fbSafe(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: flatbuffers: %v", kv.ErrBadMessage, r)
		}
	}()
	return f()
}

// fbRoot checks the minimal frame and returns the root offset.
func fbRoot(p []byte) (flatbuffers.UOffsetT, error) {
	if len(p) < 8 {
		return 0, fmt.Errorf("%w: flatbuffers: %d bytes", kv.ErrBadMessage, len(p))
	}
	off := flatbuffers.GetUOffsetT(p)
	if int(off) > len(p)-4 {
		return 0, fmt.Errorf("%w: flatbuffers: root offset %d", kv.ErrBadMessage, off)
	}
	return off, nil
}

// fbLen bounds an untrusted vector length: each element takes at least 4
// bytes of the input.
func fbLen(n, size int) error {
	if n < 0 || n > kv.MaxKeys || n > size/4 {
		return fmt.Errorf("%w: flatbuffers: vector of %d elements", kv.ErrBadMessage, n)
	}
	return nil
}

func (c *fbCodec) DecodeRequest(op workload.Op, p []byte, q *kv.Query) error {
	return fbSafe(func() error {
		root, err := fbRoot(p)
		if err != nil {
			return err
		}
		c.req.Init(p, root)
		nk, nv := c.req.KeysLength(), c.req.ValsLength()
		if err := fbLen(nk, len(p)); err != nil {
			return err
		}
		if err := fbLen(nv, len(p)); err != nil {
			return err
		}
		for i := 0; i < nk; i++ {
			c.req.Keys(&c.val, i)
			q.Keys = append(q.Keys, c.val.DataBytes())
		}
		for i := 0; i < nv; i++ {
			c.req.Vals(&c.val, i)
			q.Vals = append(q.Vals, c.val.DataBytes())
		}
		q.Index, err = kvcodec.CheckIndex(c.req.Index(), kv.MaxListLen)
		return err
	})
}

func (c *fbCodec) DecodeResponse(op workload.Op, p []byte, resp *workload.Response) error {
	return fbSafe(func() error {
		root, err := fbRoot(p)
		if err != nil {
			return err
		}
		c.resp.Init(p, root)
		st, err := kvcodec.StatusFromWire(c.resp.Status())
		if err != nil {
			return err
		}
		resp.Status = st
		resp.Values = resp.Values[:0]
		if st != workload.StatusOK {
			return nil
		}
		if kvcodec.SingleValue(op) {
			resp.Values = append(resp.Values, c.resp.ValBytes())
			return nil
		}
		n := c.resp.ValsLength()
		if n < 0 || n > len(p)/4 {
			return fmt.Errorf("%w: flatbuffers: vector of %d elements", kv.ErrBadMessage, n)
		}
		for i := 0; i < n; i++ {
			c.resp.Vals(&c.val, i)
			resp.Values = append(resp.Values, c.val.DataBytes())
		}
		return nil
	})
}
