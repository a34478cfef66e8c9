// Package pin binds the calling OS thread to one CPU, for benchmarks whose
// two busy-polling loops (a client and a server) must run on different
// CPUs: unpinned, the kernel sometimes stacks both spinning threads on one
// CPU, and every round trip then waits for a scheduler time slice.
package pin

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Thread binds the calling OS thread to CPU cpu modulo the machine's CPU
// count, best effort, and returns a function that restores the thread's
// previous affinity. The caller must hold its thread
// (runtime.LockOSThread) from before Thread until after restore: an
// unlocked goroutine may move to another thread, which would keep the
// binding. On a machine with one CPU, or when the affinity cannot be read
// or set, Thread does nothing and restore is a no-op.
func Thread(cpu int) (restore func()) {
	var old unix.CPUSet
	if runtime.NumCPU() < 2 || unix.SchedGetaffinity(0, &old) != nil {
		return func() {}
	}
	var set unix.CPUSet
	set.Set(cpu % runtime.NumCPU())
	if unix.SchedSetaffinity(0, &set) != nil {
		return func() {}
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }
}
