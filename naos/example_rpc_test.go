package naos_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/naos"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// Go values as RPC requests and responses: the handler decodes the
// request with RequestValue and answers with Respond; the client calls
// with Call.
func ExampleCall() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srvNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	defer srvNx.Close()
	_ = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		pts, err := naos.RequestValue[[]Point](r, naos.Limits{})
		if err != nil {
			_ = r.RespondBytes(nil)
			return
		}
		var sum Point
		for _, p := range pts {
			sum.X, sum.Y = sum.X+p.X, sum.Y+p.Y
		}
		_ = naos.Respond(r, sum, naos.Options{})
	})
	srvDP, _ := net.Open(datapath.Config{}, memnet.Options{})
	srv, _ := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()

	cliNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	defer cliNx.Close()
	cliDP, _ := net.Open(datapath.Config{}, memnet.Options{})
	cli, _ := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP})
	s, _ := cli.Connect(srvNx.Addr(), 1)
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitConnected(wctx, s); err != nil {
		fmt.Println(err)
	}
	sum, err := naos.Call[Point](wctx, cli, s, 1, []Point{{1, 2}, {3, 4}, {5, 6}}, naos.Options{})
	fmt.Println(sum, err)

	_ = cli.Close()
	stop()
	<-done
	_ = srv.Close()
	// Output: {9 12} <nil>
}

// A message in registered memory, for a transport that sends mem.Bufs.
func ExampleEncodeBuf() {
	pool, _ := mem.NewPool(mem.PoolConfig{Name: "example"})
	defer pool.Close()
	b, err := naos.EncodeBuf(pool, map[string][]int{"primes": {2, 3, 5}}, naos.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := naos.Decode[map[string][]int](b.Bytes(), naos.Limits{})
	_ = b.Release()
	fmt.Println(m, err)
	// Output: map[primes:[2 3 5]] <nil>
}
