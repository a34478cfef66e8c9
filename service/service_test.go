package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

var modes = []struct {
	name string
	mode rpc.Mode
}{{"dispatch", rpc.Dispatch}, {"worker", rpc.Worker}}

func TestHelloAndSecondService(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			h := newHarness(t, netKind{}, registerV1(newGreeterV1(), service.WithMode(m.mode)))
			c := h.dial()
			g, cl := v1.NewGreeterClient(c), v1.NewCalcClient(c)
			a := wire.NewArena()
			defer a.Reset()
			req := v1.NewHelloRequest(a)
			req.SetName("world")
			req.SetBlobSize(64 << 10)
			resp, err := g.SayHello(callCtx(t), a, req)
			if err != nil {
				t.Fatal(err)
			}
			if msg, _ := resp.GetMessage(); msg != "hello, world" || len(resp.GetBlob()) != 64<<10 || resp.GetBlob()[100] != 'z' {
				t.Fatalf("got %q and a blob of %d bytes", msg, len(resp.GetBlob()))
			}
			// An application error, distinct from transport errors.
			req.SetName("")
			_, err = g.SayHello(callCtx(t), a, req)
			var se *service.Error
			if !errors.As(err, &se) || se.Code != service.InvalidArgument || se.Message != "empty name" {
				t.Fatalf("empty name: %v", err)
			}
			// A second service on the same endpoint, with a recursive message.
			tree := v1.NewTree(a)
			tree.SetValue(1)
			kids := tree.InitKids(2)
			for i := 0; i < 2; i++ {
				k := v1.NewTree(a)
				k.SetValue(int64(10 * (i + 1)))
				kids.Append(k)
			}
			sum, err := cl.SumTree(callCtx(t), a, tree)
			if err != nil {
				t.Fatal(err)
			}
			if sum.GetTotal() != 31 || sum.GetNodes() != 3 {
				t.Fatalf("sum %d over %d nodes, want 31 over 3", sum.GetTotal(), sum.GetNodes())
			}
		})
	}
}

// TestStatusCodes: every code round-trips with its message and details
// and matches errors.Is/As; a non-status error arrives as Unknown.
func TestStatusCodes(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	for c := service.Code(1); c < service.NumCodes; c++ {
		req := v1.NewFailRequest(a)
		req.SetCode(uint32(c))
		req.SetMessage("msg " + c.String())
		det := bytes.Repeat([]byte{byte(c)}, int(c)*7)
		req.SetDetails(det)
		_, err := g.Fail(callCtx(t), a, req)
		var se *service.Error
		if !errors.As(err, &se) {
			t.Fatalf("%v: got %v (%T), want a *service.Error", c, err, err)
		}
		if se.Code != c || se.Message != "msg "+c.String() || !bytes.Equal(se.Details, det) {
			t.Errorf("%v: got %v with details %x", c, se, se.Details)
		}
		if !errors.Is(err, &service.Error{Code: c}) || errors.Is(err, &service.Error{Code: c, Message: "other"}) || service.CodeOf(err) != c {
			t.Errorf("%v: errors.Is / CodeOf do not match", c)
		}
		if errors.Is(err, rpc.ErrRejected) || errors.Is(err, rpc.ErrPeerFailed) {
			t.Errorf("%v: a status matches a transport error", c)
		}
	}
	// Code OK as an error, and an out-of-range code, are handler bugs: Unknown.
	for _, code := range []uint32{0, 200} {
		req := v1.NewFailRequest(a)
		req.SetCode(code)
		if _, err := g.Fail(callCtx(t), a, req); service.CodeOf(err) != service.Unknown {
			t.Errorf("code %d: got %v, want Unknown", code, err)
		}
	}
	if service.CodeOf(nil) != service.OK || service.CodeOf(rpc.ErrPeerFailed) != service.Unknown ||
		service.CodeOf(fmt.Errorf("x: %w", context.DeadlineExceeded)) != service.DeadlineExceeded {
		t.Error("CodeOf of nil / a transport error / a context error")
	}
}

// TestHandlerPanic: a panic becomes Internal and the server keeps serving.
func TestHandlerPanic(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			h := newHarness(t, netKind{}, registerV1(newGreeterV1(), service.WithMode(m.mode)))
			g := v1.NewGreeterClient(h.dial())
			a := wire.NewArena()
			defer a.Reset()
			req := v1.NewHelloRequest(a)
			req.SetName("x")
			for i := 0; i < 3; i++ {
				_, err := g.Panic(callCtx(t), a, req)
				if service.CodeOf(err) != service.Internal || !strings.Contains(err.Error(), "the handler panicked") {
					t.Fatalf("got %v, want Internal naming the panic", err)
				}
				if _, err := g.SayHello(callCtx(t), a, req); err != nil {
					t.Fatalf("after a panic: %v", err)
				}
			}
		})
	}
}

// TestDeadline: the client's deadline travels with the request; the
// handler's ctx is cancelled when it passes.
func TestDeadline(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			gs := newGreeterV1()
			h := newHarness(t, netKind{}, registerV1(gs, service.WithMode(m.mode)))
			g := v1.NewGreeterClient(h.dial())
			a := wire.NewArena()
			defer a.Reset()
			req := v1.NewHelloRequest(a)
			// Long enough for the first call's bind on a loaded machine:
			// a request whose deadline passed on the way is answered
			// without running the handler.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := g.Sleep(ctx, a, req)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("client: %v, want DeadlineExceeded", err)
			}
			select {
			case <-gs.started:
			default:
				t.Fatal("the handler never ran")
			}
			select {
			case err := <-gs.slept:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("handler ctx: %v, want DeadlineExceeded", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the handler's ctx was never cancelled")
			}
		})
	}
}

// TestClientCancel: cancelling the caller's ctx cancels a worker
// handler's ctx (the cancellation reaches the server's loop while the
// worker runs).
func TestClientCancel(t *testing.T) {
	gs := newGreeterV1()
	h := newHarness(t, netKind{}, registerV1(gs, service.WithMethodMode("Sleep", rpc.Worker)))
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-gs.started
		cancel()
	}()
	if _, err := g.Sleep(ctx, a, v1.NewHelloRequest(a)); !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v, want Canceled", err)
	}
	select {
	case err := <-gs.slept:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler ctx: %v, want Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler's ctx was never cancelled")
	}
}

// TestMetadataAndInterceptors: metadata travels, interceptors run in
// order on both sides and can refuse a call.
func TestMetadataAndInterceptors(t *testing.T) {
	var mu sync.Mutex
	var trail []string
	note := func(s string) {
		mu.Lock()
		trail = append(trail, s)
		mu.Unlock()
	}
	auth := func(ctx context.Context, req, resp any, info *service.MethodInfo, next service.UnaryHandler) error {
		note("auth " + info.FullMethod)
		if tok, _ := service.IncomingMetadata(ctx).Get("token"); tok != "secret" {
			return service.Errorf(service.Unauthenticated, "bad token %q", tok)
		}
		return next(ctx, req, resp)
	}
	logS := func(ctx context.Context, req, resp any, info *service.MethodInfo, next service.UnaryHandler) error {
		note("log")
		return next(ctx, req, resp)
	}
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()), service.WithServerInterceptor(auth, logS))
	addTrace := func(ctx context.Context, info *service.MethodInfo, req, resp any, inv service.UnaryInvoker) error {
		note("client " + info.FullMethod)
		if _, ok := req.(*v1.HelloRequest); !ok {
			return fmt.Errorf("req is %T", req)
		}
		return inv(service.WithMetadata(ctx, service.Metadata{{"token", "secret"}, {"trace", "t-42"}}), req, resp)
	}
	g := v1.NewGreeterClient(h.dial(service.WithClientInterceptor(addTrace)))
	a := wire.NewArena()
	defer a.Reset()
	req := v1.NewHelloRequest(a)
	req.SetName("md")
	resp, err := g.SayHello(callCtx(t), a, req)
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := resp.GetMessage(); msg != "hello, md trace=t-42" {
		t.Fatalf("got %q", msg)
	}
	want := []string{"client /cornflakes.svctest.Greeter/SayHello", "auth /cornflakes.svctest.Greeter/SayHello", "log"}
	if fmt.Sprint(trail) != fmt.Sprint(want) {
		t.Fatalf("trail %q, want %q", trail, want)
	}
	// Without the token the server interceptor refuses.
	plain := v1.NewGreeterClient(h.dial())
	if _, err := plain.SayHello(callCtx(t), a, req); service.CodeOf(err) != service.Unauthenticated {
		t.Fatalf("got %v, want Unauthenticated", err)
	}
	// Metadata beyond the limits fails before anything is sent.
	big := service.Metadata{{"k", strings.Repeat("v", service.MaxMetadataValue+1)}}
	if _, err := plain.SayHello(service.WithMetadata(callCtx(t), big), a, req); !errors.Is(err, service.ErrBadHeader) {
		t.Fatalf("oversized metadata: %v", err)
	}
}

// TestConcurrentClient: 64 goroutines share one Client; every reply is
// checked against its request.
func TestConcurrentClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind netKind
	}{{"memnet-loss", netKind{loss: 0.01}}, {"udp", netKind{udp: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			gs := newGreeterV1()
			h := newHarness(t, tc.kind, registerV1(gs))
			g := v1.NewGreeterClient(h.dial(service.WithSessions(4)))
			const goroutines, calls = 64, 100
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for i := 0; i < goroutines; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					a := wire.NewArena()
					defer a.Reset()
					for j := 0; j < calls; j++ {
						req := v1.NewHelloRequest(a)
						name := fmt.Sprintf("g%d-%d", i, j)
						req.SetName(name)
						seq := uint64(i)<<32 | uint64(j)
						req.SetSeq(seq)
						if j%10 == 0 {
							req.SetBlobSize(uint32(2000 + i)) // multi-packet on memnet
						}
						resp, err := g.SayHello(callCtx(t), a, req)
						if err != nil {
							errs <- fmt.Errorf("%s: %w", name, err)
							return
						}
						msg, _ := resp.GetMessage()
						if msg != "hello, "+name || resp.GetSeq() != seq || (j%10 == 0) != (len(resp.GetBlob()) == 2000+i) {
							errs <- fmt.Errorf("%s: got %q seq %x blob %d", name, msg, resp.GetSeq(), len(resp.GetBlob()))
							return
						}
						if err := a.Reset(); err != nil {
							errs <- err
							return
						}
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if n := gs.calls.Load(); n < goroutines*calls {
				t.Errorf("the server ran %d calls, want at least %d", n, goroutines*calls)
			}
		})
	}
}

// TestClosedClient: a call after Close fails with ErrClientClosed.
func TestClosedClient(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	c := h.dial()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	a := wire.NewArena()
	defer a.Reset()
	if _, err := v1.NewGreeterClient(c).SayHello(callCtx(t), a, v1.NewHelloRequest(a)); !errors.Is(err, service.ErrClientClosed) {
		t.Fatalf("got %v, want ErrClientClosed", err)
	}
}
