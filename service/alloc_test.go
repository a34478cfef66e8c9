package service_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestCallAllocs: a warm typed call without deadline, metadata or
// interceptors allocates nothing, on either side (AllocsPerRun counts
// every goroutine's allocations: the client's and the server's loops too).
func TestCallAllocs(t *testing.T) {
	if testing.Short() || raceEnabled || mem.Checked {
		t.Skip("short, or instrumented (race detector, cfcheck): allocations are counted without them")
	}
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	ctx := context.Background()
	call := func() {
		req := v1.NewLookupRequest(a)
		req.SetId(77)
		resp, err := g.Lookup(ctx, a, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetSeq() != 77 {
			t.Fatal("bad reply")
		}
		_ = a.Reset()
	}
	for i := 0; i < 1000; i++ {
		call()
	}
	if n := testing.AllocsPerRun(2000, call); n > 0.5 {
		t.Errorf("%.2f allocations per call", n)
	}
}

// TestDeadlineCallAllocs: a warm call whose ctx has a deadline (and so
// also a call id) allocates nothing either: the server carries the
// deadline in the handler's context without context.WithTimeout, and
// registers no dispatch-mode call for cancellation.
func TestDeadlineCallAllocs(t *testing.T) {
	if testing.Short() || raceEnabled || mem.Checked {
		t.Skip("short, or instrumented (race detector, cfcheck): allocations are counted without them")
	}
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call := func() {
		req := v1.NewLookupRequest(a)
		req.SetId(77)
		resp, err := g.Lookup(ctx, a, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetSeq() != 77 {
			t.Fatal("bad reply")
		}
		_ = a.Reset()
	}
	for i := 0; i < 1000; i++ {
		call()
	}
	if n := testing.AllocsPerRun(2000, call); n > 0.5 {
		t.Errorf("%.2f allocations per call", n)
	}
}

// TestAsyncCallAllocs: warm asynchronous calls (a closed loop of
// LookupAsync from done functions, run by Client.Run) allocate nothing
// per call, on either side.
func TestAsyncCallAllocs(t *testing.T) {
	if testing.Short() || raceEnabled || mem.Checked {
		t.Skip("short, or instrumented (race detector, cfcheck): allocations are counted without them")
	}
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	c := h.dial()
	g := v1.NewGreeterClient(c)
	a := wire.NewArena()
	defer a.Reset()
	run := func(n int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		left := n
		var done func(*v1.HelloReply, error)
		issue := func() {
			req := v1.NewLookupRequest(a)
			req.SetId(uint64(left))
			if err := g.LookupAsync(ctx, a, req, done); err != nil {
				t.Error(err)
				cancel()
			}
		}
		done = func(resp *v1.HelloReply, err error) {
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
		}
		issue()
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	run(1000)
	// run itself allocates a few objects (its context and closures). An
	// endpoint's loop that finds nothing to do for a while sleeps in the
	// datapath's Wait, which may allocate (a timer): on a loaded machine
	// the server's loop does so between calls now and then, which is not
	// the calls' doing. The best of a few runs is what the calls cost.
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
