package service

import (
	"context"

	"github.com/cornflakes-go/cornflakes/rpc"
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

// HoldLoopCall takes the cached serverCall of ep's dispatch requests, as
// a request being served holds it: until release, the endpoint's requests
// are served with pooled ones. Both steps run on ep's loop (rpc.Endpoint.Post),
// the only goroutine that touches the slot. For tests.
func HoldLoopCall(s *Server, ep *rpc.Endpoint) (release func()) {
	slot := &s.loopCalls[ep.ID()]
	onLoop(ep, func() {
		if slot.busy {
			panic("service: HoldLoopCall: taken")
		}
		slot.busy = true
	})
	return func() { onLoop(ep, func() { slot.busy = false }) }
}

// LoopCallCached reports whether ep has a cached serverCall (read on ep's
// loop). For tests.
func LoopCallCached(s *Server, ep *rpc.Endpoint) bool {
	slot := &s.loopCalls[ep.ID()]
	var cached bool
	onLoop(ep, func() { cached = !slot.busy && slot.sc != nil })
	return cached
}

// onLoop runs fn on ep's loop (ep run by another goroutine) and waits.
func onLoop(ep *rpc.Endpoint, fn func()) {
	done := make(chan struct{})
	if err := ep.Post(func() { fn(); close(done) }); err != nil {
		panic(err)
	}
	<-done
}
