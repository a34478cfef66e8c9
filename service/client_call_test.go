package service_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// callSlot is one slot of TestAsyncCallReuse: a reusable call started
// again from its own done function.
type callSlot struct {
	l    *asyncLoop
	i, j int
	a    *wire.Arena
	call *service.AsyncCall[*v1.HelloReply]
	name string
	seq  uint64
}

func (s *callSlot) start() error {
	req := v1.NewHelloRequest(s.a)
	s.name = fmt.Sprintf("c%d-%d", s.i, s.j)
	if s.j%7 == 3 {
		s.name = "" // the server answers InvalidArgument
	}
	req.SetName(s.name)
	s.seq = uint64(s.i)<<32 | uint64(s.j)
	req.SetSeq(s.seq)
	if s.j%10 == 0 {
		req.SetBlobSize(uint32(2000 + s.i)) // multi-packet on memnet
	}
	return s.call.Start(context.Background(), req)
}

func (s *callSlot) done(resp *v1.HelloReply, err error) {
	switch {
	case s.name == "":
		if service.CodeOf(err) != service.InvalidArgument || resp != nil {
			err = fmt.Errorf("empty name: got %v, %v; want InvalidArgument and no response", resp, err)
		} else {
			err = nil
		}
	case err == nil:
		msg, _ := resp.GetMessage()
		if msg != "hello, "+s.name || resp.GetSeq() != s.seq || (s.j%10 == 0) != (len(resp.GetBlob()) == 2000+s.i) {
			err = fmt.Errorf("got %q seq %x blob %d", msg, resp.GetSeq(), len(resp.GetBlob()))
		}
	}
	if err == nil {
		err = s.a.Reset()
	}
	if err == nil && s.j+1 < s.l.calls {
		s.j++
		err = s.start()
	} else if err == nil {
		s.l.finished()
		return
	}
	if err != nil {
		s.l.fail(fmt.Errorf("%q: %w", s.name, err))
		s.l.finished()
	}
}

// TestAsyncCallReuse: window reusable calls (NewSayHelloCall), each
// started again from its done function (the fast path on the loop) after
// a first Start from the test's goroutine (InvokeAsync's path, which
// binds), every reply and every application error checked, over memnet
// with loss and over udp.
func TestAsyncCallReuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind netKind
	}{{"memnet", netKind{}}, {"memnet-loss", netKind{loss: 0.01}}, {"udp", netKind{udp: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.kind, registerV1(newGreeterV1()))
			c := h.dial(service.WithSessions(4))
			g := v1.NewGreeterClient(c)
			const window, calls = 32, 60
			ctx, cancel := workloadCtx(t)
			defer cancel()
			l := &asyncLoop{g: g, calls: calls, left: window, cancel: cancel}
			slots := make([]*callSlot, window)
			for i := range slots {
				s := &callSlot{l: l, i: i, a: wire.NewArena()}
				s.call = g.NewSayHelloCall(s.a, s.done)
				slots[i] = s
				if err := s.start(); err != nil {
					t.Fatal(err)
				}
				// One request in flight per call.
				if err := s.call.Start(context.Background(), v1.NewHelloRequest(wire.NewArena())); !errors.Is(err, service.ErrCallInFlight) {
					t.Fatalf("second Start: %v, want ErrCallInFlight", err)
				}
			}
			err := c.Run(ctx)
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, e := range l.errs {
				t.Error(e)
			}
			if l.left != 0 {
				var open []string
				for _, s := range slots {
					if s.j+1 < calls {
						open = append(open, fmt.Sprintf("%d@%d", s.i, s.j))
					}
				}
				t.Fatalf("Run: %v; %d slots unfinished: %v", err, l.left, open)
			}
			for _, s := range slots {
				if err := s.a.Reset(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestAsyncCallStartErrors: a call refused at Start (an expired deadline,
// a closed client) does not run done and can be started again.
func TestAsyncCallStartErrors(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	c := h.dial()
	g := v1.NewGreeterClient(c)
	a := wire.NewArena()
	defer a.Reset()
	ran := 0
	call := g.NewSayHelloCall(a, func(*v1.HelloReply, error) { ran++ })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := v1.NewHelloRequest(a)
	req.SetName("x")
	if err := call.Start(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled context: %v", err)
	}
	_ = c.Close()
	if err := call.Start(context.Background(), req); !errors.Is(err, service.ErrClientClosed) {
		t.Fatalf("Start on a closed client: %v", err)
	}
	if ran != 0 {
		t.Fatalf("done ran %d times", ran)
	}
}

// TestAsyncCallAllocs: warm reusable calls (a closed loop of Start from
// done, run by Client.Run) allocate nothing per call, on either side.
func TestAsyncCallAllocsReuse(t *testing.T) {
	if testing.Short() || raceEnabled || mem.Checked {
		t.Skip("short, or instrumented (race detector, cfcheck): allocations are counted without them")
	}
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	c := h.dial()
	g := v1.NewGreeterClient(c)
	a := wire.NewArena()
	defer a.Reset()
	var (
		left   int
		cancel context.CancelFunc
		call   *service.AsyncCall[*v1.HelloReply]
	)
	issue := func() {
		req := v1.NewLookupRequest(a)
		req.SetId(uint64(left))
		if err := call.Start(context.Background(), req); err != nil {
			t.Error(err)
			cancel()
		}
	}
	call = g.NewLookupCall(a, func(resp *v1.HelloReply, err error) {
		if err == nil && resp.GetSeq() != uint64(left) {
			err = fmt.Errorf("seq %d, want %d", resp.GetSeq(), left)
		}
		if err == nil {
			err = a.Reset()
		}
		if err != nil {
			t.Error(err)
			cancel()
			return
		}
		if left--; left == 0 {
			cancel()
			return
		}
		issue()
	})
	run := func(n int) {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		left = n
		issue()
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	run(1000)
	// As TestAsyncCallAllocs: the best of a few runs.
	const n = 5000
	best := -1.0
	for i := 0; i < 5 && best != 0; i++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		run(n)
		runtime.ReadMemStats(&after)
		if per := float64(after.Mallocs-before.Mallocs) / n; best < 0 || per < best {
			best = per
		}
	}
	if best > 0.01 {
		t.Errorf("%.3f allocations per call", best)
	}
}

// TestAsyncCallRebind: a server that forgot the binding (a new Server on
// the same Nexus, as after a restart) fails the reusable call's request
// sent on the fast path with FailedPrecondition, as InvokeAsync's; the
// call's next Start binds again and succeeds.
func TestAsyncCallRebind(t *testing.T) {
	gs := newGreeterV1()
	h := newHarness(t, netKind{}, registerV1(gs))
	c := h.dial()
	g := v1.NewGreeterClient(c)
	a := wire.NewArena()
	defer a.Reset()
	ctx, cancel := workloadCtx(t)
	defer cancel()
	var (
		got  []string
		call *service.AsyncCall[*v1.HelloReply]
	)
	start := func(name string) {
		req := v1.NewHelloRequest(a)
		req.SetName(name)
		if err := call.Start(context.Background(), req); err != nil {
			t.Error(err)
			cancel()
		}
	}
	call = g.NewSayHelloCall(a, func(resp *v1.HelloReply, err error) {
		if err != nil {
			got = append(got, service.CodeOf(err).String())
		} else {
			msg, _ := resp.GetMessage()
			got = append(got, strings.Clone(msg)) // msg aliases a until Reset
		}
		if err := a.Reset(); err != nil {
			t.Error(err)
		}
		switch len(got) {
		case 1:
			srv2, err := service.NewServer(h.srvNx)
			if err == nil {
				err = v1.RegisterCalcServer(srv2, calc{}) // takes handle 0
			}
			if err == nil {
				err = v1.RegisterGreeterServer(srv2, gs)
			}
			if err != nil {
				t.Error(err)
				cancel()
				return
			}
			start("b")
		case 2:
			start("c")
		default:
			cancel()
		}
	})
	start("a")
	if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	want := []string{"hello, a", service.FailedPrecondition.String(), "hello, c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestIsBackground: the fast paths' test for context.Background() accepts
// it and nothing else that could carry a deadline, a cancellation or
// values.
func TestIsBackground(t *testing.T) {
	if !service.IsBackground(context.Background()) {
		t.Fatal("context.Background() not recognized")
	}
	var bg context.Context = context.Background()
	if !service.IsBackground(bg) {
		t.Fatal("a copy of context.Background() not recognized")
	}
	dl, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cc, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	type key struct{}
	for name, ctx := range map[string]context.Context{
		"WithTimeout":   dl,
		"WithCancel":    cc,
		"WithValue":     context.WithValue(context.Background(), key{}, 1),
		"WithoutCancel": context.WithoutCancel(cc),
		"metadata":      service.WithMetadata(context.Background(), service.Metadata{{Key: "k", Value: "v"}}),
	} {
		if service.IsBackground(ctx) {
			t.Errorf("%s taken for context.Background()", name)
		}
	}
}

// TestAsyncCallRequestBytes1: a generated NewEchoCall writes its *Blob
// requests itself (service.RequestBytes1: the field's place taken from
// the request it was prepared with); a request of another type, once the
// call is prepared, goes the general way and is still sent (here a
// HelloRequest, whose string field 1 the server reads as Blob's bytes
// field 1); every echo is checked.
func TestAsyncCallRequestBytes1(t *testing.T) {
	h := newHarness(t, netKind{}, func(srv *service.Server) error { return typedpb.RegisterEchoServer(srv, &lockstepEcho{}) })
	c := h.dial()
	ctx, cancel := workloadCtx(t)
	defer cancel()
	ra := wire.NewArena()
	defer func() { _ = ra.Reset() }()
	type step struct {
		req  wire.Object
		want string
	}
	var steps []step
	for i, v := range []string{"bind", "prepare", "sixteen bytes...", "thirty-two bytes, the small RPC.", "", "x", strings.Repeat("long ", 200)} {
		b := typedpb.NewBlob(ra)
		b.SetData([]byte(v))
		steps = append(steps, step{b, v})
		if i == 3 { // another request type between Blobs
			hr := v1.NewHelloRequest(ra)
			hr.SetName("a HelloRequest")
			steps = append(steps, step{hr, "a HelloRequest"})
		}
	}
	i := 0
	var failed error
	var call *service.AsyncCall[*typedpb.Blob]
	call = typedpb.NewEchoClient(c).NewEchoCall(wire.NewArena(), func(resp *typedpb.Blob, err error) {
		if err == nil && string(resp.GetData()) != steps[i].want {
			err = fmt.Errorf("step %d: %q back, want %q", i, resp.GetData(), steps[i].want)
		}
		if err != nil {
			failed = err
			cancel()
			return
		}
		if i++; i == len(steps) {
			cancel()
			return
		}
		if err := call.Start(context.Background(), steps[i].req); err != nil {
			failed = err
			cancel()
		}
	})
	call.ResetAfterDone()
	if err := call.Start(context.Background(), steps[0].req); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if failed != nil || i != len(steps) {
		t.Fatalf("%d of %d steps: %v", i, len(steps), failed)
	}
}
