// Package cornflakes holds the error identities that every layer of
// Cornflakes for Go shares. Each package keeps its own sentinel errors with
// messages that name the package (mem.ErrClosed, datapath.ErrClosed,
// rpc.ErrClosed, ...), and each of those wraps one identity here, so a
// caller that does not care which layer reported a condition tests for it
// once:
//
//	if errors.Is(err, cornflakes.ErrClosed) { ... }
//
// The applications' packages are wire (messages), mem (registered memory),
// datapath and its kinds (packets), rpc (the transport), service (typed
// services) and naos (Go values without serialization); docs/ARCHITECTURE.md
// draws the layers.
package cornflakes

import "errors"

// The shared conditions. A package's own sentinel for one of them matches
// both itself and the identity here with errors.Is.
var (
	// ErrClosed: the object (pool, space, endpoint, connection) is closed.
	ErrClosed = errors.New("cornflakes: closed")
	// ErrConcurrentUse: an object owned by one goroutine was called from a
	// second goroutine while a call was in progress.
	ErrConcurrentUse = errors.New("cornflakes: single-goroutine object used by two goroutines at once")
	// ErrTooLarge: a size over a configured or format limit (an allocation,
	// a packet, a message).
	ErrTooLarge = errors.New("cornflakes: too large")
	// ErrConfig: an invalid configuration was passed to an Open or New.
	ErrConfig = errors.New("cornflakes: invalid configuration")
)
