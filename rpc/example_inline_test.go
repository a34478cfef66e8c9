package rpc_test

import (
	"bytes"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// A small request and its response written straight into the records the
// endpoints send them from (InlineReq/EnqueueInline on the client,
// InlineResp/RespondInline in a dispatch handler): no copy of either
// body. A body that does not fit the room goes the usual way (here
// RespondBytes).
func ExampleEndpoint_EnqueueInline() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			up := bytes.ToUpper(r.Data())
			if b := r.InlineResp(); len(up) <= len(b) {
				_ = r.RespondInline(copy(b, up))
				return
			}
			_ = r.RespondBytes(up)
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	var answer string
	room := cli.ep.InlineReq()
	n := copy(room, "written in place")
	err := cli.ep.EnqueueInline(s, 1, n, func(r *rpc.Response) {
		if r.Err != nil {
			answer = r.Err.Error()
			return
		}
		answer = string(r.Data())
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for answer == "" {
		_ = cli.ep.RunOnce()
	}
	fmt.Println(answer)
	// Output: WRITTEN IN PLACE
}
