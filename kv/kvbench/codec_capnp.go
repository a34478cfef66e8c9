package kvbench

import (
	"encoding/binary"
	"fmt"

	capnp "capnproto.org/go/capnp/v3"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvcapnp"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvcodec"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// capnpCodec is Cap'n Proto (code from capnpc-go): one reused Message reset
// onto a single segment per message (arena and segment from the library's
// pools), values copied in with DataList.Set / SetVal. The library's output
// is the 8-byte stream frame header plus the segment (two pieces); both are
// written into one registered buffer that is sent. Decoding resets a reused
// message onto a read-only segment aliasing the input (the library's
// traversal and depth limits stay on); multi-segment input goes through
// capnp.Unmarshal.
type capnpCodec struct {
	wmsg *capnp.Message
	rmsg *capnp.Message
	ro   *capnp.ReadOnlySingleSegment
}

func newCapnpCodec() *capnpCodec {
	return &capnpCodec{wmsg: &capnp.Message{}, rmsg: &capnp.Message{}, ro: capnp.NewReadOnlySingleSegment(nil)}
}

func (c *capnpCodec) Done() {}

// frame copies the built message (frame header + segment) into a
// registered buffer.
func (c *capnpCodec) frame(seg *capnp.Segment, pool *mem.Pool) (kv.Body, error) {
	data := seg.Data()
	b, err := kvcodec.AllocMsg(pool, 8+len(data))
	if err != nil {
		return kv.Body{}, err
	}
	out := b.Bytes()
	binary.LittleEndian.PutUint32(out[0:], 0) // segment count - 1
	binary.LittleEndian.PutUint32(out[4:], uint32(len(data)/8))
	copy(out[8:], data)
	return kv.Body{Buf: b}, nil
}

func setDataList(l capnp.DataList, vals [][]byte) error {
	for i, v := range vals {
		if err := l.Set(i, v); err != nil {
			return err
		}
	}
	return nil
}

func (c *capnpCodec) EncodeRequest(req *workload.Request, pool *mem.Pool) (kv.Body, error) {
	seg, err := c.wmsg.Reset(capnp.SingleSegment(nil))
	if err != nil {
		return kv.Body{}, err
	}
	root, err := kvcapnp.NewRootReq(seg)
	if err != nil {
		return kv.Body{}, err
	}
	ks, err := root.NewKeys(int32(len(req.Keys)))
	if err != nil {
		return kv.Body{}, err
	}
	if err := setDataList(ks, req.Keys); err != nil {
		return kv.Body{}, err
	}
	if len(req.Values) > 0 {
		vs, err := root.NewVals(int32(len(req.Values)))
		if err != nil {
			return kv.Body{}, err
		}
		if err := setDataList(vs, req.Values); err != nil {
			return kv.Body{}, err
		}
	}
	root.SetIndex(uint32(req.Index))
	return c.frame(seg, pool)
}

func (c *capnpCodec) EncodeResponse(op workload.Op, res *kv.Result, pool *mem.Pool) (kv.Body, error) {
	seg, err := c.wmsg.Reset(capnp.SingleSegment(nil))
	if err != nil {
		return kv.Body{}, err
	}
	root, err := kvcapnp.NewRootResp(seg)
	if err != nil {
		return kv.Body{}, err
	}
	root.SetStatus(kvcodec.StatusToWire(res.Status))
	if res.Status == workload.StatusOK && op.IsRead() {
		if kvcodec.SingleValue(op) && len(res.Vals) == 1 {
			if err := root.SetVal(res.Vals[0].Bytes()); err != nil {
				return kv.Body{}, err
			}
		} else {
			l, err := root.NewVals(int32(len(res.Vals)))
			if err != nil {
				return kv.Body{}, err
			}
			for i, b := range res.Vals {
				if err := l.Set(i, b.Bytes()); err != nil {
					return kv.Body{}, err
				}
			}
		}
	}
	return c.frame(seg, pool)
}

// open reads the stream frame and returns the message (aliasing p).
func (c *capnpCodec) open(p []byte) (*capnp.Message, error) {
	if len(p) < 8 {
		return nil, fmt.Errorf("%w: capnp: %d bytes", kv.ErrBadMessage, len(p))
	}
	if binary.LittleEndian.Uint32(p) != 0 {
		m, err := capnp.Unmarshal(p)
		if err != nil {
			return nil, fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
		}
		return m, nil
	}
	words := uint64(binary.LittleEndian.Uint32(p[4:]))
	if words*8 > uint64(len(p)-8) {
		return nil, fmt.Errorf("%w: capnp: segment of %d words in %d bytes", kv.ErrBadMessage, words, len(p))
	}
	if _, err := c.rmsg.Reset(nil); err != nil {
		return nil, err
	}
	c.ro.ReplaceData(p[8 : 8+words*8])
	if _, err := c.rmsg.Reset(c.ro); err != nil {
		return nil, err
	}
	return c.rmsg, nil
}

func appendDataList(dst [][]byte, l capnp.DataList, limit int) ([][]byte, error) {
	if l.Len() > limit {
		return dst, fmt.Errorf("%w: capnp: list of %d elements", kv.ErrBadMessage, l.Len())
	}
	for i := 0; i < l.Len(); i++ {
		v, err := l.At(i)
		if err != nil {
			return dst, fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
		}
		dst = append(dst, v)
	}
	return dst, nil
}

func (c *capnpCodec) DecodeRequest(op workload.Op, p []byte, q *kv.Query) error {
	m, err := c.open(p)
	if err != nil {
		return err
	}
	root, err := kvcapnp.ReadRootReq(m)
	if err != nil {
		return fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
	}
	ks, err := root.Keys()
	if err != nil {
		return fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
	}
	if q.Keys, err = appendDataList(q.Keys, ks, kv.MaxKeys); err != nil {
		return err
	}
	vs, err := root.Vals()
	if err != nil {
		return fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
	}
	if q.Vals, err = appendDataList(q.Vals, vs, kv.MaxKeys); err != nil {
		return err
	}
	q.Index, err = kvcodec.CheckIndex(root.Index(), kv.MaxListLen)
	return err
}

func (c *capnpCodec) DecodeResponse(op workload.Op, p []byte, resp *workload.Response) error {
	m, err := c.open(p)
	if err != nil {
		return err
	}
	root, err := kvcapnp.ReadRootResp(m)
	if err != nil {
		return fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
	}
	st, err := kvcodec.StatusFromWire(root.Status())
	if err != nil {
		return err
	}
	resp.Status = st
	resp.Values = resp.Values[:0]
	if st != workload.StatusOK {
		return nil
	}
	if kvcodec.SingleValue(op) {
		v, err := root.Val()
		if err != nil {
			return fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
		}
		resp.Values = append(resp.Values, v)
		return nil
	}
	l, err := root.Vals()
	if err != nil {
		return fmt.Errorf("%w: capnp: %v", kv.ErrBadMessage, err)
	}
	resp.Values, err = appendDataList(resp.Values, l, kv.MaxListLen)
	return err
}
