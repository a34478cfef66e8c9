package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// TestConcurrentUseDuringCallback: while the owner's loop runs a handler
// (a callback, where the owner's own calls are nested and allowed), a call
// from another goroutine is still concurrent use and must fail, not slip in
// as if it were the handler's (eRPC issue #102: such calls corrupted the
// endpoint silently).
func TestConcurrentUseDuringCallback(t *testing.T) {
	net := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	srvNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srvNx.Close()
	_ = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		close(entered)
		<-release // the loop stays inside this callback meanwhile
		_ = r.RespondBytes([]byte("ok"))
	})
	later := make(chan *rpc.Request, 1)
	_ = srvNx.Register(2, rpc.Dispatch, func(r *rpc.Request) { later <- r }) // answered later
	srvDP, err := net.Open(datapath.Config{}, memnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		_ = srv.Close()
	}()

	cliNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cliNx.Close()
	cliDP, err := net.Open(datapath.Config{}, memnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s, err := cli.Connect(srvNx.Addr(), 1)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !cli.IsConnected(s) {
		if time.Now().After(deadline) {
			t.Fatal("connect timed out")
		}
		if err := cli.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}
	answered := false
	if err := cli.Enqueue(s, 1, rpc.BytesMsg([]byte("x")), func(r *rpc.Response) { answered = r.Err == nil }); err != nil {
		t.Fatal(err)
	}
	for waiting := true; waiting; {
		select {
		case <-entered:
			waiting = false
		default:
			if time.Now().After(deadline) {
				t.Fatal("the handler did not run")
			}
			if err := cli.RunOnce(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The server's loop is inside the handler: every call from this
	// goroutine is concurrent use.
	if _, err := srv.Connect(cliNx.Addr(), 2); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Connect from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.Enqueue(0, 1, rpc.BytesMsg([]byte("y")), nil); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Enqueue from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.Disconnect(0); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Disconnect from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.RunOnce(); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("RunOnce from a foreign goroutine during a handler: %v", err)
	}
	if err := srv.Close(); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Close from a foreign goroutine during a handler: %v", err)
	}
	close(release)
	for !answered {
		if time.Now().After(deadline) {
			t.Fatal("no answer after the handler returned")
		}
		if err := cli.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}

	// A dispatch request answered after its handler returned: only on the
	// endpoint's goroutine (here through Post), not from this one.
	var got string
	if err := cli.Enqueue(s, 2, rpc.BytesMsg([]byte("z")), func(r *rpc.Response) { got = string(r.Data()) }); err != nil {
		t.Fatal(err)
	}
	var req *rpc.Request
	for req == nil {
		select {
		case req = <-later:
		default:
			if time.Now().After(deadline) {
				t.Fatal("the second handler did not run")
			}
			if err := cli.RunOnce(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := req.RespondBytes([]byte("wrong goroutine")); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("Respond from a foreign goroutine: %v", err)
	}
	if err := req.RespondPre(1); !errors.Is(err, rpc.ErrConcurrentUse) {
		t.Errorf("RespondPre from a foreign goroutine: %v", err)
	}
	if p := req.PreResp(); p != nil {
		t.Errorf("PreResp from a foreign goroutine: %d bytes", len(p))
	}
	if err := srv.Post(func() {
		if err := req.RespondBytes([]byte("late")); err != nil {
			t.Errorf("Respond from Post: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for got == "" {
		if time.Now().After(deadline) {
			t.Fatal("no answer to the request answered from Post")
		}
		if err := cli.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}
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
