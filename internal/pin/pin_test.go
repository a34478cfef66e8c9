package pin

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestThreadBindsAndRestores(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Skipf("affinity unreadable: %v", err)
	}
	restore := Thread(1)
	var during unix.CPUSet
	if err := unix.SchedGetaffinity(0, &during); err != nil {
		t.Fatal(err)
	}
	if runtime.NumCPU() >= 2 && before.Count() >= 2 {
		if during.Count() != 1 || !during.IsSet(1%runtime.NumCPU()) {
			t.Fatalf("bound to %d CPUs (CPU 1 set: %v), want CPU 1 only", during.Count(), during.IsSet(1))
		}
	}
	restore()
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("affinity after restore %v, want %v", after, before)
	}
}
