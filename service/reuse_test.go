package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// reuseData are the requests of the reuse tests, in order: each response
// must carry exactly its request's data, so a message made empty wrongly
// (a field left from the previous call) fails them.
func reuseData() [][]byte {
	long := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB: several packets, zero-copy fields
	return [][]byte{[]byte("first"), nil, long, []byte("after the long one"), nil, []byte("x"), long, nil, []byte("thirty-two bytes, the small RPC.")}
}

// keepEcho echoes, and records the messages the Direct binding gave it and
// whether the response was empty on entry.
type keepEcho struct {
	typedpb.UnimplementedEchoServer
	mu          sync.Mutex
	reqs, resps map[*typedpb.Blob]int
	notEmpty    int
}

func (s *keepEcho) Echo(_ context.Context, req, resp *typedpb.Blob) error {
	s.mu.Lock()
	s.reqs[req]++
	s.resps[resp]++
	if resp.HasData() || len(resp.GetData()) != 0 {
		s.notEmpty++
	}
	s.mu.Unlock()
	resp.SetData(req.GetData())
	return nil
}

// TestDirectKeepsMessages: the generated Direct binding decodes every
// request of the common path into one kept request message and answers
// with one kept response message (DirectKeep), each made empty again per
// call: calls served one after the other by the server's loop see the
// same two messages, the response empty on entry, and every echo is
// exact (empty after non-empty, inline after zero-copy and back).
func TestDirectKeepsMessages(t *testing.T) {
	s := &keepEcho{reqs: map[*typedpb.Blob]int{}, resps: map[*typedpb.Blob]int{}}
	h := newHarness(t, netKind{}, func(srv *service.Server) error { return typedpb.RegisterEchoServer(srv, s) })
	cl := typedpb.NewEchoClient(h.dial())
	a := wire.NewArena()
	n := 0
	for round := 0; round < 3; round++ {
		for _, d := range reuseData() {
			req := typedpb.NewBlob(a)
			req.SetData(d)
			resp, err := cl.Echo(context.Background(), a, req)
			if err != nil || !bytes.Equal(resp.GetData(), d) {
				t.Fatalf("call %d (%d bytes): err %v, %d bytes back", n, len(d), err, len(resp.GetData()))
			}
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) != 1 || len(s.resps) != 1 {
		t.Fatalf("%d calls saw %d request and %d response messages, want 1 each (kept)", n, len(s.reqs), len(s.resps))
	}
	for r := range s.reqs {
		if _, same := s.resps[r]; same {
			t.Fatal("the request and the response are one message")
		}
	}
	if s.notEmpty != 0 {
		t.Fatalf("%d of %d calls got a response message that was not empty", s.notEmpty, n)
	}
	if e := service.ResetErrors(h.srv); e != 0 {
		t.Fatalf("%d call arenas failed their Reset", e)
	}
}

// reuseLoop drives one ResetAfterDone call through reuseData, restarted
// from its done function.
type reuseLoop struct {
	call   *service.AsyncCall[*typedpb.Blob]
	ra     *wire.Arena
	data   [][]byte
	i      int
	seen   map[*typedpb.Blob]int
	slot0  *typedpb.Blob // the message NewBlob makes first in the call's arena after a Reset
	inA    int           // responses that were slot0 (made in the arena)
	err    error
	cancel context.CancelFunc
}

func (l *reuseLoop) start() error {
	if err := l.ra.Reset(); err != nil {
		return err
	}
	req := typedpb.NewBlob(l.ra)
	req.SetData(l.data[l.i%len(l.data)])
	return l.call.Start(context.Background(), req)
}

func (l *reuseLoop) done(resp *typedpb.Blob, err error) {
	want := l.data[l.i%len(l.data)]
	if err == nil && !bytes.Equal(resp.GetData(), want) {
		err = fmt.Errorf("call %d: %d bytes back, want %d", l.i, len(resp.GetData()), len(want))
	}
	if err == nil {
		l.seen[resp]++
		if resp == l.slot0 {
			l.inA++
		}
		l.i++
		if l.i < 3*len(l.data) {
			err = l.start()
			if err == nil {
				return
			}
		}
	}
	l.err = err
	l.cancel()
}

// TestAsyncCallReusesResponse: a generated NewEchoCall with
// ResetAfterDone decodes every response of its common path into the one
// message it keeps (NewAsyncCallReusing), made empty again per response:
// every done sees the same message, not one of the arena's (but for the
// first call's, which binds the method), every echo exact, no arena Reset
// fails and the arena ends holding nothing.
func TestAsyncCallReusesResponse(t *testing.T) {
	h := newHarness(t, netKind{}, func(srv *service.Server) error { return typedpb.RegisterEchoServer(srv, &lockstepEcho{}) })
	c := h.dial()
	ctx, cancel := workloadCtx(t)
	defer cancel()
	a := wire.NewArena()
	l := &reuseLoop{ra: wire.NewArena(), data: reuseData(), seen: map[*typedpb.Blob]int{}, cancel: cancel}
	l.slot0 = typedpb.NewBlob(a)
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	l.call = typedpb.NewEchoClient(c).NewEchoCall(a, l.done)
	l.call.ResetAfterDone()
	if err := l.start(); err != nil {
		t.Fatal(err)
	}
	err := c.Run(ctx)
	if l.err != nil {
		t.Fatal(l.err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v after %d calls", err, l.i)
	}
	// The first Start binds the method (InvokeAsync's path, a message made
	// by NewBlob); every other response is the kept one.
	if l.i != 3*len(l.data) || len(l.seen) > 2 {
		t.Fatalf("%d calls saw %d response messages, want at most 2", l.i, len(l.seen))
	}
	kept := 0
	for _, n := range l.seen {
		kept = max(kept, n)
	}
	if kept < l.i-1 || l.inA > 1 {
		t.Fatalf("the kept message answered %d of %d calls, %d responses were made in the arena", kept, l.i, l.inA)
	}
	if n := l.call.ResetErrors(); n != 0 {
		t.Fatalf("%d arena Resets failed", n)
	}
	if n := a.Held(); n != 0 {
		t.Fatalf("the arena holds %d references after the last done", n)
	}
	_ = l.ra.Reset()
}
