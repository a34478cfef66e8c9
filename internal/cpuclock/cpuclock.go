// Package cpuclock reads Linux per-thread CPU clocks: the time an OS thread
// has spent on a CPU, exact to the nanosecond (CLOCK_THREAD_CPUTIME_ID and
// the per-thread clocks of posix-cpu-timers), unlike schedstat's run time,
// which advances only at scheduler ticks for a running thread.
//
// The benchmarks use it to measure a serving loop's CPU per request. A Go
// goroutine may change OS thread between two reads unless it is locked to its
// thread (runtime.LockOSThread) or the caller checks the thread id around the
// interval (unix.Gettid, as kv's busy-poll accounting does); a delta across a
// change of thread is meaningless.
package cpuclock

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Thread returns the calling thread's CPU time in nanoseconds, or 0 if the
// clock cannot be read. It is one raw system call (no Go scheduler entry), so
// the goroutine cannot change thread during it.
func Thread() int64 {
	ns, _ := ThreadOK()
	return ns
}

// ThreadOK is Thread that reports whether the clock could be read.
func ThreadOK() (int64, bool) {
	var ts unix.Timespec
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return ts.Nano(), true
}

// Of returns the CPU time of thread tid of this process (clock_gettime on
// the clock id MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) of Linux's
// posix-cpu-timers: (^tid << 3) | 6). It reports false for an id out of
// range or a thread that does not exist (any more).
func Of(tid int) (time.Duration, bool) {
	if tid <= 0 || tid > 1<<28 {
		return 0, false
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^uint32(tid)<<3|6), &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
