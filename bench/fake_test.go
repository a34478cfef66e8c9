package bench

import (
	"context"
	"sync"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

// fakeServer is an in-process target: a single FIFO server with a fixed
// service time per request in front of a workload.MemStore. Requests are
// executed when their completion time has passed and the client polls, so
// the generator sees a real queue (latency grows with load, saturation at
// 1/service) without sockets or goroutines.
type fakeServer struct {
	mu      sync.Mutex
	store   *workload.MemStore
	service time.Duration
	freeAt  time.Time
	// corruptEvery > 0 flips one byte of every n-th read response.
	corruptEvery int
	// corruptMid flips the byte at 3/4 of the value instead of byte 0
	// (outside the words workload.VerifySpot reads, for values >= 64 bytes).
	corruptMid bool
	reads      int
	// silent servers never answer
	silent bool
	// failPuts answers puts with StatusError
	failPuts bool
	open     int
	served   uint64 // requests accepted (the metered fake's request count)
}

// meteredFake is a fakeServer that reports, as a ServerMeter, exactly its
// service time per request served.
type meteredFake struct{ *fakeServer }

func (m meteredFake) ServerUsage() (time.Duration, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return time.Duration(m.served) * m.service, m.served, nil
}

// sleepingFake also counts one sleep per four requests served (SleepMeter).
type sleepingFake struct{ meteredFake }

func (m sleepingFake) ServerSleeps() (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served / 4, nil
}

func newFakeServer(service time.Duration) *fakeServer {
	return &fakeServer{store: workload.NewMemStore(), service: service}
}

// Dial opens a connection; when no other is open, the backlog of closed
// connections (whose requests are gone) is dropped.
func (s *fakeServer) Dial(int) (Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == 0 {
		s.freeAt = time.Time{}
	}
	s.open++
	return &fakeConn{s: s}, nil
}

type pending struct {
	id    uint64
	req   *workload.Request
	ready time.Time
}

type fakeConn struct {
	s       *fakeServer
	q       []pending
	head    int
	resp    workload.Response
	scratch []byte
	closed  bool
}

func (c *fakeConn) Send(id uint64, req *workload.Request) error {
	now := time.Now()
	c.s.mu.Lock()
	start := c.s.freeAt
	if now.After(start) {
		start = now
	}
	c.s.freeAt = start.Add(c.s.service)
	c.s.served++
	ready := c.s.freeAt
	c.s.mu.Unlock()
	if c.head > 0 && c.head == len(c.q) {
		c.q, c.head = c.q[:0], 0
	}
	c.q = append(c.q, pending{id: id, req: req, ready: ready})
	return nil
}

func (c *fakeConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	if c.s.silent {
		return 0, nil
	}
	now := time.Now()
	n := 0
	for c.head < len(c.q) && !c.q[c.head].ready.After(now) {
		p := c.q[c.head]
		c.head++
		if c.s.failPuts && !p.req.Op.IsRead() {
			c.resp.Status, c.resp.Values = workload.StatusError, c.resp.Values[:0]
		} else {
			c.s.store.Apply(p.req, &c.resp)
		}
		if p.req.Op.IsRead() && c.s.corruptEvery > 0 && len(c.resp.Values) > 0 && len(c.resp.Values[0]) > 0 {
			c.s.mu.Lock()
			c.s.reads++
			bad := c.s.reads%c.s.corruptEvery == 0
			c.s.mu.Unlock()
			if bad {
				c.scratch = append(c.scratch[:0], c.resp.Values[0]...)
				at := 0
				if c.s.corruptMid {
					at = 3 * len(c.scratch) / 4
				}
				c.scratch[at] ^= 0xff
				c.resp.Values[0] = c.scratch
			}
		}
		deliver(p.id, &c.resp)
		n++
	}
	return n, nil
}

func (c *fakeConn) Close() error {
	if !c.closed {
		c.closed = true
		c.s.mu.Lock()
		c.s.open--
		c.s.mu.Unlock()
	}
	return nil
}

// preloaded returns a fake server holding w's data.
func preloaded(w workload.Workload, service time.Duration) *fakeServer {
	s := newFakeServer(0)
	conn, _ := s.Dial(0)
	if _, err := Preload(context.Background(), w, conn, 64, time.Second); err != nil {
		panic(err)
	}
	conn.Close()
	s.service = service
	return s
}

// reorderConn executes its in-flight requests newest first when polled:
// the worst reordering a lossy network with retransmissions can produce.
type reorderConn struct {
	store *workload.MemStore
	q     []pending
	resp  workload.Response
}

func (c *reorderConn) Send(id uint64, req *workload.Request) error {
	c.q = append(c.q, pending{id: id, req: req})
	return nil
}

func (c *reorderConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	n := len(c.q)
	for i := n - 1; i >= 0; i-- {
		c.store.Apply(c.q[i].req, &c.resp)
		deliver(c.q[i].id, &c.resp)
	}
	c.q = c.q[:0]
	return n, nil
}

func (c *reorderConn) Close() error { return nil }
