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
