package echo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/microbench"
)

type slot struct {
	busy    bool
	seq     uint32
	variant int
	sent    int64 // ns since start: actual (closed loop) or intended (open loop) send time
}

// client generates load for one run; it is used by the client goroutine
// only.
type client struct {
	side  *side
	ep    datapath.Endpoint
	dst   netip.AddrPort
	reqs  []mem.Buf // per variant: the serialized request payload (app pool)
	slots []slot
	free  []int // free slot indices (open loop)
	next  int   // next variant
	hdr   [hdrLen]byte
	segs  [1]mem.Buf
	pkts  []datapath.Packet
	// segRx is ep when it receives in place (shm), with spkts its batch.
	segRx     datapath.SegmentReceiver
	spkts     []datapath.Segmented
	completed []int // slots completed by the last receive
	hist      *hdrhistogram.Histogram
	verify    bool
	start     time.Time
	// measuring tells the server when the measured window is open.
	measuring *atomic.Bool

	done, lost, bad uint64
	polls           PollStats // receive polls in the measured window
}

// requestPayloads returns the request payload of every variant of shape in
// the approach's format; the echo of each is the same bytes.
func requestPayloads(approach string, shape microbench.Shape, pool *mem.Pool) ([]mem.Buf, error) {
	var out []mem.Buf
	fail := func(err error) ([]mem.Buf, error) {
		for _, b := range out {
			b.Release()
		}
		return nil, err
	}
	vals := shape.Values()
	for v := range shape.Variants {
		var payload []byte
		switch kindOf(approach) {
		case apRaw, apOneCopy, apTwoCopy:
			for _, x := range vals[v] {
				payload = append(payload, x...)
			}
		case apLib:
			c, err := newCodec(approach, shape.Kind)
			if err != nil {
				return fail(err)
			}
			parts, err := c.encode(vals[v])
			if err != nil {
				return fail(err)
			}
			payload = append(append(payload, parts[0]...), parts[1]...)
		default:
			p, err := cfRequest(approach, shape, vals[v])
			if err != nil {
				return fail(err)
			}
			payload = p
		}
		b, err := pool.AllocCopy(payload)
		if err != nil {
			return fail(err)
		}
		out = append(out, b)
	}
	return out, nil
}

func newClient(s *side, dst netip.AddrPort, approach string, shape microbench.Shape, cfg Config) (*client, error) {
	reqs, err := requestPayloads(approach, shape, s.app)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if hdrLen+r.Len() > s.ep.MaxPayload() {
			for _, r := range reqs {
				r.Release()
			}
			return nil, fmt.Errorf("%w: request of %d bytes exceeds the datapath's %d", ErrConfig, hdrLen+r.Len(), s.ep.MaxPayload())
		}
	}
	n := cfg.Clients
	if cfg.Rate > 0 {
		n = MaxOutstanding
	}
	c := &client{
		side: s, ep: s.ep, dst: dst, reqs: reqs,
		slots:  make([]slot, n),
		pkts:   make([]datapath.Packet, datapath.DefaultBatch),
		hist:   hdrhistogram.New(100, int64(10*time.Second), 3),
		verify: cfg.Verify,
	}
	if sr, ok := s.ep.(datapath.SegmentReceiver); ok {
		c.segRx = sr
		c.spkts = make([]datapath.Segmented, datapath.DefaultBatch)
	}
	c.completed = make([]int, 0, datapath.DefaultBatch)
	for i := n - 1; i >= 0; i-- {
		c.free = append(c.free, i)
	}
	return c, nil
}

func (c *client) close() error {
	var first error
	for _, r := range c.reqs {
		if err := r.Release(); err != nil && first == nil {
			first = err
		}
	}
	c.reqs = nil
	return first
}

func (c *client) now() int64 { return int64(time.Since(c.start)) }

// send (re)issues slot i at time t (ns since start).
func (c *client) send(i int, t int64) error {
	s := &c.slots[i]
	s.busy = true
	s.seq++
	s.variant = c.next
	s.sent = t
	c.next++
	if c.next == len(c.reqs) {
		c.next = 0
	}
	binary.LittleEndian.PutUint32(c.hdr[0:], uint32(i))
	binary.LittleEndian.PutUint32(c.hdr[4:], s.seq)
	binary.LittleEndian.PutUint32(c.hdr[8:], uint32(s.variant))
	binary.LittleEndian.PutUint32(c.hdr[12:], magic)
	c.segs[0] = c.reqs[s.variant]
	err := c.ep.SendSegments(c.dst, c.hdr[:], c.segs[:])
	c.segs[0] = mem.Buf{}
	return err
}

// response checks one contiguous response and returns the slot it
// completes (-1 for stale or unknown responses).
func (c *client) response(p datapath.Packet, now int64) int {
	return c.check(p.Buf.Bytes(), nil, now)
}

// check checks one response, given as its first part (which must hold
// the application header) and the parts after it (in-place receive: views
// of the server's memory), and returns the slot it completes (-1 for
// stale or unknown responses). The size is always checked, the bytes with
// Config.Verify.
func (c *client) check(b []byte, rest [][]byte, now int64) int {
	if len(b) < hdrLen || binary.LittleEndian.Uint32(b[12:]) != magic {
		c.bad++
		return -1
	}
	i := int(binary.LittleEndian.Uint32(b))
	if i >= len(c.slots) {
		c.bad++
		return -1
	}
	s := &c.slots[i]
	if !s.busy || s.seq != binary.LittleEndian.Uint32(b[4:]) {
		return -1 // answer to a request already counted lost
	}
	want := c.reqs[s.variant].Bytes()
	n := len(b) - hdrLen
	for _, r := range rest {
		n += len(r)
	}
	if n != len(want) || int(binary.LittleEndian.Uint32(b[8:])) != s.variant || (c.verify && !equalParts(want, b[hdrLen:], rest)) {
		c.bad++
	}
	s.busy = false
	c.done++
	c.hist.RecordValue(max(now-s.sent, 1))
	return i
}

// equalParts reports whether want equals first followed by rest (their
// total length equals len(want)).
func equalParts(want, first []byte, rest [][]byte) bool {
	if !bytes.Equal(want[:len(first)], first) {
		return false
	}
	want = want[len(first):]
	for _, r := range rest {
		if !bytes.Equal(want[:len(r)], r) {
			return false
		}
		want = want[len(r):]
	}
	return true
}

// receive receives one batch of responses without blocking, checks each,
// releases it, and appends the slots they complete to c.completed. On an
// endpoint that receives in place (datapath.SegmentReceiver: shm) it uses
// RecvSegments, so that the client reads each response where the server
// wrote it instead of copying it first: the load generator's cost per
// response then does not grow with the response's size, as with the
// papers' client machines, and the run measures the server. It returns
// how many packets it received.
func (c *client) receive(now func() int64) (int, error) {
	c.completed = c.completed[:0]
	if c.segRx != nil {
		n, err := c.segRx.RecvSegments(c.spkts)
		if err != nil || n == 0 {
			return n, err
		}
		t := now()
		var first error
		for k := range c.spkts[:n] {
			p := &c.spkts[k]
			i := -1
			if len(p.Segs) == 0 {
				c.bad++
			} else {
				i = c.check(p.Segs[0], p.Segs[1:], t)
			}
			if err := p.Hold.Release(); err != nil && first == nil {
				first = err
			}
			*p = datapath.Segmented{}
			if i >= 0 {
				c.completed = append(c.completed, i)
			}
		}
		return n, first
	}
	n, err := c.ep.Recv(c.pkts)
	if err != nil || n == 0 {
		return n, err
	}
	t := now()
	var first error
	for k := range c.pkts[:n] {
		p := c.pkts[k]
		c.pkts[k] = datapath.Packet{}
		i := c.response(p, t)
		if err := p.Buf.Release(); err != nil && first == nil {
			first = err
		}
		if i >= 0 {
			c.completed = append(c.completed, i)
		}
	}
	return n, first
}

// run drives load for warmup+duration and reports the measured window.
func (c *client) run(cfg Config) (Result, error) {
	c.start = time.Now()
	warm, end := int64(cfg.Warmup), int64(cfg.Warmup+cfg.Duration)
	open := cfg.Rate > 0
	rng := rand.New(rand.NewPCG(1, 2))
	meanGap := 0.0
	if open {
		meanGap = 1e9 / cfg.Rate
	}
	nextAt := int64(0)
	measuring := false
	var doneAt0 uint64
	var measureStart, cpu0 int64
	lastScan := int64(0)
	var spin spinner
	if !open {
		for i := range c.slots {
			if err := c.send(i, c.now()); err != nil {
				return Result{}, err
			}
		}
		c.free = c.free[:0]
		if err := c.ep.Flush(); err != nil {
			return Result{}, err
		}
	}
	for {
		now := c.now()
		if !measuring && now >= warm {
			measuring = true
			if c.measuring != nil {
				c.measuring.Store(true)
			}
			c.hist.Reset()
			doneAt0 = c.done
			c.lost, c.bad = 0, 0
			c.polls = PollStats{}
			measureStart = now
			cpu0 = cpuclock.Thread()
		}
		if now >= end && (c.done-doneAt0 >= uint64(cfg.MinResponses) || now >= end+int64(MaxExtension)) {
			if c.measuring != nil {
				c.measuring.Store(false)
			}
			el := now - measureStart
			r := Result{
				Requests: c.done - doneAt0, Lost: c.lost, Bad: c.bad,
				Elapsed: time.Duration(el),
				P50us:   float64(c.hist.ValueAtQuantile(50)) / 1e3,
				P99us:   float64(c.hist.ValueAtQuantile(99)) / 1e3,
			}
			if el > 0 {
				r.ThroughputRPS = float64(r.Requests) / (float64(el) / 1e9)
			}
			r.Client = c.polls
			if r.Requests > 0 {
				r.ClientNsPerReq = float64(cpuclock.Thread()-cpu0) / float64(r.Requests)
			}
			return r, c.drain()
		}
		sent := false
		if open {
			for nextAt <= now && len(c.free) > 0 {
				i := c.free[len(c.free)-1]
				c.free = c.free[:len(c.free)-1]
				if err := c.send(i, nextAt); err != nil {
					return Result{}, err
				}
				nextAt += int64(rng.ExpFloat64() * meanGap)
				sent = true
			}
			if nextAt <= now { // window full: the schedule slips, counted as lost
				c.lost++
				nextAt += int64(rng.ExpFloat64() * meanGap)
			}
		}
		n, err := c.receive(c.now)
		if err != nil {
			return Result{}, err
		}
		if measuring {
			c.polls.add(n)
		}
		if n > 0 {
			now = c.now()
		}
		for _, i := range c.completed {
			if open {
				c.free = append(c.free, i)
			} else {
				if err := c.send(i, now); err != nil {
					return Result{}, err
				}
				sent = true
			}
		}
		if now-lastScan > int64(LossTimeout/4) {
			lastScan = now
			for i := range c.slots {
				s := &c.slots[i]
				if s.busy && now-s.sent > int64(LossTimeout) {
					c.lost++
					s.busy = false
					if open {
						c.free = append(c.free, i)
					} else {
						if err := c.send(i, now); err != nil {
							return Result{}, err
						}
						sent = true
					}
				}
			}
		}
		if sent {
			if err := c.ep.Flush(); err != nil {
				return Result{}, err
			}
		}
		if n > 0 || sent {
			spin.reset()
		} else if spin.idle() {
			wait := time.Millisecond
			if open {
				wait = min(wait, time.Duration(max(nextAt-c.now(), 0)))
			}
			if wait > 0 {
				if err := c.ep.Wait(wait); err != nil {
					return Result{}, err
				}
			}
		}
	}
}

// drain receives (and releases) late responses for a moment so that no
// request is left in flight when the endpoints close.
func (c *client) drain() error {
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := c.receive(c.now); err != nil {
			return err
		}
	}
	return nil
}
