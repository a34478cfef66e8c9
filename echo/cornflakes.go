package echo

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/baselines/codec"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/microbench"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The cornflakes-* approaches use the generated messages of
// internal/benchschema/cf. The server decodes the request zero-copy from
// its receive buffer (the arena holds a reference on it), builds the
// response in the same arena by setting each field from the decoded value
// (the hybrid rule then decides per field: copied below the arena's
// threshold, zero-copy above it, sharing the request buffer's reference)
// and serialize-and-sends it with SendSGA (SendObject where the endpoint
// has no datapath.SGASender). The arena is reset after every request (the
// send has serialized it and holds its own references).
// The arena borrows the request's reference (wire.Arena.BorrowInput): the
// server loop releases a request's receive buffer only after handle, which
// resets the arena, so the decode and the reset do no reference-count work
// for the request.

func cornflakesAvailable() error { return nil }

// cfThreshold is the arena threshold of each cornflakes approach on ep:
// hybrid copies below the datapath's calibrated threshold
// (datapath.HybridThreshold: 512 B on memnet as in the paper, 16 KB on
// kernel UDP, 2 KB on AF_XDP copy mode).
func cfThreshold(approach string, ep datapath.Endpoint) (int, error) {
	switch approach {
	case "cornflakes-hybrid":
		if ep == nil {
			return wire.DefaultThreshold, nil
		}
		return datapath.HybridThreshold(ep), nil
	case "cornflakes-copy":
		return wire.CopyAll, nil
	case "cornflakes-zerocopy":
		return 0, nil
	}
	return 0, fmt.Errorf("%w %q", ErrUnknownApproach, approach)
}

type cfServer struct {
	kind   Kind
	arena  *wire.Arena
	leaves [][]byte // scratch: a tree's decoded leaves
	// sga is the endpoint's datapath.SGASender, asserted once here (nil:
	// the endpoint has none, and answers go through SendObject).
	sga datapath.SGASender
}

func newCFServer(approach string, shape microbench.Shape, sd *side) (*cfServer, error) {
	var ep datapath.Endpoint
	if sd != nil {
		ep = sd.ep
	}
	t, err := cfThreshold(approach, ep)
	if err != nil {
		return nil, err
	}
	a := wire.NewArena()
	a.Threshold = t
	a.BorrowInput = true // handle resets before its caller releases the request
	c := &cfServer{kind: shape.Kind, arena: a, leaves: make([][]byte, 0, TreeLeaves)}
	c.sga, _ = ep.(datapath.SGASender)
	return c, nil
}

// reset ends a batch (after Flush: the datapath holds its own references
// on everything it still sends).
func (c *cfServer) reset() error { return c.arena.Reset() }

func (c *cfServer) close() error { return c.arena.Reset() }

// handle answers one request and resets the arena (the caller keeps p.Buf
// until handle returns: the arena borrows it): SendObject serializes
// before it returns and the endpoint holds its own reference on every
// zero-copy entry it still sends, so the request and the response are
// dead once it returns, and every request decodes into a fresh arena (the
// decoder's fast path: the arena's first input).
func (c *cfServer) handle(ep datapath.Endpoint, p *datapath.Packet, hdr []byte) error {
	err := c.answer(ep, p, hdr)
	if rerr := c.arena.Reset(); err == nil {
		err = rerr
	}
	return err
}

func (c *cfServer) answer(ep datapath.Endpoint, p *datapath.Packet, hdr []byte) error {
	a := c.arena
	in := p.Buf.Slice(hdrLen, p.Buf.Len()-hdrLen)
	switch c.kind {
	case KindSingle:
		req, err := cf.DecodeSingleBuffer(a, in)
		if err != nil {
			return err
		}
		resp := cf.NewSingleBuffer(a)
		resp.SetMessage(req.GetMessage())
		if c.sga != nil {
			return c.sga.SendSGA(p.From, hdr, resp)
		}
		return ep.SendObject(p.From, hdr, resp)
	case KindList:
		req, err := cf.DecodeListBuffers(a, in)
		if err != nil {
			return err
		}
		l, err := req.GetMessages()
		if err != nil {
			return err
		}
		resp := cf.NewListBuffers(a)
		// The request's values, borrowed in one call: request and
		// response share the arena, and SendObject takes its own
		// reference on every zero-copy entry before the arena's Reset.
		if err := resp.InitMessages(l.Len()).AppendBorrowedFrom(l); err != nil {
			return err
		}
		if c.sga != nil {
			return c.sga.SendSGA(p.From, hdr, resp)
		}
		return ep.SendObject(p.From, hdr, resp)
	default:
		req, err := cf.DecodeTree5(a, in)
		if err != nil {
			return err
		}
		if err := c.readTree(req); err != nil {
			return err
		}
		resp := cf.NewTree5(a)
		if err := codec.CFBuildTree(resp, c.leaves); err != nil {
			return err
		}
		if c.sga != nil {
			return c.sga.SendSGA(p.From, hdr, resp)
		}
		return ep.SendObject(p.From, hdr, resp)
	}
}

// cfRequest builds the request of one variant (in a fresh arena, every
// field copied) and returns its flattened bytes.
func cfRequest(approach string, shape microbench.Shape, vals [][]byte) ([]byte, error) {
	a := wire.NewArena()
	a.Threshold = wire.CopyAll
	defer a.Reset()
	var obj wire.Object
	switch shape.Kind {
	case KindSingle:
		m := cf.NewSingleBuffer(a)
		m.SetMessage(vals[0])
		obj = m
	case KindList:
		m := cf.NewListBuffers(a)
		l := m.InitMessages(len(vals))
		for _, v := range vals {
			l.Append(v)
		}
		obj = m
	default:
		m := cf.NewTree5(a)
		if err := codec.CFBuildTree(m, vals); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
		}
		obj = m
	}
	return wire.Flatten(obj, nil)
}

// readTree collects the leaves of a decoded request tree into c.leaves; a
// tree with missing nodes is an ErrBadMessage.
func (c *cfServer) readTree(req *cf.Tree5) error {
	var err error
	c.leaves, err = codec.CFTreeValues(req, c.leaves[:0])
	if err != nil {
		return err
	}
	if err := codec.CheckCount(KindTree, len(c.leaves)); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	return nil
}

// decodeOnly decodes a request of the server's kind and reads every value
// (for tests and fuzzing). The caller keeps in (the arena borrows it) until
// the arena's next reset or close.
func (c *cfServer) decodeOnly(in mem.Buf) error {
	a := c.arena
	switch c.kind {
	case KindSingle:
		req, err := cf.DecodeSingleBuffer(a, in)
		if err != nil {
			return err
		}
		_ = req.GetMessage()
	case KindList:
		req, err := cf.DecodeListBuffers(a, in)
		if err != nil {
			return err
		}
		l, err := req.GetMessages()
		if err != nil {
			return err
		}
		for i := range l.Len() {
			_ = l.At(i)
		}
	default:
		req, err := cf.DecodeTree5(a, in)
		if err != nil {
			return err
		}
		return c.readTree(req)
	}
	return nil
}
