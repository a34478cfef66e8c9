package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

// limitedConn admits at most limit requests in flight (ErrBusy beyond), like an
// RPC session's credits, and counts what it carried.
type limitedConn struct {
	Conn
	limit, inflight, sent, delivered int
	closed                           bool
}

var errNoCredit = fmt.Errorf("no credit: %w", ErrBusy)

func (c *limitedConn) Send(id uint64, req *workload.Request) error {
	if c.inflight == c.limit {
		return errNoCredit
	}
	if err := c.Conn.Send(id, req); err != nil {
		return err
	}
	c.inflight++
	c.sent++
	return nil
}

func (c *limitedConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	n, err := c.Conn.Poll(deliver)
	c.inflight -= n
	c.delivered += n
	return n, err
}

func (c *limitedConn) Close() error { c.closed = true; return c.Conn.Close() }

func TestConnsPerClient(t *testing.T) {
	w := mustParse(t, "cdn:objects=50")
	srv := preloaded(w, 0)
	var conns []*limitedConn
	var dialed []int
	target := TargetFunc(func(i int) (Conn, error) {
		c, err := srv.Dial(i)
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, limit: 4}
		conns, dialed = append(conns, lc), append(dialed, i)
		return lc, nil
	})
	r, err := Run(context.Background(), Config{Workload: w, Target: target, Clients: 2, ConnsPerClient: 3,
		// No warm-up and half a second: under a loaded CI machine a 100 ms
		// run with a 10 % warm-up once measured no response at all.
		Outstanding: 12, Duration: 500 * time.Millisecond, Warmup: -1, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dialed) != "[0 1 2 3 4 5]" {
		t.Fatalf("dialed Target indices %v, want 0..5", dialed)
	}
	if r.Received == 0 || r.Errors != 0 || r.Mismatches != 0 || r.Lost != 0 || r.Unexpected != 0 {
		t.Fatalf("result %+v", r)
	}
	for i, c := range conns {
		// 12 in flight over 3 connections of 4 credits: every one carries
		// requests, none more than its credits, and all are closed.
		if c.sent == 0 || c.sent != c.delivered || !c.closed {
			t.Errorf("connection %d: sent %d, delivered %d, closed %v", i, c.sent, c.delivered, c.closed)
		}
	}
}

func TestMultiConnBusy(t *testing.T) {
	w := mustParse(t, "cdn:objects=5")
	srv := preloaded(w, 0)
	a, _ := srv.Dial(0)
	b, _ := srv.Dial(1)
	m := &multiConn{conns: []Conn{&limitedConn{Conn: a, limit: 1}, &limitedConn{Conn: b, limit: 1}}}
	s := w.NewStream(0, 1, 1)
	var reqs [3]workload.Request
	for i := range reqs {
		s.Next(&reqs[i])
	}
	if err := m.Send(1, &reqs[0]); err != nil {
		t.Fatal(err)
	}
	if err := m.Send(2, &reqs[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Send(3, &reqs[2]); !errors.Is(err, ErrBusy) {
		t.Fatalf("third send with every connection full: %v, want ErrBusy", err)
	}
	// A full window is the polling loop's common case: refusing costs no allocation.
	if a := testing.AllocsPerRun(100, func() { _ = m.Send(3, &reqs[2]) }); a != 0 {
		t.Errorf("a refused send allocates %.1f times", a)
	}
	got := map[uint64]bool{}
	n, err := m.Poll(func(id uint64, _ *workload.Response) { got[id] = true })
	if err != nil || n != 2 || !got[1] || !got[2] {
		t.Fatalf("poll: %d responses %v, err %v", n, got, err)
	}
	if err := m.Send(3, &reqs[2]); err != nil {
		t.Fatalf("send after the responses freed credit: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConnsPerClientConfig(t *testing.T) {
	w := mustParse(t, "cdn:objects=5")
	for _, cfg := range []Config{
		{Workload: w, Target: newFakeServer(0), Outstanding: 1, Duration: time.Millisecond, ConnsPerClient: -1},
		{Workload: w, Target: newFakeServer(0), Outstanding: 1, Duration: time.Millisecond, Clients: 2, ConnsPerClient: 2049},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("ConnsPerClient %d with %d clients: %v, want ErrConfig", cfg.ConnsPerClient, cfg.Clients, err)
		}
	}
}

// batchConn records how the generator brackets its sends.
type batchConn struct {
	Conn
	open                     bool
	begins, ends, outside, n int
}

func (c *batchConn) BeginSends() error {
	if c.open {
		return errors.New("BeginSends inside a batch")
	}
	c.open = true
	c.begins++
	return nil
}

func (c *batchConn) EndSends() error {
	if !c.open {
		return errors.New("EndSends outside a batch")
	}
	c.open = false
	c.ends++
	return nil
}

func (c *batchConn) Send(id uint64, req *workload.Request) error {
	if !c.open {
		c.outside++
	}
	c.n++
	return c.Conn.Send(id, req)
}

// Every send of both loops happens inside a BeginSends..EndSends bracket, on
// a plain Conn and behind a multiConn.
func TestGeneratorBatchesSends(t *testing.T) {
	w := mustParse(t, "cdn:objects=50")
	for _, k := range []int{1, 3} {
		for _, closed := range []bool{true, false} {
			srv := preloaded(w, 0)
			var conns []*batchConn
			target := TargetFunc(func(i int) (Conn, error) {
				c, err := srv.Dial(i)
				bc := &batchConn{Conn: c}
				conns = append(conns, bc)
				return bc, err
			})
			cfg := Config{Workload: w, Target: target, ConnsPerClient: k, Duration: 100 * time.Millisecond, Check: true}
			if closed {
				cfg.Outstanding = 8
			} else {
				cfg.Rate = 20000
			}
			r, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Received == 0 || r.Errors != 0 || r.Mismatches != 0 {
				t.Fatalf("k=%d closed=%v: result %+v", k, closed, r)
			}
			if k > 1 {
				// The multiplexer's bracket allocates nothing per iteration.
				m := &multiConn{}
				for _, c := range conns {
					m.conns, m.batchers = append(m.conns, c), append(m.batchers, c)
				}
				if a := testing.AllocsPerRun(100, func() { _ = m.BeginSends(); _ = m.EndSends() }); a != 0 {
					t.Errorf("BeginSends+EndSends allocate %.1f times", a)
				}
			}
			for i, c := range conns {
				if c.n == 0 || c.outside != 0 || c.begins != c.ends || c.open {
					t.Errorf("k=%d closed=%v conn %d: %d sends, %d outside a batch, %d begins, %d ends", k, closed, i, c.n, c.outside, c.begins, c.ends)
				}
			}
		}
	}
}
