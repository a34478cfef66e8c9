package echo

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
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
// and serialize-and-sends it with SendObject. The arena is reset once per
// batch, after Flush.

func cornflakesAvailable() error { return nil }

// cfThreshold is the arena threshold of each cornflakes approach.
func cfThreshold(approach string) (int, error) {
	switch approach {
	case "cornflakes-hybrid":
		return wire.DefaultThreshold, nil
	case "cornflakes-copy":
		return wire.CopyAll, nil
	case "cornflakes-zerocopy":
		return 0, nil
	}
	return 0, fmt.Errorf("%w %q", ErrUnknownApproach, approach)
}

type cfServer struct {
	kind  Kind
	arena *wire.Arena
}

func newCFServer(approach string, shape microbench.Shape, _ *side) (*cfServer, error) {
	t, err := cfThreshold(approach)
	if err != nil {
		return nil, err
	}
	a := wire.NewArena()
	a.Threshold = t
	return &cfServer{kind: shape.Kind, arena: a}, nil
}

// reset ends a batch (after Flush: the datapath holds its own references
// on everything it still sends).
func (c *cfServer) reset() error { return c.arena.Reset() }

func (c *cfServer) close() error { return c.arena.Reset() }

func (c *cfServer) handle(ep datapath.Endpoint, p datapath.Packet, hdr []byte) error {
	a := c.arena
	in := p.Buf.Slice(hdrLen, p.Buf.Len()-hdrLen)
	switch c.kind {
	case KindSingle:
		req := cf.NewSingleBuffer(a)
		if err := req.Decode(in); err != nil {
			return err
		}
		resp := cf.NewSingleBuffer(a)
		resp.SetMessage(req.GetMessage())
		return ep.SendObject(p.From, hdr, resp)
	case KindList:
		req := cf.NewListBuffers(a)
		if err := req.Decode(in); err != nil {
			return err
		}
		l, err := req.GetMessages()
		if err != nil {
			return err
		}
		resp := cf.NewListBuffers(a)
		out := resp.InitMessages(l.Len())
		for i := range l.Len() {
			out.Append(l.At(i))
		}
		return ep.SendObject(p.From, hdr, resp)
	default:
		req := cf.NewTree5(a)
		if err := req.Decode(in); err != nil {
			return err
		}
		resp := cf.NewTree5(a)
		if err := echoTree5(resp, req); err != nil {
			return err
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
		if len(vals) != TreeLeaves {
			return nil, fmt.Errorf("%w: tree5 needs %d values", ErrBadMessage, TreeLeaves)
		}
		m := cf.NewTree5(a)
		buildTree5(m, vals)
		obj = m
	}
	return wire.Flatten(obj, nil)
}

var errMissing = fmt.Errorf("%w: tree node missing", ErrBadMessage)

func echoTree5(dst, src *cf.Tree5) error {
	l, err := src.GetLeft()
	if err != nil {
		return err
	}
	r, err := src.GetRight()
	if err != nil {
		return err
	}
	if l == nil || r == nil {
		return errMissing
	}
	if err := echoTree4(dst.InitLeft(), l); err != nil {
		return err
	}
	return echoTree4(dst.InitRight(), r)
}

func buildTree5(t *cf.Tree5, vals [][]byte) {
	h := len(vals) / 2
	buildTree4(t.InitLeft(), vals[:h])
	buildTree4(t.InitRight(), vals[h:])
}

func echoTree4(dst, src *cf.Tree4) error {
	l, err := src.GetLeft()
	if err != nil {
		return err
	}
	r, err := src.GetRight()
	if err != nil {
		return err
	}
	if l == nil || r == nil {
		return errMissing
	}
	if err := echoTree3(dst.InitLeft(), l); err != nil {
		return err
	}
	return echoTree3(dst.InitRight(), r)
}

func buildTree4(t *cf.Tree4, vals [][]byte) {
	h := len(vals) / 2
	buildTree3(t.InitLeft(), vals[:h])
	buildTree3(t.InitRight(), vals[h:])
}

func echoTree3(dst, src *cf.Tree3) error {
	l, err := src.GetLeft()
	if err != nil {
		return err
	}
	r, err := src.GetRight()
	if err != nil {
		return err
	}
	if l == nil || r == nil {
		return errMissing
	}
	if err := echoTree2(dst.InitLeft(), l); err != nil {
		return err
	}
	return echoTree2(dst.InitRight(), r)
}

func buildTree3(t *cf.Tree3, vals [][]byte) {
	h := len(vals) / 2
	buildTree2(t.InitLeft(), vals[:h])
	buildTree2(t.InitRight(), vals[h:])
}

func echoTree2(dst, src *cf.Tree2) error {
	l, err := src.GetLeft()
	if err != nil {
		return err
	}
	r, err := src.GetRight()
	if err != nil {
		return err
	}
	if l == nil || r == nil {
		return errMissing
	}
	if err := echoTree1(dst.InitLeft(), l); err != nil {
		return err
	}
	return echoTree1(dst.InitRight(), r)
}

func buildTree2(t *cf.Tree2, vals [][]byte) {
	h := len(vals) / 2
	buildTree1(t.InitLeft(), vals[:h])
	buildTree1(t.InitRight(), vals[h:])
}

func echoTree1(dst, src *cf.Tree1) error {
	l, err := src.GetLeft()
	if err != nil {
		return err
	}
	r, err := src.GetRight()
	if err != nil {
		return err
	}
	if l == nil || r == nil {
		return errMissing
	}
	dst.InitLeft().SetMessage(l.GetMessage())
	dst.InitRight().SetMessage(r.GetMessage())
	return nil
}

func buildTree1(t *cf.Tree1, vals [][]byte) {
	t.InitLeft().SetMessage(vals[0])
	t.InitRight().SetMessage(vals[1])
}

// decodeOnly decodes a request of the server's kind and reads every value
// (for tests and fuzzing).
func (c *cfServer) decodeOnly(in mem.Buf) error {
	a := c.arena
	switch c.kind {
	case KindSingle:
		req := cf.NewSingleBuffer(a)
		if err := req.Decode(in); err != nil {
			return err
		}
		_ = req.GetMessage()
	case KindList:
		req := cf.NewListBuffers(a)
		if err := req.Decode(in); err != nil {
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
		req := cf.NewTree5(a)
		if err := req.Decode(in); err != nil {
			return err
		}
		return echoTree5(cf.NewTree5(a), req)
	}
	return nil
}
