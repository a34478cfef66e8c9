package driver

import (
	"sync/atomic"

	"github.com/cornflakes-go/cornflakes/datapath"
)

const (
	guardIdle uint32 = iota
	guardBusy
	guardClosed
)

// Guard turns overlapping calls on an endpoint into datapath.ErrConcurrentUse and
// calls after Close into datapath.ErrClosed. Every endpoint method starts with Enter
// and, when Enter succeeded, ends with Exit; Close ends with ExitClosed.
//
// It is one atomic compare-and-swap per call (about as cheap as an
// uncontended mutex, but it never blocks: a second goroutine gets an error
// instead of waiting). It detects overlapping calls, not every
// cross-goroutine use; the race detector catches the rest in tests.
//
// The zero Guard is idle (open).
type Guard struct{ state atomic.Uint32 }

// Enter marks the endpoint busy. It returns datapath.ErrConcurrentUse if another call
// is in progress and datapath.ErrClosed if the endpoint was closed.
func (g *Guard) Enter() error {
	if g.state.CompareAndSwap(guardIdle, guardBusy) {
		return nil
	}
	if g.state.Load() == guardClosed {
		return datapath.ErrClosed
	}
	return datapath.ErrConcurrentUse
}

// Exit marks the endpoint idle again after a successful Enter.
func (g *Guard) Exit() { g.state.Store(guardIdle) }

// ExitClosed marks the endpoint closed after a successful Enter; every later
// Enter returns datapath.ErrClosed.
func (g *Guard) ExitClosed() { g.state.Store(guardClosed) }

// Closed reports whether ExitClosed was called.
func (g *Guard) Closed() bool { return g.state.Load() == guardClosed }
