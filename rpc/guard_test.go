package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// heldRequest is a request (type 1) that the server's handler holds until
// release is called: a server endpoint inside a handler (Dispatch) or a
// worker busy with it (Worker), and the client that sent it.
type heldRequest struct {
	srv, cli *node
	s        rpc.Session
	answered bool // the client got the handler's answer
	release  func()
}

// holdRequest starts a server whose handler of type 1 (in mode) blocks
// until release, connects a client, sends one request and drives the
// client until the handler holds it. register adds more handlers.
func holdRequest(t *testing.T, mode rpc.Mode, register func(*rpc.Nexus)) *heldRequest {
	t.Helper()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := &heldRequest{release: func() { once.Do(func() { close(release) }) }}
	t.Cleanup(h.release) // a failed check must not leave the handler blocked
	o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}
	h.srv = newNode(t, o, 1, func(nx *rpc.Nexus, _ *counter) {
		_ = nx.Register(1, mode, func(r *rpc.Request) {
			close(entered)
			<-release // a dispatch handler keeps the loop inside this callback meanwhile
			_ = r.RespondBytes([]byte("ok"))
		})
		if register != nil {
			register(nx)
		}
	}, nil)
	h.srv.serve()
	h.cli = newNode(t, o, 2, nil, nil)
	h.s = h.cli.connect(t, h.srv.nx, 1)
	if err := h.cli.ep.Enqueue(h.s, 1, rpc.BytesMsg([]byte("x")), func(r *rpc.Response) { h.answered = r.Err == nil }); err != nil {
		t.Fatal(err)
	}
	h.cli.runUntil(t, 10*time.Second, func() bool {
		select {
		case <-entered:
			return true
		default:
			return false
		}
	})
	return h
}

// TestConcurrentUseDuringCallback: while the owner's loop runs a handler
// (a callback, where the owner's own calls are nested and allowed), a call
// from another goroutine is still concurrent use and must fail, not slip in
// as if it were the handler's (eRPC issue #102: such calls corrupted the
// endpoint silently).
func TestConcurrentUseDuringCallback(t *testing.T) {
	later := make(chan *rpc.Request, 1)
	h := holdRequest(t, rpc.Dispatch, func(nx *rpc.Nexus) {
		_ = nx.Register(2, rpc.Dispatch, func(r *rpc.Request) { later <- r }) // answered later
	})
	srv, cli, s := h.srv, h.cli, h.s

	// The server's loop is inside the handler: every call from this
	// goroutine is concurrent use.
	if _, err := srv.ep.Connect(cli.nx.Addr(), 2); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Connect from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.ep.Enqueue(0, 1, rpc.BytesMsg([]byte("y")), nil); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Enqueue from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.ep.Disconnect(0); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Disconnect from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.ep.RunOnce(); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("RunOnce from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.ep.Close(); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Close from a foreign goroutine during a handler: %v", err)
	}
	h.release()
	cli.runUntil(t, 10*time.Second, func() bool { return h.answered })

	// A dispatch request answered after its handler returned: only on the
	// endpoint's goroutine (here through Post), not from this one.
	var got string
	if err := cli.ep.Enqueue(s, 2, rpc.BytesMsg([]byte("z")), func(r *rpc.Response) { got = string(r.Data()) }); err != nil {
		t.Fatal(err)
	}
	var req *rpc.Request
	cli.runUntil(t, 10*time.Second, func() bool {
		select {
		case req = <-later:
			return true
		default:
			return false
		}
	})
	if err := req.RespondBytes([]byte("wrong goroutine")); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Respond from a foreign goroutine: %v", err)
	}
	if err := req.RespondPre(1); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("RespondPre from a foreign goroutine: %v", err)
	}
	if p := req.PreResp(); p != nil {
		t.Errorf("PreResp from a foreign goroutine: %d bytes", len(p))
	}
	if err := srv.ep.Post(func() {
		if err := req.RespondBytes([]byte("late")); err != nil {
			t.Errorf("Respond from Post: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	cli.runUntil(t, 10*time.Second, func() bool { return got != "" })
	if got != "late" {
		t.Errorf("answer %q, want %q", got, "late")
	}
}

// TestStatsFromAnotherGoroutine: a metrics exporter reads an endpoint's
// counters while its loop runs on another goroutine. It gets the loop's
// last publication (no data race: run with -race), the counts never go
// back, and they are final once Run has returned; the exporter's reads
// never make the loop's own calls fail.
func TestStatsFromAnotherGoroutine(t *testing.T) {
	cli, srv, _ := newPair(t, opts{})
	s := cli.connect(t, srv.nx, 1)
	stop := make(chan struct{})
	monitorDone := make(chan error, 1)
	go func() {
		var last uint64
		for {
			select {
			case <-stop:
				monitorDone <- nil
				return
			default:
			}
			h := srv.ep.Stats().Handlers
			if h < last {
				monitorDone <- fmt.Errorf("handlers went back from %d to %d", last, h)
				return
			}
			last = h
		}
	}()
	const n = 200
	callMany(t, cli, []rpc.Session{s}, tEcho, make([]int, n), 30*time.Second) // n 8-byte echoes
	close(stop)
	if err := <-monitorDone; err != nil {
		t.Fatal(err)
	}
	srv.cancel()
	if err := <-srv.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	srv.cancel = nil
	if h := srv.ep.Stats().Handlers; h != n {
		t.Errorf("Stats after Run returned: %d handlers, want %d", h, n)
	}
	if c := cli.ep.Stats().Continuations; c != n { // the client's own goroutine: current
		t.Errorf("client continuations %d, want %d", c, n)
	}
}

// TestQueriesFromAnotherGoroutine: IsConnected, Pending and
// CongestionControlled read the loop's state, so another goroutine gets an
// answer only while nobody uses the endpoint. While the loop runs elsewhere
// they report false and 0 instead of racing with it (run with -race).
func TestQueriesFromAnotherGoroutine(t *testing.T) {
	h := holdRequest(t, rpc.Worker, nil)
	cli, s := h.cli, h.s
	// Nobody else uses the client endpoint: any goroutine gets answers.
	if !cli.ep.IsConnected(s) || cli.ep.Pending(s) != 1 || cli.ep.CongestionControlled(s) {
		t.Fatalf("idle endpoint: connected %v, pending %d, cc %v; want true, 1, false",
			cli.ep.IsConnected(s), cli.ep.Pending(s), cli.ep.CongestionControlled(s))
	}
	running := make(chan struct{})
	if err := cli.ep.Post(func() { close(running) }); err != nil {
		t.Fatal(err)
	}
	cli.serve() // the client's loop now runs on its own goroutine
	<-running
	for range 1000 {
		if cli.ep.IsConnected(s) || cli.ep.Pending(s) != 0 {
			t.Fatalf("while the loop runs elsewhere: connected %v, pending %d; want false, 0",
				cli.ep.IsConnected(s), cli.ep.Pending(s))
		}
	}
	h.release()
	cli.cancel() // back to this goroutine: the request may still be in flight
	if err := <-cli.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	cli.cancel = nil
	cli.runUntil(t, 10*time.Second, func() bool { return h.answered })
	if !cli.ep.IsConnected(s) || cli.ep.Pending(s) != 0 {
		t.Errorf("after the loop returned: connected %v, pending %d; want true, 0", cli.ep.IsConnected(s), cli.ep.Pending(s))
	}
}

// TestWaitConnected: WaitConnected returns once the handshake ends, with
// the reason of a failure, honours its context when nobody answers, and
// refuses what it cannot do (an unknown session, a call from inside a
// continuation).
func TestWaitConnected(t *testing.T) {
	o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}
	srv := newNode(t, o, 1, echoHandlers, &counter{})
	srv.serve()
	cli := newNode(t, o, 2, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s, err := cli.ep.Connect(srv.nx.Addr(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.ep.WaitConnected(ctx, s); err != nil || !cli.ep.IsConnected(s) {
		t.Fatalf("WaitConnected: %v (connected %v)", err, cli.ep.IsConnected(s))
	}
	if err := cli.ep.WaitConnected(ctx, s); err != nil {
		t.Errorf("WaitConnected on a connected session: %v", err)
	}

	bad, _ := cli.ep.Connect(srv.nx.Addr(), 9) // no endpoint 9 there
	if err := cli.ep.WaitConnected(ctx, bad); !errors.Is(err, rpc.ErrConnectFailed) || !errors.Is(err, rpc.ErrInvalidEndpointID) {
		t.Errorf("WaitConnected to a missing endpoint: %v, want ErrConnectFailed and ErrInvalidEndpointID", err)
	}

	// A Nexus that does not answer: the context ends the wait.
	silent := netip.MustParseAddrPort("127.0.0.1:9") // discard: nothing answers
	gone, _ := cli.ep.Connect(silent, 1)
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if err := cli.ep.WaitConnected(short, gone); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitConnected past its deadline: %v, want DeadlineExceeded", err)
	}

	if err := cli.ep.WaitConnected(ctx, 999); !errors.Is(err, rpc.ErrNoSession) {
		t.Errorf("WaitConnected of an unknown session: %v, want ErrNoSession", err)
	}
	var inner error
	finished := false
	if err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg([]byte("x")), func(*rpc.Response) {
		inner, finished = cli.ep.WaitConnected(ctx, s), true
	}); err != nil {
		t.Fatal(err)
	}
	cli.runUntil(t, 10*time.Second, func() bool { return finished })
	if !errors.Is(inner, rpc.ErrReentrant) {
		t.Errorf("WaitConnected from a continuation: %v, want ErrReentrant", inner)
	}
}
