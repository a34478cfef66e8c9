package kv_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/wire"
)

// A server and a typed client of its service (kvpb.KV through the
// generated stubs), over an in-process network.
func ExampleClient_DialService() {
	nw := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, err := kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathMemnet, Memnet: nw, PoolBytes: 16 << 20})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Datapath: kv.DatapathMemnet, Memnet: nw})
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, err := cl.DialService(ctx)
	if err != nil {
		panic(err)
	}
	defer sc.Close()

	a := wire.NewArena() // the calls' messages; Reset when done with them
	if err := sc.Put(ctx, a, []byte("greeting"), []byte("hello")); err != nil {
		panic(err)
	}
	v, err := sc.Get(ctx, a, []byte("greeting"))
	fmt.Printf("%s %v\n", v, err)
	_, err = sc.Get(ctx, a, []byte("nothing"))
	fmt.Println(err)
	_ = a.Reset()
	// Output:
	// hello <nil>
	// kv: not found
}
