package rpc_test

// Shared fixtures of the endpoint tests: nodes over memnet or UDP, echo
// handlers that count every invocation, payloads and call helpers.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
)

const (
	tEcho   = 1
	tWorker = 2
	tNested = 3
	tHang   = 4
	tPre    = 5
	tObj    = 6
)

// counter counts handler invocations per request id (the first 8 bytes).
type counter struct {
	mu sync.Mutex
	n  map[uint64]int
}

func (c *counter) add(data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[uint64]int{}
	}
	if len(data) >= 8 {
		c.n[binary.LittleEndian.Uint64(data)]++
	}
}

func (c *counter) check(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range c.n {
		if n > 1 {
			t.Errorf("request %d handled %d times", id, n)
		}
	}
}

type node struct {
	nx     *rpc.Nexus
	ep     *rpc.Endpoint
	pool   *mem.Pool
	cancel context.CancelFunc
	done   chan error
}

type opts struct {
	kind       string // "memnet" (default) or "udp"
	local      string // udp bind address (default 127.0.0.1:0)
	net        *memnet.Network
	maxPayload int
	ep         rpc.EndpointConfig
	nexus      rpc.NexusConfig
	wrap       func(datapath.Endpoint) datapath.Endpoint // optional datapath wrapper (server and client)
}

func openDP(t *testing.T, o opts, pool *mem.Pool) datapath.Endpoint {
	t.Helper()
	cfg := datapath.Config{Pool: pool, MaxPayload: o.maxPayload}
	var dp datapath.Endpoint
	var err error
	if o.kind == "udp" {
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
		if o.local != "" {
			cfg.Local = netip.MustParseAddrPort(o.local)
		}
		dp, err = datapath.Open("udp", cfg)
	} else {
		dp, err = o.net.Open(cfg, memnet.Options{RxRing: 1024})
	}
	if err != nil {
		t.Fatal(err)
	}
	return dp
}

func newNode(t *testing.T, o opts, id uint8, register func(*rpc.Nexus, *counter), c *counter) *node {
	t.Helper()
	pool := memtest.NewPool(t, mem.PoolConfig{Name: t.Name()})
	if o.nexus.FailureTimeout == 0 {
		// Generous: tests run under -race on loaded machines, where a
		// starved heartbeat must not look like a failed peer.
		o.nexus.FailureTimeout = 10 * time.Second
	}
	nx, err := rpc.NewNexus(o.nexus)
	if err != nil {
		t.Fatal(err)
	}
	if register != nil {
		register(nx, c)
	}
	cfg := o.ep
	cfg.ID = id
	cfg.Pool = pool
	cfg.Datapath = openDP(t, o, pool)
	if o.wrap != nil {
		cfg.Datapath = o.wrap(cfg.Datapath)
	}
	ep, err := nx.NewEndpoint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{nx: nx, ep: ep, pool: pool}
	t.Cleanup(func() { n.stop(t) })
	return n
}

// serve runs the node's event loop on its own goroutine.
func (n *node) serve() {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.done = make(chan error, 1)
	go func() { n.done <- n.ep.Run(ctx) }()
}

func (n *node) stop(t *testing.T) {
	if n.ep == nil {
		return
	}
	if n.cancel != nil {
		n.cancel()
		<-n.done
		n.cancel = nil
	}
	if err := n.ep.Close(); err != nil {
		t.Errorf("endpoint close: %v", err)
	}
	n.ep = nil
	// Close reports worker requests whose bytes are still held (a
	// worker that never answered): the worker pool's accounting.
	if err := n.nx.Close(); err != nil {
		t.Errorf("nexus close: %v", err)
	}
}

// connect creates a session from c to server endpoint id and drives c's
// loop until it is connected.
func (n *node) connect(t *testing.T, srv *rpc.Nexus, id uint8) rpc.Session {
	t.Helper()
	s, err := n.ep.Connect(srv.Addr(), id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !n.ep.IsConnected(s) {
		if time.Now().After(deadline) {
			t.Fatal("connect timed out")
		}
		if err := n.ep.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// runUntil drives n's loop until cond or the bound.
func (n *node) runUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v", d)
		}
		if err := n.ep.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}
}

func echoHandlers(nx *rpc.Nexus, c *counter) {
	_ = nx.Register(tEcho, rpc.Dispatch, func(r *rpc.Request) {
		c.add(r.Data())
		_ = r.RespondBytes(r.Data())
	})
	_ = nx.Register(tWorker, rpc.Worker, func(r *rpc.Request) {
		c.add(r.Data())
		_ = r.RespondBytes(r.Data())
	})
	_ = nx.Register(tPre, rpc.Dispatch, func(r *rpc.Request) {
		c.add(r.Data())
		n := copy(r.PreResp(), r.Data())
		_ = r.RespondPre(n)
	})
}

func payload(id uint64, n int) []byte {
	if n < 8 {
		n = 8
	}
	b := make([]byte, n)
	binary.LittleEndian.PutUint64(b, id)
	for i := 8; i < n; i++ {
		b[i] = byte(id + uint64(i)*13)
	}
	return b
}

var idSeq struct {
	sync.Mutex
	n uint64
}

func nextID() uint64 {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	return idSeq.n
}

// postAndWait posts an empty function to ep and waits up to d for ep's
// loop to run it, failing with what (the loop runs posted functions at
// the start of an iteration: after the previous iteration's flush).
func postAndWait(t *testing.T, ep *rpc.Endpoint, d time.Duration, what string) {
	t.Helper()
	ran := make(chan struct{})
	if err := ep.Post(func() { close(ran) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(d):
		t.Fatal(what)
	}
}

// callMany enqueues reqs requests of the given sizes on sessions and waits for
// all, checking echoed bytes.
func callMany(t *testing.T, cli *node, sessions []rpc.Session, reqType uint8, sizes []int, timeout time.Duration) {
	t.Helper()
	pending := 0
	var firstErr error
	for i, sz := range sizes {
		want := payload(nextID(), sz)
		s := sessions[i%len(sessions)]
		pending++
		err := cli.ep.Enqueue(s, reqType, rpc.BytesMsg(want), func(r *rpc.Response) {
			pending--
			if r.Err != nil {
				if firstErr == nil {
					firstErr = r.Err
				}
				return
			}
			if !bytes.Equal(r.Data(), want) {
				if firstErr == nil {
					firstErr = errors.New("echo mismatch")
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cli.runUntil(t, timeout, func() bool { return pending == 0 })
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

func newPair(t *testing.T, o opts) (cli, srv *node, c *counter) {
	c = &counter{}
	if o.kind != "udp" && o.net == nil {
		o.net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	}
	so := o
	so.ep.OnSession = nil // session events are for the client (it runs on the test goroutine)
	srv = newNode(t, so, 1, echoHandlers, c)
	cli = newNode(t, o, 2, nil, nil)
	srv.serve()
	t.Cleanup(func() { c.check(t) })
	return cli, srv, c
}
