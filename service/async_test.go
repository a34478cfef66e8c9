package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// asyncLoop keeps window asynchronous SayHello calls in flight (the first
// call of Lookup made from a done function, so bound from the loop) until
// each slot made calls calls, every reply checked against its request.
type asyncLoop struct {
	g      *v1.GreeterClient
	calls  int
	mu     sync.Mutex
	errs   []error
	left   int
	cancel context.CancelFunc
}

type asyncSlot struct {
	l    *asyncLoop
	i, j int
	a    *wire.Arena
	name string
	seq  uint64
}

func (l *asyncLoop) fail(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

// finished counts a slot done (or failed); the last one ends Run.
func (l *asyncLoop) finished() {
	if l.left--; l.left == 0 {
		l.cancel()
	}
}

func (s *asyncSlot) issue() {
	req := v1.NewHelloRequest(s.a)
	s.name = fmt.Sprintf("a%d-%d", s.i, s.j)
	req.SetName(s.name)
	s.seq = uint64(s.i)<<32 | uint64(s.j)
	req.SetSeq(s.seq)
	if s.j%10 == 0 {
		req.SetBlobSize(uint32(2000 + s.i)) // multi-packet on memnet
	}
	if err := s.l.g.SayHelloAsync(context.Background(), s.a, req, s.done); err != nil {
		s.l.fail(fmt.Errorf("%s: %w", s.name, err))
		s.l.finished()
	}
}

func (s *asyncSlot) done(resp *v1.HelloReply, err error) {
	if err == nil {
		msg, _ := resp.GetMessage()
		if msg != "hello, "+s.name || resp.GetSeq() != s.seq || (s.j%10 == 0) != (len(resp.GetBlob()) == 2000+s.i) {
			err = fmt.Errorf("got %q seq %x blob %d", msg, resp.GetSeq(), len(resp.GetBlob()))
		}
	}
	if err == nil {
		err = s.a.Reset()
	}
	if err != nil {
		s.l.fail(fmt.Errorf("%s: %w", s.name, err))
		s.l.finished()
		return
	}
	if s.j++; s.j == s.l.calls {
		s.lookup()
		return
	}
	s.issue()
}

// lookup ends a slot with a Lookup call, issued from the loop.
func (s *asyncSlot) lookup() {
	req := v1.NewLookupRequest(s.a)
	req.SetId(uint64(s.i))
	err := s.l.g.LookupAsync(context.Background(), s.a, req, func(resp *v1.HelloReply, err error) {
		if err == nil && resp.GetSeq() != uint64(s.i) {
			err = fmt.Errorf("lookup %d: seq %d", s.i, resp.GetSeq())
		}
		if err == nil {
			err = s.a.Reset()
		}
		if err != nil {
			s.l.fail(err)
		}
		s.l.finished()
	})
	if err != nil {
		s.l.fail(err)
		s.l.finished()
	}
}

// TestAsyncClient: 64 asynchronous calls in flight from one goroutine
// (Run), each slot 100 calls, every reply checked; meanwhile 8 goroutines
// make synchronous calls on the same Client, over memnet with loss and
// over udp.
func TestAsyncClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind netKind
	}{{"memnet-loss", netKind{loss: 0.01}}, {"udp", netKind{udp: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			gs := newGreeterV1()
			h := newHarness(t, tc.kind, registerV1(gs))
			c := h.dial(service.WithSessions(4))
			g := v1.NewGreeterClient(c)
			const window, calls, syncers = 64, 100, 8
			ctx, cancel := workloadCtx(t)
			defer cancel()
			l := &asyncLoop{g: g, calls: calls, left: window, cancel: cancel}
			slots := make([]*asyncSlot, window)
			for i := range slots {
				slots[i] = &asyncSlot{l: l, i: i, a: wire.NewArena()}
				slots[i].issue() // outside the loop: binds synchronously
			}
			var wg sync.WaitGroup
			syncErrs := make(chan error, syncers)
			for i := 0; i < syncers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := wire.NewArena()
					defer a.Reset()
					for j := 0; j < calls; j++ {
						req := v1.NewHelloRequest(a)
						name := fmt.Sprintf("s%d-%d", i, j)
						req.SetName(name)
						resp, err := g.SayHello(callCtx(t), a, req)
						if err != nil {
							syncErrs <- fmt.Errorf("%s: %w", name, err)
							return
						}
						if msg, _ := resp.GetMessage(); msg != "hello, "+name {
							syncErrs <- fmt.Errorf("%s: got %q", name, msg)
							return
						}
						if err := a.Reset(); err != nil {
							syncErrs <- err
							return
						}
					}
				}()
			}
			err := c.Run(ctx)
			wg.Wait()
			close(syncErrs)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
			if l.left != 0 {
				t.Errorf("%d slots unfinished (server ran %d calls)", l.left, gs.calls.Load())
			}
			for _, err := range l.errs {
				t.Error(err)
			}
			for err := range syncErrs {
				t.Error(err)
			}
			if n, want := gs.calls.Load(), int64(window*calls+syncers*calls); n < want {
				t.Errorf("the server ran %d calls, want at least %d", n, want)
			}
		})
	}
}

// TestAsyncFromLoop: a synchronous call from a done function fails with
// ErrCallFromLoop (it would wait for itself); an application error and a
// method the server lacks reach done; InvokeAsync with interceptors is
// refused.
func TestAsyncFromLoop(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	c := h.dial()
	g := v1.NewGreeterClient(c)
	ctx, cancel := context.WithCancel(callCtx(t))
	defer cancel()
	a, b := wire.NewArena(), wire.NewArena()
	defer a.Reset()
	defer b.Reset()
	var got []error
	req := v1.NewHelloRequest(a) // empty name: InvalidArgument
	if err := g.SayHelloAsync(ctx, a, req, func(_ *v1.HelloReply, err error) {
		got = append(got, err)
		_, serr := g.SayHello(ctx, b, v1.NewHelloRequest(b))
		got = append(got, serr)
		cancel()
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if len(got) != 2 || service.CodeOf(got[0]) != service.InvalidArgument || !errors.Is(got[1], service.ErrCallFromLoop) {
		t.Fatalf("got %v, want InvalidArgument and ErrCallFromLoop", got)
	}

	ic := h.dial(service.WithClientInterceptor(func(ctx context.Context, info *service.MethodInfo, req, resp any, inv service.UnaryInvoker) error {
		return inv(ctx, req, resp)
	}))
	if err := v1.NewGreeterClient(ic).SayHelloAsync(callCtx(t), a, v1.NewHelloRequest(a), func(*v1.HelloReply, error) {
		t.Error("done ran")
	}); !errors.Is(err, service.ErrAsyncInterceptors) {
		t.Fatalf("got %v, want ErrAsyncInterceptors", err)
	}
}

// TestAsyncContext: an asynchronous call's context other than
// context.Background() is honoured (the background fast path of
// invokeAsync skips it only for Background itself): its metadata reaches
// the handler, an expired deadline fails the call before it is sent, and
// context.TODO() (not Background) calls as Background does.
func TestAsyncContext(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	c := h.dial()
	g := v1.NewGreeterClient(c)
	a := wire.NewArena()
	defer a.Reset()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"background", context.Background(), "hello, x"},
		{"todo", context.TODO(), "hello, x"},
		{"metadata", service.WithMetadata(context.Background(), service.Metadata{{"trace", "t-7"}}), "hello, x trace=t-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(callCtx(t))
			defer cancel()
			req := v1.NewHelloRequest(a)
			req.SetName("x")
			var got string
			var gotErr error
			if err := g.SayHelloAsync(tc.ctx, a, req, func(resp *v1.HelloReply, err error) {
				if err == nil {
					got, _ = resp.GetMessage()
				}
				gotErr = err
				cancel()
			}); err != nil {
				t.Fatal(err)
			}
			if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			if gotErr != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, gotErr, tc.want)
			}
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
		})
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	req := v1.NewHelloRequest(a)
	req.SetName("x")
	if err := g.SayHelloAsync(expired, a, req, func(*v1.HelloReply, error) { t.Error("done ran") }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired deadline: got %v, want DeadlineExceeded", err)
	}
}
