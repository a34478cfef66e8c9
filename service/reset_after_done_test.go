package service_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// radSlot is one slot of TestAsyncCallResetAfterDone: a reusable call
// whose arena the call resets after each done (ResetAfterDone), started
// again from done, its requests built in an arena of their own.
type radSlot struct {
	l      *asyncLoop
	i, j   int
	a, ra  *wire.Arena
	call   *service.AsyncCall[*v1.HelloReply]
	name   string
	seq    uint64
	dlCtx  context.Context
	viaDL  int // requests started with a deadline (InvokeAsync's path)
	checks int // responses whose fields were checked
}

func (s *radSlot) start() error {
	if err := s.ra.Reset(); err != nil {
		return err
	}
	req := v1.NewHelloRequest(s.ra)
	s.name = fmt.Sprintf("r%d-%d", s.i, s.j)
	if s.j%7 == 3 {
		s.name = "" // the server answers InvalidArgument
	}
	req.SetName(s.name)
	s.seq = uint64(s.i)<<32 | uint64(s.j)
	req.SetSeq(s.seq)
	if s.j%10 == 0 {
		req.SetBlobSize(uint32(2000 + s.i)) // multi-packet on memnet: decoded from a reassembly buffer
	}
	ctx := context.Background()
	if s.j%5 == 2 {
		// A deadline: InvokeAsync's path, whose response message is made
		// in s.a at once, so the arena (and the bytes the current
		// response borrowed) outlives this done.
		ctx = s.dlCtx
		s.viaDL++
	}
	return s.call.Start(ctx, req)
}

func (s *radSlot) done(resp *v1.HelloReply, err error) {
	switch {
	case s.name == "":
		if service.CodeOf(err) != service.InvalidArgument || resp != nil {
			err = fmt.Errorf("empty name: got %v, %v; want InvalidArgument and no response", resp, err)
		} else {
			err = nil
		}
	case err == nil:
		msg, _ := resp.GetMessage()
		blob := resp.GetBlob()
		wantBlob := 0
		if s.j%10 == 0 {
			wantBlob = 2000 + s.i
		}
		if msg != "hello, "+s.name || resp.GetSeq() != s.seq || len(blob) != wantBlob || (wantBlob > 0 && (blob[0] != 'z' || blob[wantBlob-1] != 'z')) {
			err = fmt.Errorf("got %q seq %x blob %d", msg, resp.GetSeq(), len(blob))
		}
		s.checks++
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

// TestAsyncCallResetAfterDone: reusable calls with ResetAfterDone (the
// response decoded borrowing the received buffer, the arena reset by the
// call after done), started again from done on the fast path and, every
// fifth request, with a deadline (InvokeAsync's path: the arena then
// lives past done, holding the borrowed bytes by a reference until its
// next Reset); inline and multi-packet responses and application errors,
// every reply checked, over memnet with loss and over udp. No arena Reset
// may fail (in the checked build: no borrowed buffer released before its
// Reset), every arena ends empty, and every pool returns to zero.
func TestAsyncCallResetAfterDone(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind netKind
	}{{"memnet", netKind{}}, {"memnet-loss", netKind{loss: 0.01}}, {"udp", netKind{udp: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.kind, registerV1(newGreeterV1()))
			c := h.dial(service.WithSessions(4))
			g := v1.NewGreeterClient(c)
			const window, calls = 16, 60
			ctx, cancel := workloadCtx(t)
			defer cancel()
			dlCtx, dlCancel := context.WithTimeout(context.Background(), time.Hour)
			defer dlCancel()
			l := &asyncLoop{g: g, calls: calls, left: window, cancel: cancel}
			slots := make([]*radSlot, window)
			for i := range slots {
				s := &radSlot{l: l, i: i, a: wire.NewArena(), ra: wire.NewArena(), dlCtx: dlCtx}
				s.call = g.NewSayHelloCall(s.a, s.done)
				s.call.ResetAfterDone()
				slots[i] = s
				if err := s.start(); err != nil {
					t.Fatal(err)
				}
			}
			err := c.Run(ctx)
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, e := range l.errs {
				t.Error(e)
			}
			if l.left != 0 {
				t.Fatalf("Run: %v; %d slots unfinished", err, l.left)
			}
			viaDL, checks := 0, 0
			for _, s := range slots {
				if n := s.call.ResetErrors(); n != 0 {
					t.Errorf("slot %d: %d arena Resets failed", s.i, n)
				}
				if n := s.a.Held(); n != 0 {
					t.Errorf("slot %d: the arena holds %d references after the last done", s.i, n)
				}
				viaDL += s.viaDL
				checks += s.checks
				_ = s.ra.Reset()
			}
			if viaDL == 0 || checks < window*calls/2 {
				t.Fatalf("%d requests with a deadline, %d responses checked", viaDL, checks)
			}
		})
	}
}
