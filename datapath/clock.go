package datapath

import "time"

// LoopClock is implemented by an Endpoint whose calls check timers of
// their own (datapath/shm looks at its sockets every millisecond while
// busy) and that can take the time from its caller instead of reading the
// clock again: an event loop that reads the clock once per iteration
// passes that reading down before it receives and flushes.
type LoopClock interface {
	// SetLoopTime gives the endpoint now, a reading of time.Now (with its
	// monotonic clock) taken by the caller at the start of its loop
	// iteration. It serves the endpoint's next two receive or flush
	// calls; later ones read the clock themselves, so an endpoint whose
	// caller stops passing the time keeps its timers.
	SetLoopTime(now time.Time)
}
