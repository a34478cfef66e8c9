package pin_test

import (
	"fmt"
	"runtime"

	"github.com/cornflakes-go/cornflakes/internal/pin"
)

// A busy-polling loop holds its thread and binds it to CPU 1 for the
// duration of a measurement.
func ExampleThread() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore := pin.Thread(1)
	defer restore()
	fmt.Println("measuring on one CPU")
	// Output: measuring on one CPU
}
