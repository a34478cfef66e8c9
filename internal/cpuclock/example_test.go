package cpuclock_test

import (
	"fmt"
	"runtime"

	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
)

// Measure the CPU a piece of work costs the calling thread (locked, so that
// both reads are of the same thread).
func ExampleThread() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := cpuclock.Thread()
	sum := 0
	for i := 0; i < 1_000_000; i++ {
		sum += i
	}
	used := cpuclock.Thread() - t0
	fmt.Println(sum, used >= 0)
	// Output: 499999500000 true
}
