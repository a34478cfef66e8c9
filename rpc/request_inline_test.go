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
	tInline       = 20 // echo through RespondInline, RespondBytes when declined
	tInlineWorker = 21 // a worker: RespondInline declines
	tInlineOver   = 22 // a writer claiming more than the room, then RespondBytes
)

// copyWriter writes p (declining when it does not fit) and records the
// room it was given.
type copyWriter struct {
	p    []byte
	room *int
}

func (w copyWriter) WriteInline(dst []byte) int {
	if w.room != nil {
		*w.room = len(dst)
	}
	if len(w.p) > len(dst) {
		return -1
	}
	return copy(dst, w.p)
}

// overWriter claims one byte more than its room.
type overWriter struct{}

func (overWriter) WriteInline(dst []byte) int { return len(dst) + 1 }

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

// TestRespondInline: a dispatch handler's response written by an
// InlineWriter into the record it is sent from, for every size up to the
// room (InlineMax); a writer that declines (too large) or claims more than
// the room leaves the request unanswered, answered then by RespondBytes; a
// worker's RespondInline declines. Every echo is checked, over memnet with
// loss, duplication and reordering (retransmitted responses come from the
// record), and every pool returns to zero (memtest).
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
		room := 0
		sent, err := r.RespondInline(copyWriter{r.Data(), &room})
		if room != rpc.InlineMax {
			e.add(fmt.Errorf("RespondInline: %d bytes of room, want %d", room, rpc.InlineMax))
		}
		if err != nil {
			e.add(err)
		}
		e.mu.Lock()
		if sent {
			e.inl++
		} else {
			e.bytes++
		}
		e.mu.Unlock()
		if !sent {
			_ = r.RespondBytes(r.Data())
		}
	}))
	must(srv.nx.Register(tInlineWorker, rpc.Worker, func(r *rpc.Request) {
		if sent, err := r.RespondInline(copyWriter{p: r.Data()}); sent || err != nil {
			e.add(fmt.Errorf("worker RespondInline: %v, %v; want declined", sent, err))
		}
		_ = r.RespondBytes(r.Data())
	}))
	must(srv.nx.Register(tInlineOver, rpc.Dispatch, func(r *rpc.Request) {
		if sent, err := r.RespondInline(overWriter{}); sent || err != nil {
			e.add(fmt.Errorf("RespondInline beyond the room: %v, %v; want declined", sent, err))
		}
		_ = r.RespondBytes(r.Data())
	}))
	s := cli.connect(t, srv.nx, 1)
	n.SetFaults(memnet.Faults{Loss: 0.05, Duplicate: 0.2, Reorder: 0.2, ReorderDelay: 200 * time.Microsecond})
	sizes := make([]int, 300)
	for i := range sizes {
		sizes[i] = 8 + (i*37)%(2*rpc.InlineMax) // both sides of InlineMax
	}
	for _, typ := range []uint8{tInline, tInlineWorker, tInlineOver} {
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

// TestEnqueueInline: requests written by an InlineWriter into the record
// they are sent from (EnqueueInline), for every size up to the room,
// echoed and checked under loss, duplication and reordering
// (retransmissions come from the record); a writer that declines or
// claims more than the room enqueues nothing (its continuation never
// runs); an unknown session is ErrNoSession without calling the writer;
// every pool returns to zero (memtest).
func TestEnqueueInline(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 23})
	cli, srv, _ := newPair(t, opts{net: n, maxPayload: 1500, ep: rpc.EndpointConfig{RTO: 2 * time.Millisecond}})
	s := cli.connect(t, srv.nx, 1)
	n.SetFaults(memnet.Faults{Loss: 0.05, Duplicate: 0.2, Reorder: 0.2, ReorderDelay: 200 * time.Microsecond})
	ep := cli.ep
	stray := 0
	never := func(*rpc.Response) { stray++ }
	if sent, err := ep.EnqueueInline(s, tEcho, overWriter{}, never); sent || err != nil {
		t.Fatalf("EnqueueInline beyond the room: %v, %v; want declined", sent, err)
	}
	if sent, err := ep.EnqueueInline(s, tEcho, copyWriter{p: make([]byte, rpc.InlineMax+1)}, never); sent || err != nil {
		t.Fatalf("EnqueueInline of a body larger than the room: %v, %v; want declined", sent, err)
	}
	room := -1
	if sent, err := ep.EnqueueInline(s+7, tEcho, copyWriter{[]byte("12345678"), &room}, never); sent || !errors.Is(err, rpc.ErrNoSession) || room != -1 {
		t.Fatalf("EnqueueInline on no session: %v, %v, writer called: %v; want ErrNoSession, not called", sent, err, room != -1)
	}
	pending := 0
	var firstErr error
	for i := 0; i < 300; i++ {
		want := payload(nextID(), 8+(i*37)%(rpc.InlineMax-7))
		pending++
		sent, err := ep.EnqueueInline(s, tEcho, copyWriter{want, &room}, func(r *rpc.Response) {
			pending--
			if r.Err == nil && !bytes.Equal(r.Data(), want) {
				r.Err = errors.New("echo mismatch")
			}
			if r.Err != nil && firstErr == nil {
				firstErr = r.Err
			}
		})
		if err != nil || !sent || room != rpc.InlineMax {
			t.Fatalf("request %d: %v, %v, room %d", i, sent, err, room)
		}
	}
	cli.runUntil(t, 60*time.Second, func() bool { return pending == 0 })
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if stray != 0 {
		t.Fatalf("%d continuations of declined requests ran", stray)
	}
}
