package rpc_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

const (
	tInline       = 20 // echo through InlineResp/RespondInline, RespondBytes when it does not fit
	tInlineWorker = 21 // a worker: InlineResp must be nil
	tInlineMisuse = 22 // RespondInline beyond the room, then InlineResp left unused
)

// inlineErrs collects what the handlers of TestRespondInline found wrong.
type inlineErrs struct {
	mu         sync.Mutex
	errs       []error
	inl, bytes int
}

func (e *inlineErrs) add(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

// TestRespondInline: a dispatch handler writes its response into the
// record InlineResp gives and answers with RespondInline (no copy), for
// every size up to the room; a larger one answers with RespondBytes and
// the unused room goes back to the endpoint; RespondInline beyond the
// room or without InlineResp is ErrTooLarge and leaves the request to be
// answered; a worker gets no room. Every echo is checked, over memnet with
// loss and reordering (retransmitted responses come from the record), and
// every pool returns to zero (memtest).
func TestRespondInline(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 17})
	cli, srv, _ := newPair(t, opts{net: n, maxPayload: 1500, ep: rpc.EndpointConfig{RTO: 2 * time.Millisecond}})
	var e inlineErrs
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.nx.Register(tInline, rpc.Dispatch, func(r *rpc.Request) {
		b := r.InlineResp()
		if len(b) != rpc.InlineMax {
			e.add(fmt.Errorf("InlineResp: %d bytes of room, want %d", len(b), rpc.InlineMax))
		}
		d := r.Data()
		if len(d) > len(b) {
			e.mu.Lock()
			e.bytes++
			e.mu.Unlock()
			_ = r.RespondBytes(d)
			return
		}
		e.mu.Lock()
		e.inl++
		e.mu.Unlock()
		if err := r.RespondInline(copy(b, d)); err != nil {
			e.add(err)
		}
	}))
	must(srv.nx.Register(tInlineWorker, rpc.Worker, func(r *rpc.Request) {
		if b := r.InlineResp(); b != nil {
			e.add(errors.New("a worker got InlineResp room"))
		}
		if err := r.RespondInline(0); !errors.Is(err, rpc.ErrTooLarge) {
			e.add(fmt.Errorf("worker RespondInline: %v, want ErrTooLarge", err))
		}
		_ = r.RespondBytes(r.Data())
	}))
	must(srv.nx.Register(tInlineMisuse, rpc.Dispatch, func(r *rpc.Request) {
		if err := r.RespondInline(1); !errors.Is(err, rpc.ErrTooLarge) {
			e.add(fmt.Errorf("RespondInline without InlineResp: %v, want ErrTooLarge", err))
		}
		b := r.InlineResp()
		if err := r.RespondInline(len(b) + 1); !errors.Is(err, rpc.ErrTooLarge) {
			e.add(fmt.Errorf("RespondInline beyond the room: %v, want ErrTooLarge", err))
		}
		_ = r.RespondBytes(r.Data()) // the room is left unused
	}))
	s := cli.connect(t, srv.nx, 1)
	n.SetFaults(memnet.Faults{Loss: 0.05, Duplicate: 0.2, Reorder: 0.2, ReorderDelay: 200 * time.Microsecond})
	sizes := make([]int, 300)
	for i := range sizes {
		sizes[i] = 8 + (i*37)%(2*rpc.InlineMax) // both sides of InlineMax
	}
	for _, typ := range []uint8{tInline, tInlineWorker, tInlineMisuse} {
		callMany(t, cli, []rpc.Session{s}, typ, sizes, 60*time.Second)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, err := range e.errs {
		t.Error(err)
	}
	if e.inl == 0 || e.bytes == 0 {
		t.Fatalf("%d inline and %d copied answers: both sides of InlineMax must be served", e.inl, e.bytes)
	}
}

// TestEnqueueInline: requests written into the endpoint's send record
// (InlineReq) and enqueued from it (EnqueueInline) for every size up to
// the room, echoed and checked under loss and reordering (retransmissions
// come from the record); the misuses (n beyond the room, an unknown
// session) fail with their errors and keep the room; every pool returns to zero (memtest).
func TestEnqueueInline(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 23})
	cli, srv, _ := newPair(t, opts{net: n, maxPayload: 1500, ep: rpc.EndpointConfig{RTO: 2 * time.Millisecond}})
	s := cli.connect(t, srv.nx, 1)
	n.SetFaults(memnet.Faults{Loss: 0.05, Duplicate: 0.2, Reorder: 0.2, ReorderDelay: 200 * time.Microsecond})
	ep := cli.ep
	b := ep.InlineReq()
	if len(b) != rpc.InlineMax {
		t.Fatalf("InlineReq: %d bytes of room, want %d", len(b), rpc.InlineMax)
	}
	if err := ep.EnqueueInline(s, tEcho, len(b)+1, func(*rpc.Response) {}); !errors.Is(err, rpc.ErrTooLarge) {
		t.Fatalf("EnqueueInline beyond the room: %v, want ErrTooLarge", err)
	}
	if err := ep.EnqueueInline(s+7, tEcho, 8, func(*rpc.Response) {}); !errors.Is(err, rpc.ErrNoSession) {
		t.Fatalf("EnqueueInline on no session: %v, want ErrNoSession", err)
	}
	pending := 0
	var firstErr error
	for i := 0; i < 300; i++ {
		want := payload(nextID(), 8+(i*37)%(rpc.InlineMax-7))
		room := ep.InlineReq()
		if len(room) != rpc.InlineMax || &room[0] != &b[0] && i == 0 {
			t.Fatalf("request %d: InlineReq gave %d bytes (or not the room kept by the failed calls)", i, len(room))
		}
		pending++
		err := ep.EnqueueInline(s, tEcho, copy(room, want), func(r *rpc.Response) {
			pending--
			if r.Err == nil && !bytes.Equal(r.Data(), want) {
				r.Err = errors.New("echo mismatch")
			}
			if r.Err != nil && firstErr == nil {
				firstErr = r.Err
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cli.runUntil(t, 60*time.Second, func() bool { return pending == 0 })
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}
