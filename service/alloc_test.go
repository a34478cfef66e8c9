package service_test

import (
	"context"
	"testing"

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
