package rpc_test

import (
	"bytes"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// upper writes p in upper case into the record it is sent from, or
// declines when it does not fit.
type upper struct{ p []byte }

func (u upper) WriteInline(dst []byte) int {
	if len(u.p) > len(dst) {
		return -1
	}
	return copy(dst, bytes.ToUpper(u.p))
}

// A small request and its response written straight into the records the
// endpoints send them from (EnqueueInline on the client, RespondInline in
// a dispatch handler): no copy of either body. A body that does not fit
// the record is declined by its writer and goes the usual way (here
// RespondBytes).
func ExampleEndpoint_EnqueueInline() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			if sent, _ := r.RespondInline(upper{r.Data()}); !sent {
				_ = r.RespondBytes(bytes.ToUpper(r.Data()))
			}
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	var answer string
	sent, err := cli.ep.EnqueueInline(s, 1, upper{[]byte("written in place")}, func(r *rpc.Response) {
		if r.Err != nil {
			answer = r.Err.Error()
			return
		}
		answer = string(r.Data())
	})
	if err != nil || !sent {
		fmt.Println(sent, err)
		return
	}
	for answer == "" {
		_ = cli.ep.RunOnce()
	}
	fmt.Println(answer)
	// Output: WRITTEN IN PLACE
}
