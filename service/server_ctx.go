package service

import (
	"context"
	"sync"
	"time"
)

// callCtx is a handler's context: the call's deadline and cancellation,
// its metadata and method, without an allocation, a timer or a goroutine
// per call. It is the Context of a call from the start of its handler to
// the end of the call (the server reuses it for a later call then: a
// handler keeps no reference to it).
//
// Done makes its channel on first use only; with a deadline it then starts
// the timer that closes the channel when the deadline passes (a handler
// that never waits on Done pays for neither). Err reports the deadline
// from the clock whether or not Done was called. The call's end, and a
// client's cancellation of a worker-mode call (cancel), close the channel
// with Canceled.
type callCtx struct {
	md    Metadata
	info  *MethodInfo
	dl    time.Time
	hasDL bool
	canc  bool // the client may cancel the call (a worker-mode call with an id)

	mu    sync.Mutex
	gen   uint64 // counts the calls this context served (stale timers and cancels)
	done  chan struct{}
	err   error
	timer *time.Timer
}

// start prepares c for a call with the given deadline (zero: none).
func (c *callCtx) start(info *MethodInfo, dl time.Time, cancellable bool) {
	c.info, c.dl, c.hasDL, c.canc = info, dl, !dl.IsZero(), cancellable
}

// finish ends the call: the channel, if any, closes with Canceled (as
// context.WithTimeout's cancel at a call's end), a timer stops, and c is
// ready for the next call.
func (c *callCtx) finish() {
	if !c.hasDL && !c.canc {
		// No timer, no channel, no registration: nothing refers to this call.
		c.md, c.info = nil, nil
		return
	}
	c.mu.Lock()
	c.gen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.done != nil && c.err == nil {
		close(c.done)
	}
	c.done, c.err = nil, nil
	c.mu.Unlock()
	c.md, c.info, c.dl, c.hasDL, c.canc = nil, nil, time.Time{}, false, false
}

// cancel cancels call gen (the client gave it up); a later call is left alone.
func (c *callCtx) cancel(gen uint64) {
	c.mu.Lock()
	if c.gen == gen {
		c.endLocked(context.Canceled)
	}
	c.mu.Unlock()
}

// expire is the deadline timer of call gen.
func (c *callCtx) expire(gen uint64) {
	c.mu.Lock()
	if c.gen == gen {
		c.endLocked(context.DeadlineExceeded)
	}
	c.mu.Unlock()
}

func (c *callCtx) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// expiredLocked ends the call with DeadlineExceeded if its deadline passed.
func (c *callCtx) expiredLocked() {
	if c.err == nil && c.hasDL && !time.Now().Before(c.dl) {
		c.endLocked(context.DeadlineExceeded)
	}
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.dl, c.hasDL }

// Done returns nil for a call that nothing can end early (no deadline, a
// dispatch-mode call: the loop that would deliver a cancellation is busy
// running the handler), as context.Background does.
func (c *callCtx) Done() <-chan struct{} {
	if !c.hasDL && !c.canc {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		c.expiredLocked()
		switch {
		case c.err != nil:
			close(c.done)
		case c.hasDL:
			gen := c.gen
			c.timer = time.AfterFunc(time.Until(c.dl), func() { c.expire(gen) })
		}
	}
	return c.done
}

func (c *callCtx) Err() error {
	if !c.hasDL && !c.canc {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expiredLocked()
	return c.err
}

func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case mdKey:
		return &c.md
	case infoKey:
		return c.info
	}
	return nil
}

func (c *callCtx) String() string { return "service.callCtx" }

// inflight is the registry of worker-mode calls a client may cancel
// (kindCancel), per endpoint, session and call id.
type inflight struct {
	mu sync.Mutex
	m  map[inflightKey]inflightCall
}

type inflightCall struct {
	ctx *callCtx
	gen uint64
}

func (f *inflight) add(k inflightKey, c *callCtx) {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	f.mu.Lock()
	if f.m == nil {
		f.m = map[inflightKey]inflightCall{}
	}
	f.m[k] = inflightCall{c, gen}
	f.mu.Unlock()
}

func (f *inflight) remove(k inflightKey) {
	f.mu.Lock()
	delete(f.m, k)
	f.mu.Unlock()
}

// cancel cancels the call k, if it still runs.
func (f *inflight) cancel(k inflightKey) {
	f.mu.Lock()
	e, ok := f.m[k]
	delete(f.m, k)
	f.mu.Unlock()
	if ok {
		e.ctx.cancel(e.gen)
	}
}
