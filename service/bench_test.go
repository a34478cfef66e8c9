package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// BenchmarkClosedLoop: window calls kept in flight from one goroutine over
// memnet, client and server in this process: "typed" through LookupAsync
// and Client.Run, "rpc" a raw 16-byte request echoed by a dispatch handler
// through rpc.Endpoint.Enqueue and Run. ns/op is the time of one call with
// both loops sharing the machine; compare the two in the same run.
func BenchmarkClosedLoop(b *testing.B) {
	const window = 32
	b.Run("typed", func(b *testing.B) {
		h := newHarness(b, netKind{}, registerV1(newGreeterV1()))
		c := h.dial(service.WithSessions(window / rpc.DefaultWindow))
		g := v1.NewGreeterClient(c)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n, inflight := 0, 0
		type slot struct {
			a    *wire.Arena
			done func(*v1.HelloReply, error)
		}
		issue := func(s *slot) {
			req := v1.NewLookupRequest(s.a)
			req.SetId(7)
			inflight++
			if err := g.LookupAsync(ctx, s.a, req, s.done); err != nil {
				b.Error(err)
				cancel()
			}
		}
		for i := 0; i < window; i++ {
			s := &slot{a: wire.NewArena()}
			s.done = func(resp *v1.HelloReply, err error) {
				inflight--
				if err != nil || resp.GetSeq() != 7 {
					b.Errorf("%v %v", err, resp)
					cancel()
					return
				}
				_ = s.a.Reset()
				if n++; n < b.N {
					issue(s)
				} else if inflight == 0 {
					cancel()
				}
			}
			defer s.a.Reset()
			issue(s)
		}
		b.ResetTimer()
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
		st := c.Endpoint().Stats()
		b.ReportMetric(float64(st.Proto.Retransmits)/float64(b.N), "retx/op")
	})
	b.Run("rpc", func(b *testing.B) {
		const reqEcho = 9
		h := newHarness(b, netKind{}, func(s *service.Server) error { return nil })
		if err := h.srvNx.Register(reqEcho, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) }); err != nil {
			b.Fatal(err)
		}
		c := h.dial(service.WithSessions(window / rpc.DefaultWindow))
		ep := c.Endpoint()
		_ = c.Close() // the endpoint is this goroutine's now
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sess := make([]rpc.Session, 0, window/rpc.DefaultWindow)
		for i := 0; i < window/rpc.DefaultWindow; i++ {
			s, err := ep.Connect(h.srvNx.Addr(), 1)
			if err != nil {
				b.Fatal(err)
			}
			if err := ep.WaitConnected(ctx, s); err != nil {
				b.Fatal(err)
			}
			sess = append(sess, s)
		}
		req := make([]byte, 16)
		n, inflight, next := 0, 0, 0
		var cont func(*rpc.Response)
		issue := func() {
			inflight++
			s := sess[next]
			next = (next + 1) % len(sess)
			if err := ep.Enqueue(s, reqEcho, rpc.BytesMsg(req), cont); err != nil {
				b.Error(err)
				cancel()
			}
		}
		cont = func(r *rpc.Response) {
			inflight--
			if r.Err != nil || len(r.Data()) != 16 {
				b.Errorf("%v", r.Err)
				cancel()
				return
			}
			if n++; n < b.N {
				issue()
			} else if inflight == 0 {
				cancel()
			}
		}
		for i := 0; i < window; i++ {
			issue()
		}
		b.ResetTimer()
		if err := ep.Run(ctx); !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
		b.ReportMetric(float64(ep.Stats().Proto.Retransmits)/float64(b.N), "retx/op")
	})
}
