package rpc_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

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
				if !errors.Is(err, datapath.ErrClosed) {
					t.Fatalf("server loop ended with %v, want datapath.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("server loop still running with a closed datapath")
			}
			srv.cancel = nil // the loop has ended: stop only closes
			sf.closed.Store(false)
		})
	}
}
