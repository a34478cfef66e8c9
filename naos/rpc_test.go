package naos_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/naos"
	"github.com/cornflakes-go/cornflakes/rpc"
)

type Item struct {
	ID   int64
	Tags []string
	Next *Item
}

// Values over the RPC transport, large enough to span many packets, with
// every pool back to zero references afterwards.
func TestRPCRoundTrip(t *testing.T) {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	newPool := func(name string) *mem.Pool {
		p, err := mem.NewPool(mem.PoolConfig{Name: name, MaxClass: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	srvNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srvNx.Close()
	// The handler receives a []Item and answers the IDs reversed.
	err = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		items, err := naos.RequestValue[[]Item](r, naos.Limits{})
		if err != nil {
			_ = r.RespondBytes([]byte(err.Error()))
			return
		}
		ids := make([]int64, len(items))
		for i, it := range items {
			ids[len(items)-1-i] = it.ID
		}
		_ = naos.Respond(r, ids, naos.Options{})
	})
	if err != nil {
		t.Fatal(err)
	}
	srvPool, cliPool := newPool("srv"), newPool("cli")
	srvDP, _ := net.Open(datapath.Config{}, memnet.Options{})
	srv, err := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP, Pool: srvPool, MaxMsgSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	cliNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cliNx.Close()
	cliDP, _ := net.Open(datapath.Config{}, memnet.Options{})
	cli, err := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP, Pool: cliPool, MaxMsgSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cli.Connect(srvNx.Addr(), 1)
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitConnected(wctx, s); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 100, 20000} {
		items := make([]Item, n)
		for i := range items {
			items[i] = Item{ID: int64(i), Tags: []string{"a", "bc"}}
			if i > 0 {
				items[i].Next = &Item{ID: -1}
			}
		}
		got, err := naos.Call[[]int64](wctx, cli, s, 1, items, naos.Options{})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(n - 1 - i)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("n=%d: got %d ids", n, len(got))
		}
	}
	// A response of the wrong type is refused with both names.
	if _, err := naos.Call[[]string](wctx, cli, s, 1, []Item{{ID: 1}}, naos.Options{}); err == nil {
		t.Fatal("mismatch accepted")
	}
	_ = cli.Close()
	stop()
	<-done
	_ = srv.Close()
	for _, p := range []*mem.Pool{srvPool, cliPool} {
		if err := p.Close(); err != nil {
			t.Fatalf("pool %s: %v", p.Name(), err)
		}
	}
}
