package bench

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/workload"
)

// multiConn drives several Conns from one client goroutine (Config.ConnsPerClient):
// Send issues each request on the next Conn in turn that has room, and Poll polls
// every Conn once. Request ids stay unique across the Conns (they are the client's),
// so each response is delivered to the client as from a single Conn.
//
// It exists for busy polling: every client goroutine of a spinning generator keeps a
// processor, so on a small machine several spinning clients take turns with the
// busy-polling server on the same cores. One goroutine polling several Conns keeps
// as many requests in flight with a single spinning thread.
type multiConn struct {
	conns    []Conn
	batchers []Batcher // the Conns that batch their sends
	next     int       // the Conn Send tries first
}

// errAllBusy is multiConn.Send's answer when no Conn has room: one value, so
// that a full window costs the polling loop no allocation.
var errAllBusy = fmt.Errorf("bench: every connection is full: %w", ErrBusy)

// Send implements Conn: it tries each Conn once, starting after the one that took
// the previous request, and returns ErrBusy only when every Conn has no room.
func (m *multiConn) Send(id uint64, req *workload.Request) error {
	n := len(m.conns)
	for range n {
		c := m.conns[m.next]
		if m.next++; m.next == n {
			m.next = 0
		}
		err := c.Send(id, req)
		if err == nil || !errors.Is(err, ErrBusy) {
			return err
		}
	}
	return errAllBusy
}

// Poll implements Conn: it polls every Conn once and returns the responses
// delivered in all; the first error stops the round.
func (m *multiConn) Poll(deliver func(id uint64, resp *workload.Response)) (int, error) {
	total := 0
	for _, c := range m.conns {
		n, err := c.Poll(deliver)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// BeginSends implements Batcher for the Conns that batch their sends.
func (m *multiConn) BeginSends() error {
	for _, b := range m.batchers {
		if err := b.BeginSends(); err != nil {
			return err
		}
	}
	return nil
}

// EndSends implements Batcher: it ends the batch of every Conn that batches
// (all of them, even after an error, which it returns joined).
func (m *multiConn) EndSends() error {
	var err error
	for _, b := range m.batchers {
		if e := b.EndSends(); e != nil {
			err = errors.Join(err, e)
		}
	}
	return err
}

// Close implements Conn: it closes every Conn and returns their errors joined.
func (m *multiConn) Close() error {
	var errs []error
	for _, c := range m.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// dialClient dials client i's Conn: with ConnsPerClient k > 1, k Conns (Target
// indices i*k .. i*k+k-1) behind one multiConn.
func dialClient(cfg *Config, i int) (Conn, error) {
	k := cfg.ConnsPerClient
	if k <= 1 {
		return cfg.Target.Dial(i)
	}
	m := &multiConn{conns: make([]Conn, 0, k)}
	for j := range k {
		c, err := cfg.Target.Dial(i*k + j)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("connection %d: %w", j, err), m.Close())
		}
		m.conns = append(m.conns, c)
		if b, ok := c.(Batcher); ok {
			m.batchers = append(m.batchers, b)
		}
	}
	return m, nil
}
