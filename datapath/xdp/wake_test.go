package xdp_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
)

// TestWake: Wake from another goroutine ends a Wait that would otherwise
// sleep for a minute, in both waiting modes (ppoll on the socket and the
// eventfd; busy polling); a Wake before Wait makes the next Wait return at
// once; after Close, Wake reports ErrClosed. The bounds only detect a Wait
// that was not woken (no timing is asserted).
func TestWake(t *testing.T) {
	tp := newTopo(t, 1500)
	for _, busy := range []bool{false, true} {
		var ep *xdp.Endpoint
		pool := tp.pool(t, "wake")
		if err := netns.Do(tp.pair.A.NS, func() (err error) {
			ep, err = xdp.Open(datapath.Config{Local: netip.AddrPortFrom(tp.pair.A.Addr4, 0), Pool: pool, BusyPoll: busy, Options: xdp.Options{Interface: tp.pair.A.If}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			time.Sleep(20 * time.Millisecond)
			done <- ep.Wake()
		}()
		t0 := time.Now()
		if err := ep.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d > 30*time.Second {
			t.Fatalf("busy=%v: Wait returned after %v: Wake did not wake it", busy, d)
		}
		if err := ep.Wake(); err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		if err := ep.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d > 30*time.Second {
			t.Fatalf("busy=%v: a Wake before Wait was lost (%v)", busy, d)
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ep.Wake(); !errors.Is(err, datapath.ErrClosed) {
			t.Fatalf("Wake after Close: %v, want ErrClosed", err)
		}
	}
}
