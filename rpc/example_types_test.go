package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// closeExampleNode closes n's endpoint, then its Nexus, and reports what went
// wrong (an endpoint's Close reports buffers of its own pool still in use).
func closeExampleNode(n *exampleNode) error {
	return errors.Join(n.ep.Close(), n.nx.Close())
}

// exampleEchoNode opens endpoint 1 of a new Nexus on net, whose type-1 dispatch
// handler answers with the request's bytes.
func exampleEchoNode(net *memnet.Network, cfg rpc.EndpointConfig) *exampleNode {
	srv, err := newExampleNode(net, 1, cfg, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) })
	})
	if err != nil {
		panic(err)
	}
	return srv
}

// exampleEchoServer is exampleEchoNode running its event loop on its own goroutine;
// stop ends the loop and closes the node.
func exampleEchoServer(net *memnet.Network, cfg rpc.EndpointConfig) (srv *exampleNode, stop func() error) {
	srv = exampleEchoNode(net, cfg)
	stopServing := srv.serve()
	return srv, func() error { stopServing(); return closeExampleNode(srv) }
}

// exampleClient opens endpoint 2 of a new Nexus on net with a session to srv.
func exampleClient(net *memnet.Network, cfg rpc.EndpointConfig, srv *exampleNode) (*exampleNode, rpc.Session) {
	cli, err := newExampleNode(net, 2, cfg, nil)
	if err != nil {
		panic(err)
	}
	s, err := cli.connect(srv.nx, 1)
	if err != nil {
		panic(err)
	}
	return cli, s
}

// A Msg is a request or response body of one of three kinds: bytes to
// copy, a registered buffer sent zero-copy, or a Cornflakes object
// serialized into the packets. Enqueue, Call and Respond consume it in
// every case; the zero Msg is refused.
func ExampleMsg() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, stopServer := exampleEchoServer(net, rpc.EndpointConfig{})
	cli, s := exampleClient(net, rpc.EndpointConfig{}, srv)

	a := wire.NewArena()
	req := kvpb.NewReq(a)
	req.InitKeys(1).AppendString("key")
	v, err := cli.ep.Pool().AllocCopy(bytes.Repeat([]byte{'r'}, 300))
	if err != nil {
		panic(err)
	}
	for _, x := range []struct {
		kind string
		msg  rpc.Msg
	}{
		{"bytes", rpc.BytesMsg([]byte("copied"))},
		{"buf", rpc.BufMsg(v)}, // the reference on v is handed over
		{"object", rpc.ObjectMsg(req)},
	} {
		n := x.msg.Len()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.ep.Call(ctx, s, 1, x.msg)
		cancel()
		if err != nil {
			fmt.Println(x.kind, err)
			continue
		}
		fmt.Printf("%-6s %3d bytes, echoed %3d\n", x.kind, n, resp.Len())
		_ = resp.Release()
	}
	_ = a.Reset() // the object was serialized when it was enqueued

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cli.ep.Call(ctx, s, 1, rpc.Msg{})
	fmt.Println("zero Msg:", errors.Is(err, rpc.ErrBadMessage))
	fmt.Println(closeExampleNode(cli), stopServer())
	// Output:
	// bytes    6 bytes, echoed   6
	// buf    300 bytes, echoed 300
	// object  27 bytes, echoed  27
	// zero Msg: true
	// <nil> <nil>
}

// BufMsg sends a buffer of registered memory zero-copy and hands its
// reference over to the endpoint, which releases it once the request has
// completed and every send of it is done. Clone first to keep a reference
// of your own.
func ExampleBufMsg() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, stopServer := exampleEchoServer(net, rpc.EndpointConfig{})
	cli, s := exampleClient(net, rpc.EndpointConfig{}, srv)

	// The client's values, in a pool of the client's goroutine.
	values, err := mem.NewPool(mem.PoolConfig{Name: "example-bufmsg"})
	if err != nil {
		panic(err)
	}
	v, err := values.AllocCopy(bytes.Repeat([]byte("0123456789"), 100))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.ep.Call(ctx, s, 1, rpc.BufMsg(v.Clone())) // the clone is handed over
	if err != nil {
		fmt.Println(err)
	} else {
		fmt.Println("echoed:", resp.Len(), "bytes, equal:", bytes.Equal(resp.Bytes(), v.Bytes()))
		_ = resp.Release()
	}
	_ = v.Release() // our own reference

	fmt.Println(closeExampleNode(cli)) // the endpoint releases whatever it still holds
	fmt.Println(values.InUse(), values.Close(), stopServer())
	// Output:
	// echoed: 1000 bytes, equal: true
	// <nil>
	// 0 <nil> <nil>
}

// BytesMsg copies its bytes when it is enqueued, so the caller may reuse
// them at once: here one scratch buffer serves every request.
func ExampleBytesMsg() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, stopServer := exampleEchoServer(net, rpc.EndpointConfig{})
	cli, s := exampleClient(net, rpc.EndpointConfig{}, srv)

	scratch := make([]byte, 0, 64)
	answers := make([]string, 3)
	pending := 0
	for i, word := range []string{"one", "two", "three"} {
		scratch = append(scratch[:0], word...)
		pending++
		err := cli.ep.Enqueue(s, 1, rpc.BytesMsg(scratch), func(r *rpc.Response) {
			pending--
			if r.Err != nil {
				answers[i] = r.Err.Error()
				return
			}
			answers[i] = string(r.Data())
		})
		if err != nil {
			fmt.Println(err)
			break
		}
	}
	cli.runUntilCond(func() bool { return pending == 0 })
	fmt.Println(answers)
	fmt.Println(closeExampleNode(cli), stopServer())
	// Output:
	// [one two three]
	// <nil> <nil>
}

// A Handler is a plain function, so handlers compose: counting wraps any
// handler to count the requests of each type. Dispatch handlers all run
// on the server's event loop, so the map needs no lock.
func ExampleHandler() {
	counts := map[uint8]int{}
	counting := func(h rpc.Handler) rpc.Handler {
		return func(r *rpc.Request) {
			counts[r.Type()]++
			h(r)
		}
	}
	echo := func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) }
	length := func(r *rpc.Request) { _ = r.RespondBytes([]byte(fmt.Sprint(len(r.Data())))) }

	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, err := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, counting(echo))
		_ = nx.Register(2, rpc.Dispatch, counting(length))
	})
	if err != nil {
		panic(err)
	}
	stopServing := srv.serve()
	cli, s := exampleClient(net, rpc.EndpointConfig{}, srv)

	for _, reqType := range []uint8{1, 2, 2} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.ep.Call(ctx, s, reqType, rpc.BytesMsg([]byte("hello")))
		cancel()
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("type %d: %s\n", reqType, resp.Bytes())
		_ = resp.Release()
	}
	stopServing() // the server's loop is done: counts can be read here
	fmt.Println(counts)
	fmt.Println(closeExampleNode(cli), closeExampleNode(srv))
	// Output:
	// type 1: hello
	// type 2: 5
	// type 2: 5
	// map[1:1 2:2]
	// <nil> <nil>
}

// Mode says where a handler runs. A Worker handler runs on the Nexus's
// worker pool and may block; the event loop meanwhile serves the other
// requests. Here the worker waits until a later dispatch request has
// been handled, which would deadlock a dispatch handler: the fast request
// is answered first, although it was sent second.
func ExampleMode() {
	fastDone := make(chan struct{})
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, err := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Worker, func(r *rpc.Request) {
			select { // blocks the worker, not the event loop
			case <-fastDone:
			case <-time.After(5 * time.Second):
			}
			_ = r.RespondBytes([]byte("slow"))
		})
		_ = nx.Register(2, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes([]byte("fast"))
			close(fastDone)
		})
	})
	if err != nil {
		panic(err)
	}
	stopServing := srv.serve()
	cli, s := exampleClient(net, rpc.EndpointConfig{}, srv)

	var order []string
	for _, reqType := range []uint8{1, 2} {
		err := cli.ep.Enqueue(s, reqType, rpc.BytesMsg(nil), func(r *rpc.Response) {
			if r.Err != nil {
				order = append(order, r.Err.Error())
				return
			}
			order = append(order, string(r.Data()))
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	cli.runUntilCond(func() bool { return len(order) == 2 })
	fmt.Println(order)
	stopServing()
	fmt.Println(closeExampleNode(cli), closeExampleNode(srv))
	// Output:
	// [fast slow]
	// <nil> <nil>
}

// NexusConfig's zero fields take the defaults; Config reports the
// effective values. The session-management socket listens on 127.0.0.1
// with an ephemeral port unless ControlAddr says otherwise.
func ExampleNexusConfig() {
	nx, err := rpc.NewNexus(rpc.NexusConfig{
		FailureTimeout: time.Second, // a peer silent this long has failed
		Workers:        4,           // goroutines for Worker handlers
	})
	if err != nil {
		panic(err)
	}
	cfg := nx.Config()
	fmt.Println("control socket on", nx.Addr().Addr(), "port chosen:", nx.Addr().Port() != 0)
	fmt.Println("SMTimeout", cfg.SMTimeout, "ConnectTimeout", cfg.ConnectTimeout)
	fmt.Println("FailureTimeout", cfg.FailureTimeout, "HeartbeatInterval", cfg.HeartbeatInterval)
	fmt.Println("Workers", cfg.Workers, "WorkerQueue", cfg.WorkerQueue)
	fmt.Println(nx.Close())
	// Output:
	// control socket on 127.0.0.1 port chosen: true
	// SMTimeout 100ms ConnectTimeout 2s
	// FailureTimeout 1s HeartbeatInterval 200ms
	// Workers 4 WorkerQueue 4096
	// <nil>
}

// CCConfig tunes congestion control of a client endpoint's sessions.
// Enable forces it on (memnet cannot congest, so the automatic mode would
// leave it off); NoTimelyBypass and NoWheelBypass switch off two of eRPC's
// common-case optimizations, so that every packet goes through the rate
// limiter and every RTT sample Timely takes updates its rate, as in
// rpcbench's factor analysis. Whether a response yields a sample depends
// on time (an RTT below MinRTT, or one spanning a pause of the caller's
// loop of at least TLow, is not sampled), so the example prints the rate
// limiter's count only; Stats().Proto.TimelyUpdates counts the samples.
func ExampleCCConfig() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, stopServer := exampleEchoServer(net, rpc.EndpointConfig{})
	cc := rpc.CCConfig{Enable: true, NoTimelyBypass: true, NoWheelBypass: true}
	cli, s := exampleClient(net, rpc.EndpointConfig{CC: cc}, srv)

	for range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.ep.Call(ctx, s, 1, rpc.BytesMsg([]byte("x")))
		cancel()
		if err != nil {
			fmt.Println(err)
			break
		}
		_ = resp.Release()
	}
	st := cli.ep.Stats().Proto
	fmt.Println("controlled:", cli.ep.CongestionControlled(s))
	fmt.Println("rate limited:", st.RateLimited > 0)
	fmt.Println(closeExampleNode(cli), stopServer())
	// Output:
	// controlled: true
	// rate limited: true
	// <nil> <nil>
}

// A Session is a number local to the endpoint that made it. A client may
// open several sessions to the same server endpoint; the server numbers
// the sessions it accepts on its side (Request.Session).
func ExampleSession() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, err := newExampleNode(net, 1, rpc.EndpointConfig{}, func(nx *rpc.Nexus) {
		_ = nx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
			_ = r.RespondBytes([]byte(fmt.Sprint(r.Session())))
		})
	})
	if err != nil {
		panic(err)
	}
	stopServing := srv.serve()
	cli, first := exampleClient(net, rpc.EndpointConfig{}, srv)
	second, err := cli.connect(srv.nx, 1)
	if err != nil {
		panic(err)
	}

	for _, s := range []rpc.Session{first, second} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.ep.Call(ctx, s, 1, rpc.BytesMsg(nil))
		cancel()
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("client session %d is server session %s\n", s, resp.Bytes())
		_ = resp.Release()
	}
	stopServing()
	fmt.Println(closeExampleNode(cli), closeExampleNode(srv))
	// Output:
	// client session 0 is server session 0
	// client session 1 is server session 1
	// <nil> <nil>
}

// SessionEvents reach EndpointConfig.OnSession on the endpoint's
// goroutine: Connected, ConnectFailed, Disconnected and Failed on the
// client side, Accepted on the server's.
func ExampleSessionEvent() {
	fmt.Println(rpc.Connected, rpc.ConnectFailed, rpc.Disconnected, rpc.Failed, rpc.Accepted)

	accepted := make(chan rpc.SessionEvent, 1) // the server's loop runs on another goroutine
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	srv, err := newExampleNode(net, 1, rpc.EndpointConfig{
		OnSession: func(s rpc.Session, ev rpc.SessionEvent, err error) {
			select {
			case accepted <- ev:
			default:
			}
		},
	}, nil)
	if err != nil {
		panic(err)
	}
	stopServing := srv.serve()
	var events []rpc.SessionEvent
	cli, err := newExampleNode(net, 2, rpc.EndpointConfig{
		OnSession: func(s rpc.Session, ev rpc.SessionEvent, err error) { events = append(events, ev) },
	}, nil)
	if err != nil {
		panic(err)
	}
	if _, err := cli.connect(srv.nx, 1); err != nil {
		panic(err)
	}
	select {
	case ev := <-accepted:
		fmt.Println("server:", ev)
	case <-time.After(5 * time.Second):
		fmt.Println("server: no event")
	}
	fmt.Println("client:", events)
	stopServing()
	fmt.Println(closeExampleNode(cli), closeExampleNode(srv))
	// Output:
	// connected connect-failed disconnected failed accepted
	// server: accepted
	// client: [connected]
	// <nil> <nil>
}

// Stats counts what an endpoint did: its handlers and continuations, the
// protocol's activity (Proto) and its datapath's (Datapath). Stats may be
// read from any goroutine; the server's are final once its loop stopped.
func ExampleStats() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	cfg := rpc.EndpointConfig{RTO: time.Second} // no retransmission on a slow machine
	srv := exampleEchoNode(net, cfg)
	stopServing := srv.serve()
	cli, s := exampleClient(net, cfg, srv)

	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.ep.Call(ctx, s, 1, rpc.BytesMsg([]byte("ping")))
		cancel()
		if err != nil {
			fmt.Println(err)
			break
		}
		_ = resp.Release()
	}
	stopServing()
	cs, ss := cli.ep.Stats(), srv.ep.Stats()
	fmt.Printf("client: %d continuations, %d completed, %d failed; datapath %d packets out, %d in\n",
		cs.Continuations, cs.Proto.Completed, cs.Proto.Failed, cs.Datapath.TxPackets, cs.Datapath.RxPackets)
	fmt.Printf("server: %d handlers; datapath %d packets in, %d out\n",
		ss.Handlers, ss.Datapath.RxPackets, ss.Datapath.TxPackets)
	fmt.Println("datapath errors:", cs.SendErrors+cs.RecvErrors, cs.LastDatapathErr)
	fmt.Println(closeExampleNode(cli), closeExampleNode(srv))
	// Output:
	// client: 3 continuations, 3 completed, 0 failed; datapath 3 packets out, 3 in
	// server: 3 handlers; datapath 3 packets in, 3 out
	// datapath errors: 0 <nil>
	// <nil> <nil>
}

// ProtoStats are the protocol's counters. A request and a response of
// three packets each: the client sends three request packets and pulls
// the response's last two with requests-for-response (control packets);
// the server acknowledges the first two request packets with credit
// returns (control packets), and its first response packet acknowledges
// the last.
func ExampleProtoStats() {
	net := memnet.NewNetwork(memnet.NetworkConfig{})
	cfg := rpc.EndpointConfig{RTO: time.Second} // no retransmission on a slow machine
	srv := exampleEchoNode(net, cfg)
	stopServing := srv.serve()
	cli, s := exampleClient(net, cfg, srv)

	body := bytes.Repeat([]byte{'b'}, 2*cli.ep.DataPerPacket()+1) // three packets
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.ep.Call(ctx, s, 1, rpc.BytesMsg(body))
	if err != nil {
		fmt.Println(err)
	} else {
		fmt.Println("echoed:", resp.Len() == len(body))
		_ = resp.Release()
	}
	stopServing()
	for _, x := range []struct {
		name string
		st   rpc.ProtoStats
	}{{"client", cli.ep.Stats().Proto}, {"server", srv.ep.Stats().Proto}} {
		fmt.Printf("%s: %d data, %d control, %d retransmits, %d handlers, %d completed\n",
			x.name, x.st.TxData, x.st.TxCtrl, x.st.Retransmits, x.st.Handlers, x.st.Completed)
	}
	fmt.Println(closeExampleNode(cli), closeExampleNode(srv))
	// Output:
	// echoed: true
	// client: 3 data, 2 control, 0 retransmits, 0 handlers, 1 completed
	// server: 3 data, 2 control, 0 retransmits, 1 handlers, 0 completed
	// <nil> <nil>
}
