package service_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestAsyncCallLent: a ResetAfterDone call of one bytes field is lent to
// its done function while done runs. done's first Start takes it, a
// second gets ErrCallInFlight; a Start from another goroutine while done
// runs gets ErrCallInFlight, and once done has returned without starting
// it, a Start from anywhere takes it; a Start from done that fails (a
// cancelled context) leaves the call idle, and one that takes
// InvokeAsync's path (a deadline) is delivered as that path delivers.
// (The checked build decodes such a response the general way, which does
// not lend the call: the other goroutine's Start is not tried there.) Every echo is checked, and no arena
// Reset fails.
func TestAsyncCallLent(t *testing.T) {
	h := newHarness(t, netKind{}, func(srv *service.Server) error { return typedpb.RegisterEchoServer(srv, &lockstepEcho{}) })
	c := h.dial()
	ra := wire.NewArena()
	defer func() { _ = ra.Reset() }()
	req := typedpb.NewBlob(ra)
	req.SetData([]byte("thirty-two bytes, the small RPC."))
	dl, dlCancel := context.WithTimeout(context.Background(), time.Hour)
	defer dlCancel()
	gone, goneCancel := context.WithCancel(context.Background())
	goneCancel()

	var (
		step   int
		failed error
		cancel context.CancelFunc
		call   *service.AsyncCall[*typedpb.Blob]
	)
	fail := func(err error) {
		if failed == nil {
			failed = fmt.Errorf("step %d: %w", step, err)
		}
		cancel()
	}
	call = typedpb.NewEchoClient(c).NewEchoCall(wire.NewArena(), func(resp *typedpb.Blob, err error) {
		if err == nil && string(resp.GetData()) != string(req.GetData()) {
			err = fmt.Errorf("%q back", resp.GetData())
		}
		if err != nil {
			fail(err)
			return
		}
		step++
		switch step {
		case 1: // done's Start takes the call; a second one does not
			if err := call.Start(context.Background(), req); err != nil {
				fail(err)
			} else if err := call.Start(context.Background(), req); !errors.Is(err, service.ErrCallInFlight) {
				fail(fmt.Errorf("a second Start from done: %v, want ErrCallInFlight", err))
			}
		case 2: // another goroutine meanwhile: lent to done
			if mem.Checked { // the checked build decodes the general way: the call is not lent
				cancel()
				return
			}
			ch := make(chan error)
			go func() { ch <- call.Start(context.Background(), req) }()
			if err := <-ch; !errors.Is(err, service.ErrCallInFlight) {
				fail(fmt.Errorf("a Start from another goroutine while done runs: %v, want ErrCallInFlight", err))
				return
			}
			cancel() // not started again: idle after done
		case 3: // a Start from done that fails leaves the call idle; then a deadline: InvokeAsync's path
			if err := call.Start(gone, req); !errors.Is(err, context.Canceled) {
				fail(fmt.Errorf("a Start with a cancelled context: %v", err))
			} else if err := call.Start(dl, req); err != nil {
				fail(err)
			}
		case 4: // done after InvokeAsync's path: the common path again
			if err := call.Start(context.Background(), req); err != nil {
				fail(err)
			}
		case 5:
			cancel()
		}
	})
	call.ResetAfterDone()
	run := func(first bool) {
		t.Helper()
		var ctx context.Context
		ctx, cancel = workloadCtx(t)
		defer cancel()
		if err := call.Start(context.Background(), req); err != nil {
			t.Fatalf("Start before run (first %v, after step %d): %v", first, step, err)
		}
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v (step %d, %v)", err, step, failed)
		}
		if failed != nil {
			t.Fatal(failed)
		}
	}
	run(true)  // steps 1 and 2: ends with the call idle
	run(false) // steps 3 to 5: from this goroutine, done returned
	if step != 5 {
		t.Fatalf("%d steps, want 5", step)
	}
	if n := call.ResetErrors(); n != 0 {
		t.Fatalf("%d arena Resets failed", n)
	}
}

// TestAsyncCallLentAllocs: the lent call's round (the borrowing decode,
// done's Start taking the call, the request written in place) allocates
// nothing.
func TestAsyncCallLentAllocs(t *testing.T) {
	if testing.Short() || raceEnabled || mem.Checked {
		t.Skip("short, or instrumented (race detector, cfcheck): allocations are counted without them")
	}
	h := newHarness(t, netKind{}, func(srv *service.Server) error { return typedpb.RegisterEchoServer(srv, &lockstepEcho{}) })
	c := h.dial()
	ra := wire.NewArena()
	defer func() { _ = ra.Reset() }()
	req := typedpb.NewBlob(ra)
	req.SetData([]byte("thirty-two bytes, the small RPC."))
	var (
		left   int
		cancel context.CancelFunc
		call   *service.AsyncCall[*typedpb.Blob]
	)
	call = typedpb.NewEchoClient(c).NewEchoCall(wire.NewArena(), func(resp *typedpb.Blob, err error) {
		if err == nil && string(resp.GetData()) != string(req.GetData()) {
			err = fmt.Errorf("%q back", resp.GetData())
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
		if err := call.Start(context.Background(), req); err != nil {
			t.Error(err)
			cancel()
		}
	})
	call.ResetAfterDone()
	run := func(n int) {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		left = n
		if err := call.Start(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	run(1000)
	const n = 5000
	best := -1.0
	for i := 0; i < 5 && best != 0; i++ { // the best of a few runs (TestAsyncCallAllocsReuse)
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
	if n := call.ResetErrors(); n != 0 {
		t.Fatalf("%d arena Resets failed", n)
	}
}
