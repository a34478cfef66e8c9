package service

import (
	"context"
	"runtime"
)

// HoldLoop takes c's endpoint loop on a goroutine of its own, as a caller
// running it would, without running it: until release, calls from other
// goroutines are handed to the loop with Post. For tests.
func HoldLoop(c *Client) (release func()) {
	ok := make(chan bool)
	go func() { ok <- c.tryLead() }()
	if !<-ok {
		panic("service: HoldLoop: the loop is busy")
	}
	return func() {
		c.leadG.Store(0)
		c.lead.Store(false)
	}
}

// LeadHere takes c's endpoint loop on the calling goroutine, as Run does,
// without running it: the caller then steps the endpoint itself
// (rpc.Endpoint.RunOnce) and asynchronous calls it makes are sent at
// once. For the lockstep benchmark.
func LeadHere(c *Client) (release func()) {
	if !c.tryLead() {
		panic("service: LeadHere: the loop is busy")
	}
	return func() { c.release(false) }
}

// IsBackground is isBackground, for tests.
func IsBackground(ctx context.Context) bool { return isBackground(ctx) }

// ResetErrors is the number of call arenas whose Reset failed, for tests.
func ResetErrors(s *Server) int64 { return s.resetErrs.Load() }

// HoldLoopCall takes the cached serverCall of endpoint id's dispatch
// requests, as a request being served holds it: until release, the
// endpoint's requests are served with pooled ones. For tests.
func HoldLoopCall(s *Server, id uint8) (release func()) {
	slot := &s.loopCalls[id]
	if !slot.busy.CompareAndSwap(false, true) {
		panic("service: HoldLoopCall: taken")
	}
	return func() { slot.busy.Store(false) }
}

// LoopCallCached reports whether endpoint id has a cached serverCall,
// waiting while a request holds it. For tests.
func LoopCallCached(s *Server, id uint8) bool {
	slot := &s.loopCalls[id]
	for !slot.busy.CompareAndSwap(false, true) {
		runtime.Gosched()
	}
	defer slot.busy.Store(false)
	return slot.sc != nil
}
