package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// runUntilCond drives n's event loop until cond holds, for at most 5s; it
// reports whether cond held.
func (n *exampleNode) runUntilCond(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		if err := n.ep.RunOnce(); err != nil {
			return false
		}
	}
	return true
}

// ObjectMsg sends a Cornflakes object as it is (serialize-and-send): the
// client's request and the server's response are generated kvpb messages.
// The server decodes the request zero-copy from the receive buffer and
// answers with a value that lives in registered memory, sent as its own
// scatter-gather entry (split across packets by offset) without a copy.
func ExampleObjectMsg() {
	// The server's value, in registered memory.
	store, _ := mem.NewPool(mem.PoolConfig{Name: "example-store"})
	defer store.Close()
	value, _ := store.AllocCopy(bytes.Repeat([]byte("cornflakes "), 1000))
	defer value.Release()

	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srvArena := wire.NewArena() // used on the server's endpoint goroutine only
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			// The RPC layer holds its own references once Respond returns.
			defer srvArena.Reset()
			req, resp := kvpb.NewReq(srvArena), kvpb.NewResp(srvArena)
			// Zero-copy decoding: the key aliases the receive buffer.
			if err := req.DecodeBytes(r.Data()); err != nil {
				resp.SetStatus(2)
				_ = r.Respond(rpc.ObjectMsg(resp))
				return
			}
			keys, _ := req.GetKeys()
			if keys.Len() == 1 && string(keys.At(0)) == "greeting" {
				resp.SetValBuf(value) // zero-copy: a reference, not a copy
			} else {
				resp.SetStatus(1) // not found
			}
			fmt.Printf("server: %d key(s), response %+v\n", keys.Len(), resp.Sizes())
			_ = r.Respond(rpc.ObjectMsg(resp))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	a := wire.NewArena()
	defer a.Reset()
	req := kvpb.NewReq(a)
	req.InitKeys(1).AppendString("greeting")
	buf, err := cli.ep.Call(context.Background(), s, 1, rpc.ObjectMsg(req))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp := kvpb.NewResp(a)
	err = resp.Decode(buf) // zero-copy: the arena keeps its own reference on buf
	_ = buf.Release()
	if err != nil {
		fmt.Println(err)
		return
	}
	val := resp.GetVal()
	fmt.Printf("client: status %d, %d bytes: %q...\n", resp.GetStatus(), len(val), val[:21])
	// Output:
	// server: 1 key(s), response {Header:16 Copied:0 ZeroCopy:11000 Entries:1}
	// client: status 0, 11000 bytes: "cornflakes cornflakes"...
}

// Call sends a request and runs the event loop until the answer, a failure
// (an error of this package, tested with errors.Is) or ctx's deadline; an
// expired call returns ctx.Err() and its response is dropped if it comes.
func ExampleEndpoint_Call() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes([]byte("pong")) })
		_ = nx.Register(2, rpc.Dispatch, func(r *rpc.Request) {}) // never answers
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	call := func(reqType uint8, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		resp, err := cli.ep.Call(ctx, s, reqType, rpc.BytesMsg([]byte("ping")))
		switch {
		case err == nil:
			fmt.Printf("type %d: %s\n", reqType, resp.Bytes())
			_ = resp.Release() // Call's answer is owned by the caller
		case errors.Is(err, rpc.ErrNoHandler):
			fmt.Printf("type %d: no handler at the server\n", reqType)
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Printf("type %d: deadline exceeded\n", reqType)
		default:
			fmt.Printf("type %d: %v\n", reqType, err)
		}
	}
	call(1, 5*time.Second)
	call(3, 5*time.Second) // nothing registered for type 3
	call(2, 50*time.Millisecond)
	// Output:
	// type 1: pong
	// type 3: no handler at the server
	// type 2: deadline exceeded
}

// OnSession reports a client's session events on its endpoint goroutine:
// the session connects, fails when the server's process goes away (found
// by heartbeats after the client Nexus's FailureTimeout; pending requests
// fail with ErrPeerFailed), and a new session connects once the server is
// back on the same control address.
func ExampleEndpointConfig_onSession() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	register := func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {}) // never answers
	}
	srv, _ := newExampleNodeNexus(net, 1, rpc.NexusConfig{}, rpc.EndpointConfig{}, register)
	stopServing := srv.serve()

	var last rpc.SessionEvent
	onSession := func(s rpc.Session, ev rpc.SessionEvent, err error) {
		last = ev
		if errors.Is(err, rpc.ErrPeerFailed) {
			fmt.Printf("session %d: %v (peer failed)\n", s, ev)
			return
		}
		fmt.Printf("session %d: %v\n", s, ev)
	}
	cli, _ := newExampleNodeNexus(net, 2, rpc.NexusConfig{FailureTimeout: 200 * time.Millisecond},
		rpc.EndpointConfig{OnSession: onSession}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)
	_ = cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("x")), func(r *rpc.Response) {
		fmt.Println("pending request failed:", errors.Is(r.Err, rpc.ErrPeerFailed))
	})

	addr := srv.nx.Addr()
	stopServing()
	srv.stop() // the server process goes away
	if !cli.runUntilCond(func() bool { return last == rpc.Failed }) {
		fmt.Println("failure not detected")
		return
	}

	// The server restarts on the same control address.
	srv, err := newExampleNodeNexus(net, 1, rpc.NexusConfig{ControlAddr: addr}, rpc.EndpointConfig{}, register)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.stop()
	defer srv.serve()()
	if _, err := cli.connect(srv.nx, 1); err != nil {
		fmt.Println(err)
	}
	// Output:
	// session 0: connected
	// pending request failed: true
	// session 0: failed (peer failed)
	// session 0: connected
}

// Disconnect closes a client session once no request is pending on it
// (ErrSessionBusy before); the Disconnected event follows when the server
// confirms, and the session number is then invalid (ErrNoSession).
func ExampleEndpoint_Disconnect() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) })
	})
	defer srv.stop()
	defer srv.serve()()
	var events []rpc.SessionEvent
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{OnSession: func(s rpc.Session, ev rpc.SessionEvent, err error) {
		events = append(events, ev)
	}}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	answered := false
	_ = cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("last")), func(*rpc.Response) { answered = true })
	fmt.Println("request pending, busy:", errors.Is(cli.ep.Disconnect(s), rpc.ErrSessionBusy))
	cli.runUntilCond(func() bool { return answered })
	fmt.Println("answered, disconnect:", cli.ep.Disconnect(s))
	cli.runUntilCond(func() bool { return events[len(events)-1] == rpc.Disconnected })
	fmt.Println("events:", events)
	err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("more")), nil)
	fmt.Println("enqueue afterwards, no session:", errors.Is(err, rpc.ErrNoSession))
	// Output:
	// request pending, busy: true
	// answered, disconnect: <nil>
	// events: [connected disconnected]
	// enqueue afterwards, no session: true
}
