package memnet_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
)

// Wake from another goroutine ends a Wait in progress (also with
// BusyPoll); a Wake while no Wait runs ends the next one and is consumed by
// it; after Close it returns ErrClosed.
func TestWake(t *testing.T) {
	const long = 20 * time.Second // a broken Wake shows as a Wait that runs into it
	for _, busy := range []bool{false, true} {
		n := memnet.NewNetwork(memnet.NetworkConfig{})
		e := open(t, n, addrA, datapath.Config{BusyPoll: busy}, memnet.Options{})
		var wg sync.WaitGroup
		wg.Add(1)
		var werr error
		go func() {
			defer wg.Done()
			time.Sleep(10 * time.Millisecond)
			werr = e.Wake()
		}()
		start := time.Now()
		if err := e.Wait(long); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if werr != nil {
			t.Fatalf("busy=%v: Wake while the owner is in Wait: %v", busy, werr)
		}
		if time.Since(start) >= long {
			t.Fatalf("busy=%v: Wait ran into its timeout: Wake did not wake it", busy)
		}

		for i := 0; i < 3; i++ {
			if err := e.Wake(); err != nil {
				t.Fatal(err)
			}
		}
		start = time.Now()
		if err := e.Wait(long); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= long {
			t.Fatalf("busy=%v: a pending wake did not end the next Wait", busy)
		}
		start = time.Now()
		if err := e.Wait(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < 10*time.Millisecond {
			t.Fatalf("busy=%v: the wake was not consumed: Wait returned early on an idle endpoint", busy)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := e.Wake(); !errors.Is(err, datapath.ErrClosed) {
			t.Fatalf("Wake after Close: %v", err)
		}
	}
}
