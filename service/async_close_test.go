package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestAsyncCallsFailOnClose: asynchronous calls handed to the loop and not
// sent yet when the Client closes complete through done with
// ErrClientClosed, exactly once, whether the endpoint's owner then runs
// the endpoint (the posted sends find their calls failed) or closes it;
// a call after Close is refused with ErrClientClosed and done never runs.
func TestAsyncCallsFailOnClose(t *testing.T) {
	for _, then := range []string{"run", "close"} {
		t.Run(then, func(t *testing.T) {
			h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
			c := h.dial()
			g := v1.NewGreeterClient(c)
			a := wire.NewArena()
			defer a.Reset()
			// Bind first (a synchronous call), so that the calls below
			// are posted as they are.
			req := v1.NewHelloRequest(a)
			req.SetName("bind")
			if _, err := g.SayHello(callCtx(t), a, req); err != nil {
				t.Fatal(err)
			}
			release := service.HoldLoop(c)
			const n = 8
			got := make([]int, n)
			errs := make([]error, n)
			arenas := make([]*wire.Arena, n)
			for i := range n {
				arenas[i] = wire.NewArena()
				defer arenas[i].Reset()
				req := v1.NewHelloRequest(arenas[i])
				req.SetName("x")
				if err := g.SayHelloAsync(context.Background(), arenas[i], req, func(_ *v1.HelloReply, err error) {
					got[i]++
					errs[i] = err
				}); err != nil {
					t.Fatal(err)
				}
			}
			release()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if got[i] != 1 || !errors.Is(errs[i], service.ErrClientClosed) {
					t.Errorf("call %d: done ran %d times, error %v; want once with ErrClientClosed", i, got[i], errs[i])
				}
			}
			if err := g.SayHelloAsync(context.Background(), a, v1.NewHelloRequest(a), func(*v1.HelloReply, error) {
				t.Error("done ran for a call refused")
			}); !errors.Is(err, service.ErrClientClosed) {
				t.Errorf("call after Close: %v, want ErrClientClosed", err)
			}
			ep := c.Endpoint()
			switch then {
			case "run": // the posted sends run now and find their calls failed
				for range 100 {
					if err := ep.RunOnce(); err != nil {
						t.Fatal(err)
					}
				}
			case "close":
				if err := ep.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				if got[i] != 1 {
					t.Errorf("call %d: done ran %d times after the endpoint's %s", i, got[i], then)
				}
			}
		})
	}
}
