package service_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// netKind selects the datapath of a test: memnet (optionally lossy) or udp
// on loopback.
type netKind struct {
	udp  bool
	loss float64
}

// openDP opens a datapath on the test's network with pool p.
func (k netKind) openDP(t testing.TB, net *memnet.Network, p *mem.Pool) datapath.Endpoint {
	t.Helper()
	var dp datapath.Endpoint
	var err error
	if k.udp {
		dp, err = datapath.Open("udp", datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), Pool: p})
	} else {
		dp, err = net.Open(datapath.Config{Pool: p}, memnet.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return dp
}

// harness is a server (a Nexus, an endpoint running its loop and a
// service.Server) and the means to dial it.
type harness struct {
	t     testing.TB
	kind  netKind
	net   *memnet.Network
	srvNx *rpc.Nexus
	srv   *service.Server
	srvEp *rpc.Endpoint
}

// newHarness starts a server; register adds the services. Everything is
// closed at the test's end, and every pool must be back to zero then.
func newHarness(t testing.TB, kind netKind, register func(s *service.Server) error, opts ...service.ServerOption) *harness {
	t.Helper()
	h := &harness{t: t, kind: kind, net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1, Faults: memnet.Faults{Loss: kind.loss}})}
	pool := memtest.NewPool(t, mem.PoolConfig{Name: "srv"})
	nx, err := rpc.NewNexus(rpc.NexusConfig{FailureTimeout: 30 * time.Second}) // a loaded test machine must not look like a failed peer
	if err != nil {
		t.Fatal(err)
	}
	h.srvNx = nx
	t.Cleanup(func() {
		if err := nx.Close(); err != nil {
			t.Errorf("server nexus: %v", err)
		}
	})
	if h.srv, err = service.NewServer(nx, opts...); err != nil {
		t.Fatal(err)
	}
	if err := register(h.srv); err != nil {
		t.Fatal(err)
	}
	ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: kind.openDP(t, h.net, pool), Pool: pool, NoReserve: true})
	if err != nil {
		t.Fatal(err)
	}
	h.srvEp = ep
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ep.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("server loop: %v", err)
		}
		if err := ep.Close(); err != nil {
			t.Errorf("server endpoint: %v", err)
		}
	})
	return h
}

// dial makes a client endpoint and a service.Client to the server.
func (h *harness) dial(opts ...service.ClientOption) *service.Client {
	t := h.t
	t.Helper()
	pool := memtest.NewPool(t, mem.PoolConfig{Name: "cli"})
	nx, err := rpc.NewNexus(rpc.NexusConfig{FailureTimeout: 30 * time.Second}) // a loaded test machine must not look like a failed peer
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nx.Close(); err != nil {
			t.Errorf("client nexus: %v", err)
		}
	})
	ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: h.kind.openDP(t, h.net, pool), Pool: pool, NoReserve: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := service.Dial(ctx, ep, h.srvNx.Addr(), 1, opts...)
	if err != nil {
		_ = ep.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("client: %v", err)
		}
		if err := ep.Close(); err != nil && !errors.Is(err, rpc.ErrClosed) { // closed by the test
			t.Errorf("client endpoint: %v", err)
		}
	})
	return c
}

// workloadCtx bounds a test's whole workload (thousands of calls run by
// one Run): not by a fixed budget, which a loaded machine exceeds (six
// other -race test binaries make TestAsyncClient's memnet-loss workload
// take 10-25 s), but only by the test binary's own deadline (go test
// -timeout), minus a margin so that the test reports what did not finish
// before the binary is killed. Without a deadline it ends with cancel.
func workloadCtx(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if dl, ok := t.Deadline(); ok {
		margin := time.Until(dl) / 10
		cancel()
		ctx, cancel = context.WithDeadline(context.Background(), dl.Add(-margin))
	}
	t.Cleanup(cancel)
	return ctx, cancel
}

// callCtx bounds one call of a test.
func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
