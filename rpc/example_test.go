package rpc_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// A server endpoint with a dispatch handler and a client that calls it,
// over an in-memory network (use datapath.Open("udp", ...) for real sockets).
func Example() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})

	// Server: one Nexus per process, handlers by request type, one
	// endpoint per goroutine running its event loop.
	srvNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	defer srvNx.Close()
	_ = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		// Write the answer into the slot's preallocated buffer.
		n := copy(r.PreResp(), "hello, ")
		n += copy(r.PreResp()[n:], r.Data())
		_ = r.RespondPre(n)
	})
	srvDP, _ := net.Open(datapath.Config{}, memnet.Options{})
	srv, _ := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()

	// Client.
	cliNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	defer cliNx.Close()
	cliDP, _ := net.Open(datapath.Config{}, memnet.Options{})
	cli, _ := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP})
	s, _ := cli.Connect(srvNx.Addr(), 1)
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitConnected(wctx, s); err != nil {
		fmt.Println(err)
		return
	}
	resp, err := cli.Call(context.Background(), s, 1, rpc.BytesMsg([]byte("world")))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(resp.Bytes()))
	_ = resp.Release()

	_ = cli.Close()
	stop()
	<-done
	_ = srv.Close()
	// Output: hello, world
}
