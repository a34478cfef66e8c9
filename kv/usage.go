package kv

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
)

// busyEpoch is how often a busy-polling endpoint loop (ServerConfig.BusyPoll)
// reads its thread's CPU clock to correct its busy time while it serves
// without yielding: three raw system calls (gettid, clock_gettime, gettid),
// about 1-2 µs with page-table isolation, so ~0.2% of the loop.
const busyEpoch = time.Millisecond

// PollStats describes the busy-time accounting of busy-polling endpoints
// (ServerConfig.BusyPoll), summed over the endpoints, cumulative since the
// server started.
type PollStats struct {
	// CPU is what Usage reports: the busy time corrected to the time the
	// serving thread was on a CPU (BusyWall times the thread's on-CPU
	// share of each epoch), or BusyWall for the epochs that could not be
	// measured (Unmeasured).
	CPU time.Duration
	// BusyWall is the wall time of the loop iterations that served a
	// request (the definition of server CPU before the correction): it
	// also counts every moment the OS or the Go scheduler took the
	// thread away in the middle of such an iteration.
	BusyWall time.Duration
	// Epochs is the number of accounting epochs (busyEpoch of loop time
	// each) closed; Unmeasured those whose thread CPU time could not be
	// read because the loop's goroutine changed OS thread during the
	// epoch (or the clock failed).
	Epochs, Unmeasured uint64
}

// busyMeter turns a busy-polling loop's busy wall time into CPU time. The
// loop's goroutine is not locked to its thread (serverEP.poll explains
// why), so the thread is identified at each epoch boundary: an epoch whose
// start and end ran on the same thread (gettid) has a valid thread CPU
// delta (CLOCK_THREAD_CPUTIME_ID, exact to the nanosecond, unlike
// schedstat's run time which only advances at scheduler ticks for a
// running thread). Within an epoch the busy wall time is scaled by the
// share of the epoch's wall time the thread was on a CPU: time the thread
// waited for a CPU, or spent parked while another goroutine had its
// processor, is removed in proportion. An epoch ends when it is busyEpoch
// old and before the loop yields its processor (pause/resume), where the
// goroutine may change thread, so that a change of thread costs at most
// the busy time since the last boundary. Owned by the loop's goroutine.
type busyMeter struct {
	start time.Time     // loop time the current epoch started at (zero: none yet)
	busy  time.Duration // busy wall time in the current epoch
	tid   int           // thread the epoch started on (0: unknown)
	cpu0  int64         // that thread's CPU clock at the start (ns)
}

// add counts d of busy wall time in the current epoch.
func (m *busyMeter) add(d time.Duration) { m.busy += d }

// tick closes the epoch when it is busyEpoch old at loop time now and
// publishes its CPU time to st (and starts the first epoch).
func (m *busyMeter) tick(st *serverEP, now time.Time) {
	if m.start.IsZero() {
		m.begin(now)
		return
	}
	if now.Sub(m.start) >= busyEpoch {
		m.close(st, now)
	}
}

// pause ends the epoch at loop time now before the loop yields its
// processor (an epoch without busy time is dropped); resume starts the
// next one once the goroutine runs again.
func (m *busyMeter) pause(st *serverEP, now time.Time) {
	if m.busy > 0 && !m.start.IsZero() {
		m.close(st, now)
	}
	m.start, m.busy = time.Time{}, 0
}

// resume starts an epoch now (after pause).
func (m *busyMeter) resume() { m.begin(time.Now()) }

// close publishes the epoch ending at now to st and starts the next one
// there.
func (m *busyMeter) close(st *serverEP, now time.Time) {
	w := now.Sub(m.start)
	tid, cpu, ok := threadClock()
	cpuT := m.busy
	if ok && tid == m.tid && w > 0 {
		if c := time.Duration(cpu - m.cpu0); c < w {
			// busy * c / w (busy <= w).
			cpuT = time.Duration(float64(m.busy) * float64(max(c, 0)) / float64(w))
		}
	} else {
		st.unmeasured.Add(1)
	}
	st.busy.Add(int64(cpuT))
	st.busyWall.Add(int64(m.busy))
	st.epochs.Add(1)
	m.busy, m.start = 0, now
	m.tid, m.cpu0 = 0, 0
	if ok {
		m.tid, m.cpu0 = tid, cpu
	}
}

// begin starts an epoch at now.
func (m *busyMeter) begin(now time.Time) {
	m.start, m.busy = now, 0
	m.tid, m.cpu0 = 0, 0
	if tid, cpu, ok := threadClock(); ok {
		m.tid, m.cpu0 = tid, cpu
	}
}

// threadClock reads the calling thread's id and CPU clock; ok is false
// when the clock failed or the goroutine changed thread between the reads
// (gettid before and after).
func threadClock() (tid int, cpu int64, ok bool) {
	tid = unix.Gettid()
	cpu, ok = cpuclock.ThreadOK()
	return tid, cpu, ok && unix.Gettid() == tid
}
