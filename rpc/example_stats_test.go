package rpc_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// Retain keeps a response past its continuation without copying it: the
// returned buffer is a reference of the caller's own to the bytes the
// response arrived in (the receive buffer of a single-packet response, the
// reassembly buffer of a larger one), released when the caller is done.
func ExampleResponse_Retain() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			// Three packets' worth: the client reassembles it.
			_ = r.RespondBytes(bytes.Repeat(r.Data(), 3000))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	var kept mem.Buf
	done := false
	err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("abc")), func(r *rpc.Response) {
		done = true
		if r.Err != nil {
			fmt.Println(r.Err)
			return
		}
		kept = r.Retain() // r.Data() would be gone after this function returns
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for !done {
		_ = cli.ep.RunOnce()
	}
	fmt.Println(kept.Len(), string(kept.Bytes()[:6]), "refs:", kept.Refs())
	_ = kept.Release()
	fmt.Println("pool in use after the release:", cli.ep.Pool().Stats().InUse)
	// Output:
	// 9000 abcabc refs: 1
	// pool in use after the release: 0
}

// DataBuf is the response as a borrowed mem.Buf, for a decoder that takes
// a buffer: valid during the continuation, as Data is, whether the
// response arrived in one packet (a view of the receive buffer) or was
// reassembled.
func ExampleResponse_DataBuf() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			n := int(r.Data()[0]) // 1: one packet; 3: three packets' worth
			_ = r.RespondBytes(bytes.Repeat([]byte("xyz"), n*1000))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	for _, n := range []byte{1, 3} {
		done := false
		err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte{n}), func(r *rpc.Response) {
			done = true
			b := r.DataBuf()
			fmt.Println(b.Len(), bytes.Equal(b.Bytes(), r.Data()), "refs:", b.Refs())
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		for !done {
			_ = cli.ep.RunOnce()
		}
	}
	fmt.Println("pool in use:", cli.ep.Pool().Stats().InUse)
	// Output:
	// 3000 true refs: 1
	// 9000 true refs: 1
	// pool in use: 0
}

// Stats tells what an endpoint did. Over a network that drops 30 % of the
// packets, the client retransmits (after the retransmission timeout, here
// 2 ms) until every request completes, and the server runs each handler
// exactly once: a retransmitted request whose answer was lost gets the
// saved response again, not a second execution.
func ExampleEndpoint_Stats() {
	net := memnet.NewNetwork(memnet.NetworkConfig{Seed: 3, Faults: memnet.Faults{Loss: 0.3}})
	handled := 0
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			handled++ // the server's event loop is the only caller
			_ = r.RespondBytes(r.Data())
		})
	})
	defer srv.stop()
	stopServer := srv.serve()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{RTO: 2 * time.Millisecond}, nil)
	defer cli.stop()
	s, err := cli.connect(srv.nx, 1) // session management runs over its own UDP socket, without loss
	if err != nil {
		fmt.Println(err)
		return
	}

	const requests = 40
	completed, failed := 0, 0
	for i := range requests {
		err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte{byte(i)}), func(r *rpc.Response) {
			if r.Err != nil {
				failed++
			} else {
				completed++
			}
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for completed+failed < requests && time.Now().Before(deadline) {
		_ = cli.ep.RunOnce()
	}
	stopServer() // the server's counters are read on this goroutine now

	cs, ss := cli.ep.Stats(), srv.ep.Stats()
	fmt.Println("completed:", completed, "failed:", failed)
	fmt.Println("client continuations:", cs.Continuations, "retransmitted:", cs.Proto.Retransmits > 0)
	fmt.Println("server handlers:", ss.Handlers, "(counted in the handler:", handled, ")")
	fmt.Println("saved responses re-sent:", ss.Proto.DupResponses > 0)
	// Output:
	// completed: 40 failed: 0
	// client continuations: 40 retransmitted: true
	// server handlers: 40 (counted in the handler: 40 )
	// saved responses re-sent: true
}
