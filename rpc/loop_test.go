package rpc_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
)

const tLoop = 24 // echo through a RegisterLoop handler's Loop.RespondInline

// TestLoop: Endpoint.Loop holds the endpoint only inside its callbacks, on
// the loop's goroutine; a RegisterLoop handler gets its endpoint held and
// answers through Loop.RespondInline; continuations re-issue requests
// through Loop.EnqueueInline, every echo checked; meanwhile another
// goroutine still gets no Loop and ErrConcurrentUse from the checked
// calls; a Loop kept past its callback takes the checked path.
func TestLoop(t *testing.T) {
	cli, srv, _ := newPair(t, opts{maxPayload: 1500})
	if err := srv.nx.RegisterLoop(tLoop, nil, nil); !errors.Is(err, rpc.ErrConfig) {
		t.Fatalf("RegisterLoop(nil): %v, want ErrConfig", err)
	}
	var mu sync.Mutex
	var srvErrs []error
	inlined := 0
	bad := func(err error) {
		mu.Lock()
		srvErrs = append(srvErrs, err)
		mu.Unlock()
	}
	if err := srv.nx.RegisterLoop(tLoop, func(l rpc.Loop, r *rpc.Request) {
		if l.Endpoint() != r.Endpoint() {
			bad(errors.New("the handler's Loop is not its request's endpoint"))
		}
		if l2, ok := r.Endpoint().Loop(); !ok || l2 != l {
			bad(fmt.Errorf("Endpoint.Loop in a RegisterLoop handler: %v, %v", l2, ok))
		}
		sent, err := l.RespondInline(r, copyWriter{p: r.Data()})
		if err != nil {
			bad(err)
		}
		if !sent {
			_ = r.RespondBytes(r.Data()) // larger than the room
			return
		}
		mu.Lock()
		inlined++
		mu.Unlock()
		if _, err := l.RespondInline(r, copyWriter{p: r.Data()}); !errors.Is(err, rpc.ErrAlreadyResponded) {
			bad(fmt.Errorf("second Loop.RespondInline: %v, want ErrAlreadyResponded", err))
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	s := cli.connect(t, srv.nx, 1)
	ep := cli.ep
	if _, ok := ep.Loop(); ok {
		t.Fatal("Endpoint.Loop outside any callback: held")
	}

	const calls = 200
	var (
		pending, done int
		firstErr      error
		kept          rpc.Loop
		other         = make(chan error)
	)
	var issue func(l rpc.Loop, i int)
	issue = func(l rpc.Loop, i int) {
		want := payload(nextID(), 8+(i*53)%(2*rpc.InlineMax))
		cont := func(r *rpc.Response) {
			pending--
			done++
			if r.Err == nil && !bytes.Equal(r.Data(), want) {
				r.Err = fmt.Errorf("call %d: echo mismatch", i)
			}
			if r.Err != nil && firstErr == nil {
				firstErr = r.Err
			}
			l, ok := ep.Loop()
			if !ok {
				firstErr = errors.New("Endpoint.Loop in a continuation: not held")
				return
			}
			kept = l
			if i == calls/2 {
				// Another goroutine, while this callback runs.
				go func() {
					if _, ok := ep.Loop(); ok {
						other <- errors.New("Endpoint.Loop from another goroutine: held")
						return
					}
					_, err := ep.EnqueueInline(s, tLoop, copyWriter{p: make([]byte, 8)}, nil)
					other <- err
				}()
				if err := <-other; !errors.Is(err, rpc.ErrConcurrentUse) {
					firstErr = fmt.Errorf("EnqueueInline from another goroutine during a callback: %v, want ErrConcurrentUse", err)
				}
			}
			if i+1 < calls {
				issue(l, i+1)
			}
		}
		var sent bool
		var err error
		if l.Endpoint() != nil {
			sent, err = l.EnqueueInline(s, tLoop, copyWriter{p: want}, cont)
		} else {
			sent, err = ep.EnqueueInline(s, tLoop, copyWriter{p: want}, cont)
		}
		if err == nil && !sent {
			err = ep.Enqueue(s, tLoop, rpc.BytesMsg(want), cont)
		}
		if err != nil {
			firstErr = fmt.Errorf("call %d: %v", i, err)
			return
		}
		pending++
	}
	issue(rpc.Loop{}, 0)
	cli.runUntil(t, 60*time.Second, func() bool { return firstErr != nil || done == calls })
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	// A Loop kept past its callback (against its contract) takes the
	// checked path: from the goroutine that may enter, it works.
	got := false
	if sent, err := kept.EnqueueInline(s, tLoop, copyWriter{p: payload(nextID(), 16)}, func(*rpc.Response) { got = true }); err != nil || !sent {
		t.Fatalf("a kept Loop outside any callback: %v, %v; want the checked path's success", sent, err)
	}
	cli.runUntil(t, 60*time.Second, func() bool { return got })
	mu.Lock()
	defer mu.Unlock()
	for _, err := range srvErrs {
		t.Error(err)
	}
	if inlined == 0 {
		t.Fatal("no response went through Loop.RespondInline")
	}
}

const tLoopPanic = 25 // a RegisterLoop handler that panics on some requests

// TestRegisterLoopRecovered: a RegisterLoop handler's panic ends in its
// recovered function (on the loop, the Loop still valid, the request
// still to be answered), which answers it; every other request, in the
// same batch or not, is echoed.
func TestRegisterLoopRecovered(t *testing.T) {
	cli, srv, _ := newPair(t, opts{maxPayload: 1500})
	var mu sync.Mutex
	var srvErrs []error
	recovered := 0
	if err := srv.nx.RegisterLoop(tLoopPanic, func(l rpc.Loop, r *rpc.Request) {
		if r.Data()[8] == 'P' {
			panic("panicked on purpose")
		}
		if sent, err := l.RespondInline(r, copyWriter{p: r.Data()}); !sent || err != nil {
			_ = r.RespondBytes(r.Data())
		}
	}, func(l rpc.Loop, r *rpc.Request, p any) {
		mu.Lock()
		recovered++
		if l.Endpoint() != r.Endpoint() || p != "panicked on purpose" {
			srvErrs = append(srvErrs, fmt.Errorf("recovered with %v, %v", l.Endpoint() == r.Endpoint(), p))
		}
		if _, ok := r.Endpoint().Loop(); !ok {
			srvErrs = append(srvErrs, errors.New("recovered: the endpoint not held"))
		}
		mu.Unlock()
		_ = r.RespondBytes([]byte("recovered"))
	}); err != nil {
		t.Fatal(err)
	}
	s := cli.connect(t, srv.nx, 1)
	const calls = 64
	pending, panics := 0, 0
	var firstErr error
	for i := 0; i < calls; i++ {
		want := payload(nextID(), 24)
		if i%3 == 1 {
			want[8] = 'P'
			panics++
		} else {
			want[8] = 'G'
		}
		pending++
		if err := cli.ep.Enqueue(s, tLoopPanic, rpc.BytesMsg(want), func(r *rpc.Response) {
			pending--
			exp := want
			if want[8] == 'P' {
				exp = []byte("recovered")
			}
			if r.Err == nil && !bytes.Equal(r.Data(), exp) {
				r.Err = fmt.Errorf("got %q, want %q", r.Data(), exp)
			}
			if r.Err != nil && firstErr == nil {
				firstErr = r.Err
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	cli.runUntil(t, 60*time.Second, func() bool { return pending == 0 })
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, err := range srvErrs {
		t.Error(err)
	}
	if recovered != panics {
		t.Fatalf("%d panics recovered, want %d", recovered, panics)
	}
}
