package naos

// Handle is the completion of an asynchronous send (SendAsync).
type Handle struct {
	v    any
	done chan struct{}
	err  error
}

// Wait blocks until the send has completed and returns its error.
func (h *Handle) Wait() error {
	<-h.done
	return h.err
}

// Test reports whether the send has completed, and its error if it has.
func (h *Handle) Test() (done bool, err error) {
	select {
	case <-h.done:
		return true, h.err
	default:
		return false, nil
	}
}

// asyncQueue is the number of asynchronous sends a Conn queues before
// SendAsync blocks.
const asyncQueue = 64

// SendAsync starts sending v and returns at once. The message leaves after
// every earlier send, from a goroutine of the Conn; v and everything
// reachable from it must stay unmodified until the handle completes (Wait
// returns or Test reports done).
func (k *Conn) SendAsync(v any) *Handle {
	h := &Handle{v: v, done: make(chan struct{})}
	k.asyncMu.Lock()
	if k.closed {
		k.asyncMu.Unlock()
		h.err = ErrClosed
		close(h.done)
		return h
	}
	if k.queue == nil {
		k.queue = make(chan *Handle, asyncQueue)
		k.wg.Add(1)
		go k.sender(k.queue)
	}
	k.pending.Add(1)
	q := k.queue
	// Sending on q under asyncMu keeps the order of concurrent callers;
	// the sender goroutine never takes asyncMu while q is full.
	q <- h
	k.asyncMu.Unlock()
	return h
}

// sender runs the asynchronous sends of a Conn, in order, until Close.
func (k *Conn) sender(q chan *Handle) {
	defer k.wg.Done()
	for h := range q {
		k.sendMu.Lock()
		h.err = k.send(h.v)
		k.sendMu.Unlock()
		h.v = nil
		k.pending.Add(-1)
		close(h.done)
	}
}
