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

// One reusable call kept busy from its own done function: three requests,
// each started when the previous one's response came, on the goroutine
// that runs the loop (Client.Run).
func ExampleAsyncCall() {
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
	next := 0
	a := wire.NewArena() // the call's while a request is in flight
	var call *service.AsyncCall[*pb.HelloReply]
	start := func() {
		req := pb.NewHelloRequest(a)
		req.SetName(names[next])
		if err := call.Start(context.Background(), req); err != nil {
			fmt.Println(err)
			cancel()
		}
	}
	call = greeter.NewSayHelloCall(a, func(resp *pb.HelloReply, err error) {
		if err != nil {
			fmt.Println(err)
			cancel()
			return
		}
		msg, _ := resp.GetMessage()
		fmt.Println(msg)
		_ = a.Reset()
		if next++; next == len(names) {
			cancel()
			return
		}
		start() // the same call again
	})
	start()
	_ = c.Run(ctx) // returns when the last done cancels ctx

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
}
