package rpc_test

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

var errInjected = errors.New("injected datapath error")

// faultyDP fails every third Recv (half of them after receiving packets,
// which Recv may return together with an error) and every fourth Flush
// (after sending), and fails every call with ErrClosed once closed is set.
type faultyDP struct {
	datapath.Endpoint
	recvs, flushes atomic.Int64
	closed         atomic.Bool
}

func (f *faultyDP) Recv(pkts []datapath.Packet) (int, error) {
	if f.closed.Load() {
		return 0, datapath.ErrClosed
	}
	switch k := f.recvs.Add(1); {
	case k%6 == 0:
		return 0, errInjected
	case k%6 == 3:
		n, err := f.Endpoint.Recv(pkts)
		return n, errors.Join(err, errInjected)
	}
	return f.Endpoint.Recv(pkts)
}

func (f *faultyDP) Flush() error {
	if f.closed.Load() {
		return datapath.ErrClosed
	}
	err := f.Endpoint.Flush()
	if f.flushes.Add(1)%4 == 0 {
		return errors.Join(err, errInjected)
	}
	return err
}

func (f *faultyDP) Wake() error {
	if w, ok := f.Endpoint.(interface{ Wake() error }); ok {
		return w.Wake()
	}
	return nil
}

// Transient datapath errors (a failed receive, with or without packets,
// and a failed flush) are counted and the event loops go on: every request
// completes, none runs twice, the packets received together with an error
// are served and released (the pools' accounting returns to zero at
// cleanup). Only a closed datapath ends Run.
func TestDatapathErrorsAreTransient(t *testing.T) {
	for _, kind := range []string{"memnet", "udp"} {
		t.Run(kind, func(t *testing.T) {
			var sf, cf *faultyDP
			o := opts{kind: kind}
			if kind == "memnet" {
				o.net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 3})
			}
			so := o
			so.wrap = func(dp datapath.Endpoint) datapath.Endpoint {
				sf = &faultyDP{Endpoint: dp}
				return sf
			}
			c := &counter{}
			srv := newNode(t, so, 1, echoHandlers, c)
			srv.serve()
			t.Cleanup(func() { c.check(t) })
			o.wrap = func(dp datapath.Endpoint) datapath.Endpoint {
				cf = &faultyDP{Endpoint: dp}
				return cf
			}
			cli := newNode(t, o, 2, nil, nil)
			s := cli.connect(t, srv.nx, 1)
			sizes := make([]int, 200)
			for i := range sizes {
				sizes[i] = 16 + i%100
			}
			for range 5 {
				callMany(t, cli, []rpc.Session{s}, tEcho, sizes, 30*time.Second)
			}
			st := cli.ep.Stats()
			if st.RecvErrors == 0 || st.SendErrors == 0 || !errors.Is(st.LastDatapathErr, errInjected) {
				t.Errorf("client stats: %d receive and %d send errors, last %v", st.RecvErrors, st.SendErrors, st.LastDatapathErr)
			}
			if cf.recvs.Load() < 6 || sf.recvs.Load() < 6 {
				t.Fatalf("too few receives to inject errors: client %d, server %d", cf.recvs.Load(), sf.recvs.Load())
			}
			select {
			case err := <-srv.done:
				t.Fatalf("server loop ended: %v", err)
			default:
			}

			// A closed datapath ends the loop with its error.
			sf.closed.Store(true)
			select {
			case err := <-srv.done:
				if !errors.Is(err, datapath.ErrClosed) || !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, cornflakes.ErrClosed) {
					t.Fatalf("server loop ended with %v, want datapath.ErrClosed, rpc.ErrClosed and cornflakes.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("server loop still running with a closed datapath")
			}
			srv.cancel = nil // the loop has ended: stop only closes
			sf.closed.Store(false)
		})
	}
}

// A client whose loop stalls past the RTO while the response already sits
// in its receive queue (a descheduled thread, a VM stall) takes the
// response instead of declaring the request lost: the loop receives before
// it scans for losses, as eRPC's does. Scanning first retransmitted the
// request, made the server send its saved response again, and dropped one
// of the two copies as out of order.
func TestStallPastRTOReceivesBeforeLossScan(t *testing.T) {
	for _, kind := range []string{"memnet", "udp"} {
		t.Run(kind, func(t *testing.T) {
			const rto = 5 * time.Millisecond
			cli, srv, c := newPair(t, opts{kind: kind, ep: rpc.EndpointConfig{RTO: rto}})
			s := cli.connect(t, srv.nx, 1)
			// Warm both endpoints up first: a fresh endpoint's first send
			// touches its buffers for the first time, which can take
			// longer than the RTO on a VM (page faults).
			callMany(t, cli, []rpc.Session{s}, tEcho, []int{64, 64}, 10*time.Second)
			for i := range 3 {
				before := cli.ep.Stats().Proto
				done := false
				id := nextID()
				want := payload(id, 64)
				if err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg(want), func(r *rpc.Response) {
					if r.Err != nil || !bytes.Equal(r.Data(), want) {
						t.Errorf("response %d: %v", i, r.Err)
					}
					done = true
				}); err != nil {
					t.Fatal(err)
				}
				if err := cli.ep.RunOnce(); err != nil {
					t.Fatal(err)
				}
				// The "stall": the server runs the handler and sends the
				// response, which waits in the client's receive queue
				// for ten RTOs.
				for deadline := time.Now().Add(10 * time.Second); !c.seen(id); time.Sleep(100 * time.Microsecond) {
					if time.Now().After(deadline) {
						t.Fatal("the server never ran the handler")
					}
				}
				// The handler having run is not enough: its iteration
				// flushes the response at its end, and a descheduled
				// server (-race, a loaded machine) may not have got
				// there. A posted function runs at the start of the
				// server's next iteration, after that flush.
				postAndWait(t, srv.ep, 10*time.Second, "the server loop did not go round again")
				time.Sleep(10 * rto)
				cli.runUntil(t, 10*time.Second, func() bool { return done })
				after := cli.ep.Stats().Proto
				if n := after.Retransmits - before.Retransmits; n != 0 {
					t.Errorf("request %d: %d retransmissions (%d RTOs) after a stall with the response already received", i, n, after.RTOs-before.RTOs)
				}
			}
		})
	}
}

// seen reports whether a request with this id reached a handler.
func (c *counter) seen(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id] > 0
}
