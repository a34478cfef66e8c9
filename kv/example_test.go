package kv_test

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// A server and a client connection over an in-memory network (use
// Datapath "udp", the default, for kernel UDP sockets): a Put then a Get,
// with the Cornflakes serializer in hybrid mode.
func Example() {
	nw := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, err := kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathMemnet, Memnet: nw})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Datapath: kv.DatapathMemnet, Memnet: nw})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	conn, err := cl.Dial(kv.CodecCFHybrid)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	do := func(r *workload.Request) {
		if err := conn.Send(1, r); err != nil {
			fmt.Println(err)
			return
		}
		for done, deadline := false, time.Now().Add(5*time.Second); !done && time.Now().Before(deadline); {
			_, _ = conn.Poll(func(id uint64, resp *workload.Response) {
				done = true
				fmt.Print(r.Op, ": ", resp.Status)
				for _, v := range resp.Values { // borrowed until the callback returns
					fmt.Printf(" %q", v)
				}
				fmt.Println()
			})
		}
	}
	do(&workload.Request{Op: workload.OpPut, Keys: [][]byte{[]byte("greeting")}, Values: [][]byte{[]byte("hello")}})
	do(&workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte("greeting")}})
	do(&workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte("nobody")}})
	// Output:
	// put: ok
	// get: ok "hello"
	// get: not-found
}

// A busy-polling server on kernel UDP (one core per endpoint, no wake-up
// latency): Usage then reports the endpoints' busy time, the cost of the
// requests served.
func ExampleServerConfig_busyPoll() {
	srv, err := kv.NewServer(kv.ServerConfig{BusyPoll: true, PoolBytes: 64 << 20})
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
	conn, err := cl.Dial(kv.CodecVTProtobuf)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	if err := conn.Send(1, &workload.Request{Op: workload.OpPut, Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}}); err != nil {
		fmt.Println(err)
		return
	}
	for done, deadline := false, time.Now().Add(5*time.Second); !done && time.Now().Before(deadline); {
		_, _ = conn.Poll(func(uint64, *workload.Response) { done = true })
	}
	// The endpoint adds an iteration's busy time when the iteration ends,
	// which may be just after the response reached the client.
	busy, requests, err := srv.Usage()
	for deadline := time.Now().Add(5 * time.Second); err == nil && busy == 0 && time.Now().Before(deadline); {
		busy, requests, err = srv.Usage()
	}
	fmt.Println(requests, busy > 0, err)
	// Output: 1 true <nil>
}

// The store keeps values in registered memory. A read returns references
// (kv.Result), not copies, and a write never modifies a value in place:
// it allocates, fills and swaps. So a value a response still holds stays
// intact while it is overwritten (the paper's memory-safety model).
func ExampleStore() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "values"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	s := kv.NewStore(pool, 1)
	defer s.Clear()

	put := &kv.Query{Op: workload.OpPut, Keys: [][]byte{[]byte("k")}, Vals: [][]byte{[]byte("first")}}
	var res kv.Result
	_ = s.Exec(put, &res, 1<<20)

	var held kv.Result // a response in flight
	_ = s.Exec(&kv.Query{Op: workload.OpGet, Keys: [][]byte{[]byte("k")}}, &held, 1<<20)

	put.Vals[0] = []byte("second")
	_ = s.Exec(put, &res, 1<<20)

	var now kv.Result
	_ = s.Exec(&kv.Query{Op: workload.OpGet, Keys: [][]byte{[]byte("k")}}, &now, 1<<20)
	fmt.Printf("%s %s %v\n", held.Vals[0].Bytes(), now.Vals[0].Bytes(), now.Status)
	held.Release()
	now.Release()
	res.Release()
	// Output: first second ok
}
