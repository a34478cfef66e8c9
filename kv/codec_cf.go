package kv

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// cfCodec is Cornflakes: messages generated from kv.proto by our generator,
// built in an arena whose threshold picks copy vs zero-copy per value. With
// serialize-and-send the response object goes to the RPC layer as is (its
// header and copied fields are written into the packet buffer, each
// zero-copy value is one more scatter-gather entry pointing into the
// store); without it the object is first flattened into one registered
// buffer (the paper's Table 5 "off").
//
// Messages are built borrowed (no copy into the arena, no reference of the
// arena's own): a request's keys and values are serialized when the RPC
// layer enqueues the request, before done(), and the store's references on
// a response's values (Result) are released after done(). A response
// received in place is decoded borrowed too (decodeResponseSegs).
type cfCodec struct {
	a   *wire.Arena
	sas bool
}

func newCFCodec(threshold int, sas bool) *cfCodec {
	a := wire.NewArena()
	a.Threshold = threshold
	return &cfCodec{a: a, sas: sas}
}

func (c *cfCodec) done() { _ = c.a.Reset() }

func (c *cfCodec) encodeRequest(req *workload.Request, pool *mem.Pool) (body, error) {
	m := kvpb.NewReq(c.a)
	m.InitKeys(len(req.Keys)).AppendBorrowedAll(req.Keys)
	if len(req.Values) > 0 {
		m.InitVals(len(req.Values)).AppendBorrowedAll(req.Values)
	}
	m.SetIndex(uint32(req.Index))
	return body{obj: m}, nil
}

func (c *cfCodec) decodeResponse(op workload.Op, p []byte, resp *workload.Response) error {
	m := kvpb.NewResp(c.a)
	if err := m.DecodeBytes(p); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return respValues(m, op, resp)
}

// decodeResponseSegs decodes a response received in place (rpc.Response.
// Segments): the values of zero-copy fields alias the server's memory,
// borrowed: the arena takes no reference on hold, since resp is delivered
// within the response's continuation, during which the RPC layer holds the
// packet (loadgen.Conn.Poll's values are borrowed for the call only).
func (c *cfCodec) decodeResponseSegs(op workload.Op, segs [][]byte, _ mem.Buf, resp *workload.Response) error {
	m := kvpb.NewResp(c.a)
	if err := wire.DecodeSegments(m, segs, 0, mem.Buf{}); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return respValues(m, op, resp)
}

// respValues fills resp from a decoded response.
func respValues(m *kvpb.Resp, op workload.Op, resp *workload.Response) error {
	st, err := statusFromWire(m.GetStatus())
	if err != nil {
		return err
	}
	resp.Status = st
	resp.Values = resp.Values[:0]
	if st != workload.StatusOK {
		return nil
	}
	if singleValue(op) {
		resp.Values = append(resp.Values, m.GetVal())
		return nil
	}
	l, err := m.GetVals()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	for i := 0; i < l.Len(); i++ {
		resp.Values = append(resp.Values, l.At(i))
	}
	return nil
}

func (c *cfCodec) decodeRequest(op workload.Op, p []byte, q *Query) error {
	m := kvpb.NewReq(c.a)
	if err := m.DecodeBytes(p); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return queryOfReq(m, q)
}

func (c *cfCodec) encodeResponse(op workload.Op, res *Result, pool *mem.Pool) (body, error) {
	m := kvpb.NewResp(c.a)
	m.SetStatus(statusToWire(res.Status))
	if res.Status == workload.StatusOK && op.IsRead() {
		// Borrowed: res keeps its references until after done().
		if singleValue(op) && len(res.Vals) == 1 {
			m.SetValBufBorrowed(res.Vals[0])
		} else {
			l := m.InitVals(len(res.Vals))
			for _, b := range res.Vals {
				l.AppendBufBorrowed(b)
			}
		}
	}
	if c.sas {
		return body{obj: m}, nil
	}
	b, err := allocMsg(pool, m.Sizes().Total())
	if err != nil {
		return body{}, err
	}
	if _, err := wire.Flatten(m, b.Bytes()[:0]); err != nil {
		_ = b.Release()
		return body{}, err
	}
	return body{buf: b}, nil
}
