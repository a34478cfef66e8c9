package service_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	pb "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

type server struct{ pb.UnimplementedGreeterServer }

func (server) SayHello(ctx context.Context, req *pb.HelloRequest, resp *pb.HelloReply) error {
	name, _ := req.GetName()
	if name == "" {
		return service.Errorf(service.InvalidArgument, "empty name")
	}
	resp.SetMessage("hello, " + name)
	return nil
}

// A greeter served through generated stubs and called by a Client that
// any goroutine may use (over memnet here; datapath.Open("udp", ...) for
// real sockets).
func Example() {
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
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srvEp.Run(ctx) }()

	cliNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	cliEp := open(cliNx, 2)
	c, _ := service.Dial(context.Background(), cliEp, srvNx.Addr(), 1)
	greeter := pb.NewGreeterClient(c)

	a := wire.NewArena() // one per goroutine: requests and responses live in it
	req := pb.NewHelloRequest(a)
	req.SetName("world")
	resp, err := greeter.SayHello(context.Background(), a, req)
	msg, _ := resp.GetMessage()
	fmt.Println(msg, err)
	req.SetName("")
	_, err = greeter.SayHello(context.Background(), a, req)
	fmt.Println(errors.Is(err, &service.Error{Code: service.InvalidArgument}), err)
	_ = a.Reset()

	_ = c.Close()
	_ = cliEp.Close()
	_ = cliNx.Close()
	stop()
	<-done
	_ = srvEp.Close()
	_ = srvNx.Close()
	// Output:
	// hello, world <nil>
	// true service: InvalidArgument: empty name
}
