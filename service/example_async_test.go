package service_test

import (
	"context"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	pb "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Three calls in flight from one goroutine through the asynchronous stub:
// Client.Run runs the loop, each done function runs on it, and the last
// one ends Run.
func ExampleInvokeAsync() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	open := func(nx *rpc.Nexus, id uint8) *rpc.Endpoint {
		dp, _ := net.Open(datapath.Config{}, memnet.Options{})
		ep, _ := nx.NewEndpoint(rpc.EndpointConfig{ID: id, Datapath: dp})
		return ep
	}
	srvNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	srv, _ := service.NewServer(srvNx)
	_ = pb.RegisterGreeterServer(srv, server{})
	srvEp := open(srvNx, 1)
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- srvEp.Run(sctx) }()

	cliNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	cliEp := open(cliNx, 2)
	c, _ := service.Dial(context.Background(), cliEp, srvNx.Addr(), 1)
	greeter := pb.NewGreeterClient(c)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replies := make([]string, 3)
	left := len(replies)
	for i, name := range []string{"ann", "bob", "cy"} {
		a := wire.NewArena() // the call's until done runs
		req := pb.NewHelloRequest(a)
		req.SetName(name)
		_ = greeter.SayHelloAsync(ctx, a, req, func(resp *pb.HelloReply, err error) {
			replies[i], _ = resp.GetMessage()
			_ = a.Reset()
			if left--; left == 0 {
				cancel()
			}
		})
	}
	_ = c.Run(ctx) // returns when the last done cancels ctx
	fmt.Println(replies)

	_ = c.Close()
	_ = cliEp.Close()
	_ = cliNx.Close()
	stop()
	<-served
	_ = srvEp.Close()
	_ = srvNx.Close()
	// Output:
	// [hello, ann hello, bob hello, cy]
}

// A reusable call that resets its arena itself after each done
// (ResetAfterDone): the reply is read in done only, and done starts the
// next request; the response is decoded from the received bytes without
// a copy.
func ExampleAsyncCall_ResetAfterDone() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	open := func(nx *rpc.Nexus, id uint8) *rpc.Endpoint {
		dp, _ := net.Open(datapath.Config{}, memnet.Options{})
		ep, _ := nx.NewEndpoint(rpc.EndpointConfig{ID: id, Datapath: dp})
		return ep
	}
	srvNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	srv, _ := service.NewServer(srvNx)
	_ = pb.RegisterGreeterServer(srv, server{})
	srvEp := open(srvNx, 1)
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- srvEp.Run(sctx) }()

	cliNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	cliEp := open(cliNx, 2)
	c, _ := service.Dial(context.Background(), cliEp, srvNx.Addr(), 1)
	greeter := pb.NewGreeterClient(c)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := []string{"ann", "bob", "cy"}
	reqs := wire.NewArena() // the requests' arena (serialized by Start)
	var call *service.AsyncCall[*pb.HelloReply]
	next := 0
	start := func() {
		_ = reqs.Reset()
		req := pb.NewHelloRequest(reqs)
		req.SetName(names[next])
		if err := call.Start(context.Background(), req); err != nil {
			fmt.Println(err)
			cancel()
		}
	}
	call = greeter.NewSayHelloCall(wire.NewArena(), func(resp *pb.HelloReply, err error) {
		if err != nil {
			fmt.Println(err)
			cancel()
			return
		}
		msg, _ := resp.GetMessage() // valid during done only
		fmt.Println(msg)
		if next++; next == len(names) {
			cancel()
			return
		}
		start() // the arena is reset after done returns
	})
	call.ResetAfterDone()
	start()
	_ = c.Run(ctx) // returns when the last done cancels ctx
	fmt.Println("failed resets:", call.ResetErrors())

	_ = c.Close()
	_ = cliEp.Close()
	_ = cliNx.Close()
	stop()
	<-served
	_ = srvEp.Close()
	_ = srvNx.Close()
	// Output:
	// hello, ann
	// hello, bob
	// hello, cy
	// failed resets: 0
}
