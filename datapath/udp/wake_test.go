package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// Wake from another goroutine ends a Wait in progress; a Wake while no
// Wait runs ends the next one at once and is consumed by it.
func TestWake(t *testing.T) {
	const long = 20 * time.Second // a broken Wake shows as a Wait that runs into it
	e := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})

	t.Run("during Wait", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		var werr error
		go func() {
			defer wg.Done()
			time.Sleep(10 * time.Millisecond) // usually inside ppoll by then; either order must work
			werr = e.Wake()
		}()
		start := time.Now()
		if err := e.Wait(long); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if werr != nil {
			t.Fatalf("Wake while the owner is in Wait: %v", werr)
		}
		if time.Since(start) >= long {
			t.Fatal("Wait ran into its timeout: Wake did not wake it")
		}
	})

	t.Run("before Wait", func(t *testing.T) {
		for i := 0; i < 3; i++ { // several wakes collapse into one
			if err := e.Wake(); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := e.Wait(long); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= long {
			t.Fatal("a pending wake did not end the next Wait")
		}
		// Consumed: the next Wait on an idle socket sleeps its timeout.
		start = time.Now()
		if err := e.Wait(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < 10*time.Millisecond {
			t.Fatal("the wake was not drained: Wait returned early on an idle socket")
		}
	})
}

// Wake races with Close from other goroutines: every call returns nil or
// ErrClosed (never writes to a closed, possibly reused, descriptor), and
// Close closes the eventfd.
func TestWakeClose(t *testing.T) {
	pool := memtest.NewPool(t, mem.PoolConfig{Name: t.Name()})
	e, err := Open(datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	fd := e.wake.Fd()
	link := fmt.Sprintf("/proc/self/fd/%d", fd)
	if target, err := os.Readlink(link); err != nil || target != "anon_inode:[eventfd]" {
		t.Fatalf("wake descriptor %d: %q, %v", fd, target, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*1000)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if err := e.Wake(); err != nil {
					errs <- err
				}
			}
		}()
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, datapath.ErrClosed) {
			t.Fatalf("Wake racing Close: %v", err)
		}
	}
	if err := e.Wake(); !errors.Is(err, datapath.ErrClosed) {
		t.Fatalf("Wake after Close: %v", err)
	}
	if e.wake.Fd() != -1 {
		t.Fatalf("wake descriptor %d still set after Close", e.wake.Fd())
	}
	// The number may have been reused by another open since (tests in this
	// package do not run in parallel, so only a runtime descriptor could).
	if target, err := os.Readlink(link); err == nil && target == "anon_inode:[eventfd]" {
		t.Fatalf("eventfd %d still open after Close", fd)
	}
}
