package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// exampleNode is one Nexus with one endpoint over an in-memory network.
type exampleNode struct {
	nx *rpc.Nexus
	ep *rpc.Endpoint
}

// newExampleNode opens a Nexus (register adds its handlers) and endpoint
// id over net; stop closes both.
func newExampleNode(net *memnet.Network, id uint8, cfg rpc.EndpointConfig, register func(*rpc.Nexus)) (*exampleNode, error) {
	return newExampleNodeNexus(net, id, rpc.NexusConfig{}, cfg, register)
}

// newExampleNodeNexus is newExampleNode with a Nexus configuration (failure
// timeout, control address).
func newExampleNodeNexus(net *memnet.Network, id uint8, nc rpc.NexusConfig, cfg rpc.EndpointConfig, register func(*rpc.Nexus)) (*exampleNode, error) {
	nx, err := rpc.NewNexus(nc)
	if err != nil {
		return nil, err
	}
	if register != nil {
		register(nx)
	}
	dp, err := net.Open(datapath.Config{}, memnet.Options{})
	if err != nil {
		_ = nx.Close()
		return nil, err
	}
	cfg.ID, cfg.Datapath = id, dp
	ep, err := nx.NewEndpoint(cfg)
	if err != nil {
		_ = dp.Close()
		_ = nx.Close()
		return nil, err
	}
	return &exampleNode{nx: nx, ep: ep}, nil
}

func (n *exampleNode) stop() {
	_ = n.ep.Close()
	_ = n.nx.Close()
}

// serve runs n's event loop on its own goroutine until the returned
// function is called.
func (n *exampleNode) serve() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.ep.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// connect opens a session from n to endpoint id of srv, driving n's loop.
func (n *exampleNode) connect(srv *rpc.Nexus, id uint8) (rpc.Session, error) {
	s, err := n.ep.Connect(srv.Addr(), id)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s, n.ep.WaitConnected(ctx, s)
}

// Enqueue sends requests without waiting; each continuation runs on the
// client's event loop (RunOnce) when its response arrives. Response.Data
// is valid only during the continuation: copy it, or Retain the buffer.
func ExampleEndpoint_Enqueue() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes([]byte(strings.ToUpper(string(r.Data()))))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	answers := make([]string, 3)
	pending := 0
	for i, word := range []string{"zero", "copy", "rpc"} {
		pending++
		err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte(word)), func(r *rpc.Response) {
			pending--
			if r.Err != nil {
				answers[i] = r.Err.Error()
				return
			}
			answers[i] = string(r.Data()) // copied: Data is only valid here
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	for pending > 0 {
		_ = cli.ep.RunOnce()
	}
	fmt.Println(answers)
	// Output: [ZERO COPY RPC]
}

// A Worker handler runs on the Nexus worker pool instead of the event
// loop, for work that would stall it; it may answer from that goroutine.
// When the client's session runs congestion control (here forced on), the
// server acknowledges such a request at once, so that Timely does not take
// the handler's time for network delay.
func ExampleNexus_Register_worker() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(7, rpc.Worker, func(r *rpc.Request) {
			sum := 0
			for _, b := range r.Data() {
				sum += int(b)
			}
			_ = r.RespondBytes([]byte(fmt.Sprint(sum)))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true}}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	resp, err := cli.ep.Call(context.Background(), s, 7, rpc.BytesMsg([]byte{1, 2, 3, 4}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Release()
	fmt.Println(string(resp.Bytes()), cli.ep.Stats().Proto.Acks)
	// Output: 10 1
}

// Congestion control (Timely and a rate limiter per client session) is
// automatic by default: on for sessions whose peer is across a network,
// off for peers on this host and on datapaths that cannot congest, such
// as memnet. CCConfig.Enable and Disable force it on or off.
func ExampleEndpoint_CongestionControlled() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, nil)
	defer srv.stop()
	defer srv.serve()()
	for _, cc := range []rpc.CCConfig{{}, {Enable: true}, {Disable: true}} {
		cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{CC: cc}, nil)
		s, _ := cli.connect(srv.nx, 1)
		fmt.Printf("Enable %-5v Disable %-5v: %v\n", cc.Enable, cc.Disable, cli.ep.CongestionControlled(s))
		cli.stop()
	}
	// Output:
	// Enable false Disable false: false
	// Enable true  Disable false: true
	// Enable false Disable true : false
}

// A handler may answer later, for example from the continuation of a
// nested RPC it issues on its own endpoint (r.Endpoint()): here a front
// server forwards each request to a backend and answers with the
// backend's reply. The request's bytes stay valid until it is answered.
func ExampleRequest_Respond_nested() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	backend, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes(append([]byte("backend saw "), r.Data()...))
		})
	})
	defer backend.stop()
	defer backend.serve()()

	var toBackend rpc.Session
	front, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(2, rpc.Dispatch, func(r *rpc.Request) {
			err := r.Endpoint().Enqueue(toBackend, 1, rpc.BytesMsg(r.Data()), func(resp *rpc.Response) {
				if resp.Err != nil {
					_ = r.RespondBytes([]byte(resp.Err.Error()))
					return
				}
				_ = r.RespondBytes(resp.Data())
			})
			if err != nil {
				_ = r.RespondBytes([]byte(err.Error()))
			}
		})
	})
	defer front.stop()
	toBackend, _ = front.connect(backend.nx, 1)
	defer front.serve()()

	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(front.nx, 1)
	resp, err := cli.ep.Call(context.Background(), s, 2, rpc.BytesMsg([]byte("hello")))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Release()
	fmt.Println(string(resp.Bytes()))
	// Output: backend saw hello
}

// Post is the goroutine-safe way into an endpoint: fn runs on the
// endpoint's goroutine during a later RunOnce (or Run). A worker handler
// uses it to issue a nested RPC, which must be enqueued on the endpoint's
// own goroutine; here another goroutine hands a request over to a client
// endpoint that the main goroutine drives.
func ExampleEndpoint_Post() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes(append([]byte("got "), r.Data()...))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	answer := make(chan string, 1)
	go func() { // another goroutine: it may not call Enqueue itself
		_ = cli.ep.Post(func() {
			_ = cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte("posted")), func(r *rpc.Response) {
				answer <- string(r.Data())
			})
		})
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		_ = cli.ep.RunOnce()
		select {
		case a := <-answer:
			fmt.Println(a)
			return
		default:
		}
	}
	fmt.Println("no answer")
	// Output: got posted
}

// WaitConnected drives the loop until a session's handshake ends: nil once
// connected, else why it failed (here a server Nexus without endpoint 7).
func ExampleEndpoint_WaitConnected() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, nil)
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range []uint8{1, 7} {
		s, err := cli.ep.Connect(srv.nx.Addr(), id)
		if err != nil {
			fmt.Println(err)
			return
		}
		err = cli.ep.WaitConnected(ctx, s)
		fmt.Printf("endpoint %d: %v (ErrConnectFailed: %v)\n", id, err, errors.Is(err, rpc.ErrConnectFailed))
	}
	// Output:
	// endpoint 1: <nil> (ErrConnectFailed: false)
	// endpoint 7: rpc: connect failed: rpc: invalid endpoint id (ErrConnectFailed: true)
}

// A worker handler that needs another service: it decodes its request on
// the worker (the request is in the Nexus's goroutine-safe pool, so the
// decoder may take references on it), then hands the nested call to its
// endpoint with Post, since only the endpoint's goroutine may Enqueue,
// and answers from the nested call's continuation, on that goroutine.
func ExampleNexus_Register_workerNested() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	backend, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes(bytes.ToUpper(r.Data()))
		})
	})
	defer backend.stop()
	defer backend.serve()()

	var toBackend rpc.Session
	front, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(2, rpc.Worker, func(r *rpc.Request) {
			a := wire.NewArena() // the worker's own
			req := kvpb.NewReq(a)
			err := req.DecodeBytes(r.Data())
			var key []byte
			if keys, kerr := req.GetKeys(); err == nil && kerr == nil && keys.Len() == 1 {
				key = bytes.Clone(keys.At(0)) // outlives the arena
			}
			_ = a.Reset()
			if key == nil {
				_ = r.RespondBytes([]byte("bad request"))
				return
			}
			ep := r.Endpoint()
			perr := ep.Post(func() { // on the endpoint's goroutine
				err := ep.Enqueue(toBackend, 1, rpc.BytesMsg(key), func(resp *rpc.Response) {
					if resp.Err != nil {
						_ = r.RespondBytes([]byte(resp.Err.Error()))
						return
					}
					_ = r.RespondBytes(resp.Data()) // copied before Respond returns
				})
				if err != nil {
					_ = r.RespondBytes([]byte(err.Error()))
				}
			})
			if perr != nil {
				_ = r.RespondBytes([]byte(perr.Error()))
			}
		})
	})
	defer front.stop()
	toBackend, _ = front.connect(backend.nx, 1)
	defer front.serve()()

	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(front.nx, 1)
	a := wire.NewArena()
	defer a.Reset()
	req := kvpb.NewReq(a)
	req.InitKeys(1).AppendString("cornflakes")
	resp, err := cli.ep.Call(context.Background(), s, 2, rpc.ObjectMsg(req))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Release()
	fmt.Println(string(resp.Bytes()))
	// Output: CORNFLAKES
}

// A client that issues several requests between two runs of its loop sends them
// as one batch: BeginBatch, the Enqueue calls, EndBatch (one protocol step and one
// flush for all of them).
func ExampleEndpoint_BeginBatch() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, _ := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes([]byte(strings.ToUpper(string(r.Data()))))
		})
	})
	defer srv.stop()
	defer srv.serve()()
	cli, _ := newExampleNode(net, 2, rpc.EndpointConfig{}, nil)
	defer cli.stop()
	s, _ := cli.connect(srv.nx, 1)

	answers := make([]string, 3)
	pending := 0
	tx0 := cli.ep.Stats().Datapath.TxPackets
	if err := cli.ep.BeginBatch(); err != nil {
		fmt.Println(err)
		return
	}
	for i, word := range []string{"one", "batch", "sent"} {
		pending++
		err := cli.ep.Enqueue(s, 1, rpc.BytesMsg([]byte(word)), func(r *rpc.Response) {
			pending--
			if r.Err != nil {
				answers[i] = r.Err.Error()
				return
			}
			answers[i] = string(r.Data())
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("packets sent before EndBatch:", cli.ep.Stats().Datapath.TxPackets-tx0)
	if err := cli.ep.EndBatch(); err != nil {
		fmt.Println(err)
		return
	}
	for pending > 0 {
		_ = cli.ep.RunOnce()
	}
	fmt.Println(answers)
	// Output:
	// packets sent before EndBatch: 0
	// [ONE BATCH SENT]
}
