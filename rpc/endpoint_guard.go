package rpc

import (
	"time"

	"github.com/petermattis/goid"
)

// enter marks the endpoint busy. Calls from handlers and continuations
// (the loop is running a callback, on its own goroutine) are nested and
// allowed; the same calls from any other goroutine meanwhile are
// concurrent use.
func (ep *Endpoint) enter() (nested bool, err error) {
	// Calls from a handler or continuation (the common case on the hot
	// path: a continuation enqueues the next request) take three loads,
	// the goroutine id's included, and no compare-and-swap.
	if ep.inCallback.Load() > 0 && ep.state.Load() == 1 {
		if goid.Get() == ep.owner.Load() {
			return true, nil
		}
		return false, ErrConcurrentUse
	}
	if ep.state.CompareAndSwap(0, 1) {
		// Read only while state is 1 and a callback runs, which this
		// goroutine starts after the store: never a previous holder's.
		// Stored only when it changes (a loop driven by RunOnce enters
		// once per iteration, always from the same goroutine): an atomic
		// store is an exchange on amd64.
		if id := goid.Get(); ep.owner.Load() != id {
			ep.owner.Store(id)
		}
		return false, nil
	}
	switch ep.state.Load() {
	case 2:
		return false, ErrClosed
	case 1:
		if ep.inCallback.Load() > 0 && goid.Get() == ep.owner.Load() {
			return true, nil
		}
	}
	return false, ErrConcurrentUse
}

// reentry is the error of an entry into the event loop (RunOnce, Run,
// Call, Close) while it runs a callback: ErrReentrant from the callback
// itself, ErrConcurrentUse from another goroutine; nil otherwise.
func (ep *Endpoint) reentry() error {
	if ep.inCallback.Load() > 0 && ep.state.Load() == 1 {
		if goid.Get() == ep.owner.Load() {
			return ErrReentrant
		}
		return ErrConcurrentUse
	}
	return nil
}

// enterLoop is enter for the calls that run the event loop (RunOnce, Run,
// Call, WaitConnected, Close): from a handler or continuation they are
// ErrReentrant, not nested.
func (ep *Endpoint) enterLoop() (nested bool, err error) {
	if err := ep.reentry(); err != nil {
		return false, err
	}
	return ep.enter()
}

func (ep *Endpoint) exit(nested bool) {
	if !nested {
		ep.state.CompareAndSwap(1, 0)
	}
}

func (ep *Endpoint) callback(fn func()) {
	ep.inCallback.Add(1)
	defer ep.inCallback.Add(-1)
	fn()
}

// Post runs fn on the endpoint goroutine during a later RunOnce. It is safe
// from any goroutine: the way for worker handlers and other goroutines to
// hand work (for example nested RPCs) to the endpoint.
func (ep *Endpoint) Post(fn func()) error {
	if ep.state.Load() == 2 {
		return ErrClosed
	}
	if !ep.post(mail{kind: mailFunc, fn: fn}) {
		return ErrClosed
	}
	return nil
}

// post queues m for the loop; false once Close has taken the mailbox (m
// would never be delivered).
func (ep *Endpoint) post(m mail) bool {
	ep.mailMu.Lock()
	if ep.mailClosed {
		ep.mailMu.Unlock()
		return false
	}
	ep.mailQ = append(ep.mailQ, m)
	ep.hasMail.Store(true)
	ep.mailMu.Unlock()
	ep.wakeUp()
	return true
}

// waker is the optional datapath method that makes a Wait in progress (or
// the next one) return, callable from any goroutine (udp: an eventfd in
// its poll set; memnet: its notification channel). With it an idle Run
// sleeps until its next timer instead of polling the mailbox.
type waker interface {
	Wake() error
}

// maxIdleWait bounds one sleep of Run on a datapath with Wake: a safety
// net only (every hand-over wakes the loop, and timers bound the sleep).
const maxIdleWait = 100 * time.Millisecond

// Without Wake, Run polls the mailbox: it sleeps at most pollIdleWait, and
// pollWorkerWait while worker handlers may answer.
const (
	pollIdleWait   = 500 * time.Microsecond
	pollWorkerWait = 20 * time.Microsecond
)

// wakeUp interrupts Run's sleep after a hand-over. No wake-up is lost:
// the poster stores hasMail (or the context's cancellation) before it
// loads sleeping, and Run stores sleeping before it loads hasMail (and
// ctx.Err) and sleeps, so one of the two sees the other.
func (ep *Endpoint) wakeUp() {
	if ep.waker != nil && ep.sleeping.CompareAndSwap(true, false) {
		_ = ep.waker.Wake() // ErrClosed: nobody is left to wake
	}
}
