package rpc

// BeginBatch starts a batch of Enqueue calls made from outside the endpoint loop
// (not from a handler or continuation). Outside a batch, each such Enqueue reads the
// clock, runs the protocol and posts its packet at once; inside one, Enqueue only
// queues the request, and EndBatch sends everything queued together: one clock read
// (here), one protocol step and one flush for the whole batch. A load generator
// that issues many requests between two polls sends them this way.
//
// Only the goroutine that owns the endpoint may batch (the same rule as Enqueue).
// The next RunOnce also ends the batch and sends what it queued, so a batch that
// is never ended loses nothing. Errors: ErrClosed, ErrConcurrentUse, ErrReentrant (from a callback,
// whose Enqueue calls are batched by the loop already).
func (ep *Endpoint) BeginBatch() error {
	nested, err := ep.enterLoop() // ErrReentrant from a callback
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	// The core's clock advances only in the loop: observe it once for
	// every request of the batch (see enqueueLocked).
	ep.core.Observe(ep.now())
	ep.batching = true
	return nil
}

// EndBatch ends the batch BeginBatch started and sends its requests (one protocol
// step, one flush). It returns the flush's error; without a batch it only flushes
// what is pending. Errors as BeginBatch's, or the datapath's send error.
func (ep *Endpoint) EndBatch() error {
	nested, err := ep.enterLoop() // ErrReentrant from a callback
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	ep.batching = false
	ep.process()
	return ep.flush()
}
