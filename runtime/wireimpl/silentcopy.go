package wireimpl

import "sync/atomic"

// Values of at least Arena.Threshold bytes that Bytes.Set (and the
// generated setters over it) copied because they did not lie in registered
// memory: the caller meant them to go zero-copy, and nothing else says
// that they did not. Counted process-wide and per arena.
var silentCopies, silentCopyBytes atomic.Uint64

// SilentCopies returns the number and total size of the values, in every
// arena of the process since it started, that were at least their arena's
// Threshold long but were copied because they were not in registered
// memory (mem.Recover failed). Safe for concurrent use.
func SilentCopies() (values, bytes uint64) {
	return silentCopies.Load(), silentCopyBytes.Load()
}

// SilentCopies returns the number and total size of the values this arena
// copied although they were at least Threshold long (they were not in
// registered memory), since NewArena (Reset does not clear them).
func (a *Arena) SilentCopies() (values, bytes uint64) {
	return a.silentN, a.silentBytes
}

func (a *Arena) noteSilentCopy(n int) {
	a.silentN++
	a.silentBytes += uint64(n)
	silentCopies.Add(1)
	silentCopyBytes.Add(uint64(n))
}
