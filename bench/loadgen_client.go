// The per-goroutine client of the load generator: its in-flight slots, the
// open- and closed-loop send schedules, and the recording of each response.

package bench

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cornflakes-go/cornflakes/workload"
)

// slot is one in-flight request; its Request is filled by the stream and
// stays untouched until its response is delivered.
type slot struct {
	req      workload.Request
	id       uint64
	intended int64 // ns since base
	busy     bool
}

// doneRec is a delivered response whose time is recorded later (deferTime).
type doneRec struct {
	intended int64
	units    int
	failed   bool // StatusError
}

// client is one generator goroutine's state.
type client struct {
	cfg    *Config
	conn   Conn
	batch  Batcher // conn's, if it batches sends (nil otherwise)
	stream workload.Stream
	model  *workload.Model
	rng    *rand.Rand
	hist   *hdrhistogram.Histogram

	slots   []slot
	free    []int32
	retry   int32 // slot whose request got ErrBusy and is re-sent next (-1: none)
	seq     uint64
	idShift uint
	idMask  uint64

	base                   time.Time
	warmEnd, end, drainEnd int64
	inflight               int
	deliverFn              func(uint64, *workload.Response)
	closedPending          int   // closed loop: completions not yet replaced
	lastYield              int64 // Spin: when the client last yielded (c.now())
	// pollNow is the clock read shared by every response one poll
	// delivers (0: not read yet in this poll): one clock read per poll,
	// however many responses it delivers.
	pollNow int64
	// deferTime (closed loop): deliver records no time; it queues the
	// response in done, and the loop's next clock read (the top of its
	// next iteration) timestamps them all: one clock read per iteration.
	deferTime              bool
	done                   []doneRec
	sent, received, errors uint64
	mismatches, lost       uint64
	unexpected, stalls     uint64
	sentWin, recvWin       uint64
	unitsWin               uint64
	checks                 uint64 // responses checked against the model
	fullIn                 int    // checks until the next full one (Config.VerifyEvery; a countdown, no division)
	firstMismatch          error
	closedLoop             bool
}

func newClient(cfg *Config, i int, conn Conn) *client {
	n := cfg.MaxOutstanding
	if cfg.Outstanding > 0 {
		n = cfg.Outstanding
	}
	c := &client{
		cfg:    cfg,
		conn:   conn,
		stream: cfg.Workload.NewStream(i, cfg.Clients, cfg.Seed),
		rng:    rand.New(rand.NewPCG(cfg.Seed^0x5DEECE66D, uint64(i)+1)),
		hist:   newHist(),
		slots:  make([]slot, n),
		free:   make([]int32, n),
		done:   make([]doneRec, 0, n),
	}
	c.batch, _ = conn.(Batcher)
	if cfg.Check {
		c.model = cfg.Workload.Model()
		c.fullIn = cfg.VerifyEvery
	}
	for j := range c.free {
		c.free[j] = int32(n - 1 - j)
	}
	c.idShift = idShift // slot index < 2^20 fits below the sequence number
	c.idMask = 1<<c.idShift - 1
	c.deliverFn = c.deliver
	c.closedLoop = cfg.Outstanding > 0
	c.retry = -1
	return c
}

func (c *client) now() int64 { return int64(time.Since(c.base)) }

// send issues the next request with the given intended time; false when no
// slot is free or the transport is busy (the caller polls and retries).
func (c *client) send(intended int64) bool {
	var si int32
	var s *slot
	if c.retry >= 0 { // re-send the request the transport refused
		si, c.retry = c.retry, -1
		s = &c.slots[si]
	} else {
		if len(c.free) == 0 {
			return false
		}
		si = c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
		s = &c.slots[si]
		c.seq++
		s.id = c.seq<<c.idShift | uint64(si)
		s.intended = intended
		c.stream.Next(&s.req)
	}
	measured := s.intended >= c.warmEnd && s.intended < c.end
	if err := c.conn.Send(s.id, &s.req); err != nil {
		if errors.Is(err, ErrBusy) {
			c.retry = si
			return false
		}
		c.free = append(c.free, si)
		if measured {
			c.sent++
			c.sentWin++
			c.errors++
		}
		if c.closedLoop {
			c.closedPending++ // the request is not in flight: keep its place in the window
		}
		return true
	}
	if measured {
		c.sent++
		c.sentWin++
	}
	s.busy = true
	c.inflight++
	return true
}

func (c *client) deliver(id uint64, resp *workload.Response) {
	si := id & c.idMask
	if si >= uint64(len(c.slots)) || !c.slots[si].busy || c.slots[si].id != id {
		c.unexpected++
		return
	}
	s := &c.slots[si]
	failed := resp.Status == workload.StatusError
	if c.deferTime {
		c.done = append(c.done, doneRec{intended: s.intended, units: s.req.Units, failed: failed})
	} else {
		if c.pollNow == 0 {
			c.pollNow = c.now()
		}
		c.record(s.intended, s.req.Units, failed, c.pollNow)
	}
	if c.model != nil && resp.Status != workload.StatusError {
		var err error
		c.checks++
		if c.fullIn--; c.fullIn <= 0 {
			c.fullIn = c.cfg.VerifyEvery
			err = c.model.Check(&s.req, resp)
		} else {
			err = c.model.CheckSpot(&s.req, resp)
		}
		if err != nil {
			c.mismatches++
			if c.firstMismatch == nil {
				c.firstMismatch = err
			}
		}
	}
	s.busy = false
	c.free = append(c.free, int32(si))
	c.inflight--
	if c.closedLoop {
		c.closedPending++
	}
}

// record counts a response to a request intended at intended, received at
// now, in the measurement's counters and latency histogram.
func (c *client) record(intended int64, units int, failed bool, now int64) {
	if intended >= c.warmEnd && intended < c.end {
		c.received++
		c.hist.RecordValue(min(now-intended, int64(MaxLatency)))
		if failed {
			c.errors++
		}
	}
	if now >= c.warmEnd && now < c.end {
		c.recvWin++
		if !failed {
			c.unitsWin += uint64(units)
		}
	}
}

// flushDone records the responses deferTime queued as received at now.
func (c *client) flushDone(now int64) {
	for _, d := range c.done {
		c.record(d.intended, d.units, d.failed, now)
	}
	c.done = c.done[:0]
}

// beginSends and endSends bracket a run of sends for a Conn that batches them.
func (c *client) beginSends() error {
	if c.batch == nil {
		return nil
	}
	return c.batch.BeginSends()
}

func (c *client) endSends() error {
	if c.batch == nil {
		return nil
	}
	return c.batch.EndSends()
}

func (c *client) poll() error {
	_, err := c.pollN()
	return err
}

// pollN polls the Conn once; the responses it delivers share one clock
// read, taken at the first of them.
func (c *client) pollN() (int, error) {
	c.pollNow = 0
	return c.conn.Poll(c.deliverFn)
}

// expGap draws an exponential inter-arrival gap in ns for the given mean.
func (c *client) expGap(mean float64) int64 {
	return int64(-math.Log(1-c.rng.Float64()) * mean)
}

// runOpen sends at Poisson times until end: the schedule is absolute, so a
// late sender catches up by sending back-to-back (upstream's deficit
// semantics), and each latency counts from the intended time.
func (c *client) runOpen(ctx context.Context, start int64, rate, stagger float64) error {
	mean := 1e9 / rate
	next := start + int64(float64(c.expGap(mean))*stagger)
	checkCtx := 0
	for {
		now := c.now()
		// Every request intended before the end is sent, even when the
		// client itself ran late (descheduled, overslept): dropping them
		// would hide exactly the latency a late sender causes. Only a
		// transport stalled past the drain gives up on them.
		if (now >= c.end && next >= c.end) || now >= c.drainEnd {
			break
		}
		if next <= now && next < c.end {
			if err := c.beginSends(); err != nil {
				return err
			}
			for n := 0; next <= now && next < c.end && n < burstLimit; n++ {
				if !c.send(next) {
					c.stalls++
					break
				}
				next += c.expGap(mean)
			}
			if err := c.endSends(); err != nil {
				return err
			}
		}
		if err := c.poll(); err != nil {
			return err
		}
		if checkCtx++; checkCtx&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if c.cfg.Spin {
			c.yield(now)
		} else if err := c.idle(next - c.now()); err != nil {
			return err
		}
	}
	return c.drain(ctx)
}

// idle spends a gap of gap ns before the next send: with requests in
// flight it blocks in the Conn's Wait (if it is a Waiter) until WaitMargin
// before the send; otherwise it sleeps for whole milliseconds in time.Sleep
// while at least MinWait is left, and yields when less is left.
func (c *client) idle(gap int64) error {
	if gap <= int64(5*time.Microsecond) {
		return nil
	}
	if w, ok := c.conn.(Waiter); ok && c.inflight > 0 && gap > 2*int64(WaitMargin) {
		// Block rather than yield in a loop: on a small machine a
		// client that keeps its core busy delays the server's wake-ups
		// by whole scheduler slices (milliseconds of tail latency).
		return w.Wait(time.Duration(gap) - WaitMargin)
	}
	switch {
	case gap < int64(MinWait):
		runtime.Gosched()
		return nil
	}
	d := time.Duration(gap) - MinWait/2
	d -= d % time.Millisecond
	time.Sleep(d)
	return nil
}

// SpinYield is how often a spinning client (Config.Spin) yields the
// processor to other goroutines (other clients sharing it, the garbage
// collector's workers): runtime.Gosched takes the scheduler's global lock
// and may wake another thread, which costs more than a poll when done on
// every iteration.
const SpinYield = 20 * time.Microsecond

// yield calls runtime.Gosched when SpinYield has passed since the last
// time (now is c.now()).
func (c *client) yield(now int64) {
	if now-c.lastYield >= int64(SpinYield) {
		runtime.Gosched()
		c.lastYield = c.now()
	}
}

// runClosed keeps n requests in flight, latency from the actual send.
func (c *client) runClosed(ctx context.Context, start int64, n int) error {
	for c.now() < start {
		runtime.Gosched()
	}
	c.closedPending = n
	checkCtx := 0
	// The responses a poll delivers are timestamped by the next
	// iteration's clock read, taken after every one of them was delivered
	// and checked: one clock read per iteration, and a latency never
	// shorter than the real one.
	c.deferTime = true
	defer func() { c.deferTime = false }()
	for {
		now := c.now()
		c.flushDone(now)
		if now >= c.end {
			break
		}
		if c.closedPending > 0 {
			if err := c.beginSends(); err != nil {
				return err
			}
			for c.closedPending > 0 { // this iteration's clock read: the sends take nanoseconds
				if !c.send(now) {
					break
				}
				c.closedPending--
			}
			if err := c.endSends(); err != nil {
				return err
			}
		}
		got, err := c.pollN()
		if err != nil {
			return err
		}
		if checkCtx++; checkCtx&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !c.cfg.Spin && c.closedPending == 0 && got == 0 {
			// Every request is in flight and none has come back: block in
			// the transport (a spinning client takes the server's core on
			// a small machine), else yield.
			if w, ok := c.conn.(Waiter); ok {
				if err := w.Wait(min(time.Duration(c.end-now), time.Millisecond)); err != nil {
					return err
				}
			} else {
				runtime.Gosched()
			}
		} else if c.cfg.Spin && got == 0 {
			c.yield(now)
		}
	}
	c.deferTime = false // the loop's last clock read recorded every response
	return c.drain(ctx)
}

// drain polls until every request is answered or the drain time is up;
// measured requests still in flight then are lost and recorded with their
// latency so far, so they count in the percentiles.
func (c *client) drain(ctx context.Context) error {
	for c.inflight > 0 && c.now() < c.drainEnd && ctx.Err() == nil {
		if err := c.poll(); err != nil {
			return err
		}
		if !c.cfg.Spin {
			runtime.Gosched()
		} else {
			c.yield(c.now())
		}
	}
	now := c.now()
	for i := range c.slots {
		s := &c.slots[i]
		if s.busy && s.intended >= c.warmEnd && s.intended < c.end {
			c.lost++
			c.hist.RecordValue(min(now-s.intended, int64(MaxLatency)))
		}
	}
	return nil
}
