package cpuclock

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spin burns about d of CPU on the calling thread (bounded by wall time).
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) {
		x++
	}
	_ = x
}

func TestThreadAdvancesWithWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, ok := ThreadOK()
	if !ok || t0 <= 0 {
		t.Fatalf("ThreadOK = %d, %v; want a positive time", t0, ok)
	}
	spin(20 * time.Millisecond)
	t1 := Thread()
	if t1 <= t0 {
		t.Fatalf("thread CPU did not advance over 20 ms of work: %d then %d", t0, t1)
	}
}

func TestOfMatchesThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	spin(5 * time.Millisecond)
	before := Thread()
	of, ok := Of(unix.Gettid())
	after := Thread()
	if !ok {
		t.Fatal("Of(own tid) failed")
	}
	if int64(of) < before || int64(of) > after {
		t.Fatalf("Of(own tid) = %d, want within [%d, %d]", of, before, after)
	}
}

func TestOfRejectsBadIDs(t *testing.T) {
	for _, tid := range []int{-1, 0, 1<<28 + 1} {
		if d, ok := Of(tid); ok {
			t.Errorf("Of(%d) = %v, true; want false", tid, d)
		}
	}
}
