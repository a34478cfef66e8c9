package rpc_test

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// errFull is a backpressure error (like shm.ErrBusy): nothing was sent.
type errFull struct{}

func (errFull) Error() string      { return "test: peer busy" }
func (errFull) Backpressure() bool { return true }

// busyDP refuses sends with a backpressure error in bursts: of every 7
// sends it refuses the 3rd to 5th, without sending them.
type busyDP struct {
	datapath.Endpoint
	sends, refused atomic.Int64
}

func (b *busyDP) refuse() bool {
	if k := b.sends.Add(1) % 7; k >= 3 && k <= 5 {
		b.refused.Add(1)
		return true
	}
	return false
}

func (b *busyDP) Send(dst netip.AddrPort, p []byte) error {
	if b.refuse() {
		return errFull{}
	}
	return b.Endpoint.Send(dst, p)
}

func (b *busyDP) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	if b.refuse() {
		return errors.Join(errFull{}, errors.New("more context"))
	}
	return b.Endpoint.SendSegments(dst, head, segs)
}

func (b *busyDP) Wake() error {
	if w, ok := b.Endpoint.(interface{ Wake() error }); ok {
		return w.Wake()
	}
	return nil
}

// A send the datapath refuses with backpressure (shm's ErrBusy: the peer
// has not made room yet) is not a lost packet: the endpoint keeps it and
// sends it, in order with the packets after it, on a later loop turn. No
// send error, retransmission or out-of-order drop results, every request
// completes with its echo, and every deferred buffer is released (the
// pools' accounting returns to zero at cleanup). The RTO is far beyond the
// test's timeout: a packet treated as lost would fail it.
func TestBackpressureDefers(t *testing.T) {
	var sb, cb *busyDP
	o := opts{ep: rpc.EndpointConfig{RTO: time.Minute}}
	so := o
	so.wrap = func(dp datapath.Endpoint) datapath.Endpoint { sb = &busyDP{Endpoint: dp}; return sb }
	o.wrap = func(dp datapath.Endpoint) datapath.Endpoint { cb = &busyDP{Endpoint: dp}; return cb }
	cli, srv, _ := newPairWith(t, o, so)
	s := cli.connect(t, srv.nx, 1)
	sizes := make([]int, 300)
	for i := range sizes {
		sizes[i] = 16 + (i*997)%(3*rpc.DefaultPreRespSize) // single- and multi-packet
	}
	for range 3 {
		callMany(t, cli, []rpc.Session{s}, tEcho, sizes, 30*time.Second)
	}
	cs := cli.ep.Stats()
	ss := postStats(t, srv)
	if cb.refused.Load() == 0 || sb.refused.Load() == 0 {
		t.Fatalf("nothing refused: client %d, server %d", cb.refused.Load(), sb.refused.Load())
	}
	for _, x := range []struct {
		name string
		st   rpc.Stats
	}{{"client", cs}, {"server", ss}} {
		if x.st.Deferred == 0 || x.st.SendErrors != 0 || x.st.Proto.Retransmits != 0 || x.st.Proto.DropOrder != 0 {
			t.Errorf("%s: %d deferred, %d send errors, %d retransmissions, %d out-of-order drops; want >0, 0, 0, 0",
				x.name, x.st.Deferred, x.st.SendErrors, x.st.Proto.Retransmits, x.st.Proto.DropOrder)
		}
	}
}

// newPairWith is newPair with the server's options apart.
func newPairWith(t *testing.T, o, so opts) (cli, srv *node, c *counter) {
	c = &counter{}
	net := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	o.net, so.net = net, net
	so.ep.OnSession = nil
	srv = newNode(t, so, 1, echoHandlers, c)
	cli = newNode(t, o, 2, nil, nil)
	srv.serve()
	t.Cleanup(func() { c.check(t) })
	return cli, srv, c
}
