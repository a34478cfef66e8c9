package shm

// SetPrefetchRx switches touchBatch (for BenchmarkRecvCross's A/B) and
// returns the previous setting.
func SetPrefetchRx(on bool) bool {
	old := prefetchRx
	prefetchRx = on
	return old
}

// SetPrefetchTx switches touchSlot (for BenchmarkSendCross's A/B) and
// returns the previous setting.
func SetPrefetchTx(on bool) bool {
	old := prefetchTx
	prefetchTx = on
	return old
}

// Touched is the sum of the bytes touchBatch and touchSegments read on
// every connection (mod 256). Call it from the endpoint's goroutine.
func (ep *Endpoint) Touched() byte {
	var t byte
	for _, c := range ep.conns {
		t += c.touched
	}
	return t
}
