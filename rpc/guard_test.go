package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// TestConcurrentUseDuringCallback: while the owner's loop runs a handler
// (a callback, where the owner's own calls are nested and allowed), a call
// from another goroutine is still concurrent use and must fail, not slip in
// as if it were the handler's (eRPC issue #102: such calls corrupted the
// endpoint silently).
func TestConcurrentUseDuringCallback(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	later := make(chan *rpc.Request, 1)
	o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}
	srv := newNode(t, o, 1, func(nx *rpc.Nexus, _ *counter) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			close(entered)
			<-release // the loop stays inside this callback meanwhile
			_ = r.RespondBytes([]byte("ok"))
		})
		_ = nx.Register(2, rpc.Dispatch, func(r *rpc.Request) { later <- r }) // answered later
	}, nil)
	srv.serve()
	cli := newNode(t, o, 2, nil, nil)
	s := cli.connect(t, srv.nx, 1)

	answered := false
	if err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("x")), func(r *rpc.Response) { answered = r.Err == nil }); err != nil {
		t.Fatal(err)
	}
	cli.runUntil(t, 10*time.Second, func() bool {
		select {
		case <-entered:
			return true
		default:
			return false
		}
	})

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
	close(release)
	cli.runUntil(t, 10*time.Second, func() bool { return answered })

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
	entered, release := make(chan struct{}), make(chan struct{})
	released := false
	defer func() {
		if !released { // a failed check must not leave the worker blocked
			close(release)
		}
	}()
	o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}
	srv := newNode(t, o, 1, func(nx *rpc.Nexus, _ *counter) {
		_ = nx.Register(1, rpc.Worker, func(r *rpc.Request) {
			close(entered)
			<-release
			_ = r.RespondBytes([]byte("ok"))
		})
	}, nil)
	srv.serve()
	cli := newNode(t, o, 2, nil, nil)
	s := cli.connect(t, srv.nx, 1)
	answered := false
	if err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("x")), func(r *rpc.Response) { answered = r.Err == nil }); err != nil {
		t.Fatal(err)
	}
	cli.runUntil(t, 10*time.Second, func() bool {
		select {
		case <-entered:
			return true
		default:
			return false
		}
	})
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
	close(release)
	released = true
	cli.cancel() // back to this goroutine: the request may still be in flight
	if err := <-cli.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	cli.cancel = nil
	cli.runUntil(t, 10*time.Second, func() bool { return answered })
	if !cli.ep.IsConnected(s) || cli.ep.Pending(s) != 0 {
		t.Errorf("after the loop returned: connected %v, pending %d; want true, 0", cli.ep.IsConnected(s), cli.ep.Pending(s))
	}
}
