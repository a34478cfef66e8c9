package service_test

import (
	"testing"

	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"

	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestDispatchLoopCall: dispatch requests are served with the endpoint's
// cached serverCall, and with pooled ones while it is taken (a nested or
// concurrent request); every answer is right either way.
func TestDispatchLoopCall(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	call := func(name string) {
		t.Helper()
		req := v1.NewHelloRequest(a)
		req.SetName(name)
		resp, err := g.SayHello(callCtx(t), a, req)
		if err != nil {
			t.Fatal(err)
		}
		if msg, _ := resp.GetMessage(); msg != "hello, "+name {
			t.Fatalf("got %q, want %q", msg, "hello, "+name)
		}
	}
	call("first")
	if !service.LoopCallCached(h.srv, h.srvEp) {
		t.Fatal("no cached serverCall after a dispatch request")
	}
	release := service.HoldLoopCall(h.srv, h.srvEp)
	for _, n := range []string{"pooled-1", "pooled-2", "pooled-3"} {
		call(n)
	}
	release()
	call("cached-again")
	if !service.LoopCallCached(h.srv, h.srvEp) {
		t.Fatal("the cached serverCall was lost")
	}
}
