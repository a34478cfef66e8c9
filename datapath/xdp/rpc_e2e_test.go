package xdp_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// TestRPC runs the eRPC-style transport unchanged over two xdp endpoints
// in a Topology: small calls and calls whose request and response span
// several packets, payloads checked byte for byte.
func TestRPC(t *testing.T) {
	needNamespaces(t)
	topo, err := xdp.NewTopology(xdp.TopologyConfig{Prefix: "cfxdpr", SpaceSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Close(); err != nil {
			t.Error(err)
		}
	})
	srvDP, err := topo.Open(datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cliDP, err := topo.Open(datapath.Config{})
	if err != nil {
		_ = srvDP.Close()
		t.Fatal(err)
	}

	srvNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srvNx.Close()
	_ = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		d := r.Data()
		out := make([]byte, len(d))
		for i, c := range d {
			out[i] = ^c
		}
		_ = r.RespondBytes(out)
	})
	srv, err := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		stop()
		<-done
		_ = srv.Close()
	}()

	cliNx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cliNx.Close()
	cli, err := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s, err := cli.Connect(srvNx.Addr(), 1)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !cli.IsConnected(s) {
		if time.Now().After(deadline) {
			t.Fatal("session not connected within 5s")
		}
		_ = cli.RunOnce()
	}
	for _, n := range []int{1, 100, 3000, 8000, 20000, 100000} {
		req := pattern(n, byte(n))
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.Call(cctx, s, 1, rpc.BytesMsg(req))
		cancel()
		if err != nil {
			t.Fatalf("%d-byte call: %v", n, err)
		}
		want := make([]byte, n)
		for i, c := range req {
			want[i] = ^c
		}
		if !bytes.Equal(resp.Bytes(), want) {
			t.Errorf("%d-byte call: response mismatch (%d bytes)", n, len(resp.Bytes()))
		}
		_ = resp.Release()
	}
}
