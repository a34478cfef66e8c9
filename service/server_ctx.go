package service

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callCtx is a handler's context: the call's deadline and cancellation,
// its metadata and method, without an allocation, a timer or a goroutine
// per call.
//
// Done makes its channel on first use only; with a deadline it then starts
// the timer that closes the channel when the deadline passes (a handler
// that never waits on Done pays for neither). Err reports the deadline
// from the clock whether or not Done was called. The call's end, and a
// client's cancellation of a worker-mode call (cancel), close the channel
// with Canceled.
//
// The server reuses a callCtx for its next call only if nothing can still
// observe it: once Done made a channel (a handler waited on it, or derived
// a context that watches it, possibly from a goroutine after the call),
// the context stays ended, with its error, and the next call gets a new
// one (finish).
type callCtx struct {
	md   Metadata
	info *MethodInfo
	// state says what can end the call early: ctxDeadline, ctxCancellable
	// (a worker-mode call the client may cancel), 0 nothing.
	state atomic.Uint32

	mu    sync.Mutex
	dl    time.Time
	gen   uint64 // counts the calls this context served (stale cancels)
	done  chan struct{}
	err   error
	timer *time.Timer
}

const (
	ctxDeadline    = 1
	ctxCancellable = 2
)

// start prepares c for a call with the given deadline (zero: none).
func (c *callCtx) start(info *MethodInfo, dl time.Time, cancellable bool) {
	c.info = info
	var st uint32
	if !dl.IsZero() {
		st |= ctxDeadline
		c.mu.Lock()
		c.dl = dl
		c.mu.Unlock()
	}
	if cancellable {
		st |= ctxCancellable
	}
	if st != 0 {
		c.state.Store(st) // 0 since the previous call's finish
	}
}

// finish ends the call: the channel, if any, closes with Canceled (as
// context.WithTimeout's cancel at a call's end) and a timer stops. It
// reports whether c may serve another call: false once Done made a
// channel (c then stays ended for whoever still watches it).
func (c *callCtx) finish() (reuse bool) {
	c.md, c.info = nil, nil
	if c.state.Load() == 0 {
		return true // no timer, no channel, no registration: nothing refers to this call
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.done != nil {
		if c.err == nil {
			c.err = context.Canceled
			close(c.done)
		}
		return false
	}
	c.err, c.dl = nil, time.Time{}
	c.state.Store(0)
	return true
}

// cancel cancels call gen (the client gave it up); a later call is left alone.
func (c *callCtx) cancel(gen uint64) {
	c.mu.Lock()
	if c.gen == gen {
		c.endLocked(context.Canceled)
	}
	c.mu.Unlock()
}

// expire is the deadline timer (of a context that is never reused).
func (c *callCtx) expire() {
	c.mu.Lock()
	c.endLocked(context.DeadlineExceeded)
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
	if c.err == nil && !c.dl.IsZero() && !time.Now().Before(c.dl) {
		c.endLocked(context.DeadlineExceeded)
	}
}

func (c *callCtx) Deadline() (time.Time, bool) {
	if c.state.Load()&ctxDeadline == 0 {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dl, !c.dl.IsZero()
}

// Done returns nil for a call that nothing can end early (no deadline, a
// dispatch-mode call: the loop that would deliver a cancellation is busy
// running the handler), as context.Background does.
func (c *callCtx) Done() <-chan struct{} {
	if c.state.Load() == 0 {
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
		case !c.dl.IsZero():
			c.timer = time.AfterFunc(time.Until(c.dl), c.expire)
		}
	}
	return c.done
}

func (c *callCtx) Err() error {
	if c.state.Load() == 0 {
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
