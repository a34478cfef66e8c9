package kvbench_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/kv/kvbench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// PreloadServer loads a workload's data set into a server through an
// in-process client (what `cornflakes kv serve --workload` does).
func ExamplePreloadServer() {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Println(err)
		}
	}()
	w, err := workload.Parse("ycsb:records=100,shape=1x4096")
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := kvbench.PreloadServer(context.Background(), srv, w)
	fmt.Println(n, "preload requests,", srv.Store().Len(), "keys stored,", err)
	// Output:
	// 100 preload requests, 100 keys stored, <nil>
}

// Preload a workload through one connection of a load client, with up to
// 8 requests in flight.
func ExamplePreload() {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	conn, err := cl.Dial(kv.CodecProtobuf)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	w, err := workload.NewGoogle(workload.GoogleConfig{Keys: 50, MaxValues: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := kvbench.Preload(context.Background(), w, conn, 8)
	fmt.Println("preloaded:", n, err, srv.Store().Len(), "keys")
	// Output:
	// preloaded: 50 <nil> 50 keys
}

// RunBench is what `cornflakes bench` runs: here every serializer on a
// tiny YCSB data set over memnet, with very short points.
func ExampleRunBench() {
	series, err := kvbench.RunBench(context.Background(), kvbench.BenchConfig{
		Workload: "ycsb:records=200,shape=2x2048,layout=multi", Datapath: kv.DatapathMemnet,
		Quick: true, Duration: 100 * time.Millisecond, Budget: 3 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range series {
		fmt.Println(s.Serializer, len(s.Points) > 0)
	}
	// Output:
	// cornflakes true
	// protobuf true
	// vtprotobuf true
	// flatbuffers true
	// capnp true
}
