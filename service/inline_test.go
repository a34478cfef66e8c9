package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

var errEncode = errors.New("test: the request's serialization fails")

// encodeLoop drives one AsyncCall through a script of requests: a nil
// entry is a request whose serialization fails (failEncodeDesc), which
// Start must refuse with that error, done never running for it.
type encodeLoop struct {
	call   *service.AsyncCall[*typedpb.Blob]
	ra     *wire.Arena
	fail   *bool
	script [][]byte
	i      int
	dones  int
	err    error
	cancel context.CancelFunc
}

// next starts the script's next request that can be sent (after checking
// the refusals before it); false when the script is done.
func (l *encodeLoop) next() (bool, error) {
	for ; l.i < len(l.script); l.i++ {
		if err := l.ra.Reset(); err != nil {
			return false, err
		}
		req := typedpb.NewBlob(l.ra)
		d := l.script[l.i]
		*l.fail = d == nil
		req.SetData(d)
		err := l.call.Start(context.Background(), req)
		*l.fail = false
		if d != nil {
			return true, err
		}
		if !errors.Is(err, errEncode) {
			return false, fmt.Errorf("request %d: Start returned %v, want the serialization's error", l.i, err)
		}
	}
	return false, nil
}

func (l *encodeLoop) done(resp *typedpb.Blob, err error) {
	l.dones++
	if err == nil && !bytes.Equal(resp.GetData(), l.script[l.i]) {
		err = fmt.Errorf("request %d: %d bytes back, want %d", l.i, len(resp.GetData()), len(l.script[l.i]))
	}
	more := false
	if err == nil {
		l.i++
		more, err = l.next()
	}
	if err != nil || !more {
		l.err = err
		l.cancel()
	}
}

// TestAsyncCallEncodeError: a request whose one-walk serialization fails
// (the method's EncodeRequest returns an error) is refused by Start with
// that error, on the in-place path and after it was turned off by a
// request too large for the send record; done does not run for it, and the
// call goes on serving the requests after it.
func TestAsyncCallEncodeError(t *testing.T) {
	h := newHarness(t, netKind{}, func(srv *service.Server) error { return typedpb.RegisterEchoServer(srv, &lockstepEcho{}) })
	c := h.dial()
	fail := new(bool)
	d := typedpb.Echo_ServiceDesc
	d.Methods = append([]service.MethodDesc(nil), d.Methods...)
	gen := d.Methods[0].EncodeRequest
	d.Methods[0].WriteRequest = nil // the in-place writer would write these requests before EncodeRequest
	d.Methods[0].EncodeRequest = func(req wire.Object, sga *wireimpl.SGA) (bool, error) {
		ok, err := gen(req, sga)
		if *fail {
			return ok, errEncode
		}
		return ok, err
	}
	ctx, cancel := workloadCtx(t)
	defer cancel()
	long := bytes.Repeat([]byte("z"), 4096)
	l := &encodeLoop{ra: wire.NewArena(), fail: fail, cancel: cancel,
		script: [][]byte{[]byte("bind"), []byte("in place"), nil, []byte("after"), long, nil, []byte("from cl.buf"), nil, nil, []byte("last")}}
	a := wire.NewArena()
	l.call = service.NewAsyncCall(c, &d, 0, a, typedpb.NewBlob, l.done)
	l.call.ResetAfterDone()
	if more, err := l.next(); err != nil || !more {
		t.Fatal(more, err)
	}
	err := c.Run(ctx)
	if l.err != nil {
		t.Fatal(l.err)
	}
	if !errors.Is(err, context.Canceled) || l.i != len(l.script) {
		t.Fatalf("Run: %v at request %d of %d", err, l.i, len(l.script))
	}
	if l.dones != 6 {
		t.Fatalf("done ran %d times, want 6 (the requests that were sent)", l.dones)
	}
}
