package service_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// lockstep is a client and a server endpoint over memnet, both stepped by
// the benchmark's goroutine (rpc.Endpoint.RunOnce, one after the other):
// no busy-polling loop runs, so the work per call is the code's alone,
// countable exactly (instructions under callgrind, docs/perf/svc4.md).
type lockstep struct {
	cliEp, srvEp *rpc.Endpoint
	srvNx        *rpc.Nexus
	c            *service.Client // typed
	sess         []rpc.Session   // raw
}

const (
	lockstepWindow = 32
	lockstepSize   = 32 // rpcbench's small RPC
	reqEchoRaw     = 9
)

// newLockstep connects the two endpoints: a service.Client, or with raw
// plain rpc sessions.
func newLockstep(b testing.TB, raw bool) *lockstep {
	b.Helper()
	return newLockstepDesc(b, raw, &typedpb.Echo_ServiceDesc)
}

// newLockstepDesc is newLockstep with the server's Echo service described
// by d.
func newLockstepDesc(b testing.TB, raw bool, d *service.ServiceDesc) *lockstep {
	b.Helper()
	return newLockstepImpl(b, raw, d, &lockstepEcho{})
}

// newLockstepImpl is newLockstepDesc with impl serving the Echo service.
func newLockstepImpl(b testing.TB, raw bool, d *service.ServiceDesc, impl typedpb.EchoServer) *lockstep {
	b.Helper()
	net := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	nc := rpc.NexusConfig{FailureTimeout: 60 * time.Second, ConnectTimeout: 60 * time.Second} // slow under valgrind
	srvNx, err := rpc.NewNexus(nc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srvNx.Close() })
	srv, err := service.NewServer(srvNx)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.RegisterService(d, impl); err != nil {
		b.Fatal(err)
	}
	// rpcbench's rpc variant: the body echoed from the request, inline.
	if err := srvNx.Register(reqEchoRaw, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) }); err != nil {
		b.Fatal(err)
	}
	open := func(nx *rpc.Nexus, id uint8, name string) *rpc.Endpoint {
		p := memtest.NewPool(b, mem.PoolConfig{Name: name})
		dp, err := net.Open(datapath.Config{Pool: p}, memnet.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: id, Datapath: dp, Pool: p, NoReserve: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ep.Close() })
		return ep
	}
	l := &lockstep{srvNx: srvNx, srvEp: open(srvNx, 1, "srv")}
	cliNx, err := rpc.NewNexus(nc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cliNx.Close() })
	l.cliEp = open(cliNx, 2, "cli")
	// The server runs on a goroutine while the sessions connect only.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.srvEp.Run(ctx) }()
	dctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nSess := lockstepWindow / rpc.DefaultWindow
	if raw {
		for i := 0; i < nSess && err == nil; i++ {
			var s rpc.Session
			if s, err = l.cliEp.Connect(srvNx.Addr(), 1); err == nil {
				err = waitConnected(dctx, l.cliEp, s)
				l.sess = append(l.sess, s)
			}
		}
	} else {
		l.c, err = service.Dial(dctx, l.cliEp, srvNx.Addr(), 1, service.WithSessions(nSess))
	}
	stop()
	if derr := <-done; !errors.Is(derr, context.Canceled) {
		b.Fatal(derr)
	}
	if err != nil {
		b.Fatal(err)
	}
	if l.c != nil {
		b.Cleanup(func() { _ = l.c.Close() })
	}
	return l
}

// waitConnected steps ep until s is connected or ctx is done, yielding
// between steps: under valgrind (GOMAXPROCS=1, no asynchronous
// preemption) rpc.Endpoint.WaitConnected's loop never lets the server's
// goroutine run, so the handshake is never answered.
func waitConnected(ctx context.Context, ep *rpc.Endpoint, s rpc.Session) error {
	for !ep.IsConnected(s) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ep.RunOnce(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}

type lockstepEcho struct {
	typedpb.UnimplementedEchoServer
}

func (*lockstepEcho) Echo(_ context.Context, req, resp *typedpb.Blob) error {
	resp.SetData(req.GetData())
	return nil
}

// step runs one iteration of each loop, the client's first.
func (l *lockstep) step(b testing.TB) {
	if err := l.clientStep(); err != nil {
		b.Fatal(err)
	}
	if err := l.serverStep(); err != nil {
		b.Fatal(err)
	}
}

// clientStep and serverStep are one iteration of either side's loop
// (functions of their own for callgrind's per-side counts).
//
//go:noinline
func (l *lockstep) clientStep() error { return l.cliEp.RunOnce() }

//go:noinline
func (l *lockstep) serverStep() error { return l.srvEp.RunOnce() }

// measured steps both loops until b.N calls completed (*n) or one failed:
// the part of BenchmarkLockstep that callgrind counts
// (--toggle-collect='*lockstep).measured').
func (l *lockstep) measured(b *testing.B, n *int, failed *error) {
	for i := 0; *n < b.N && *failed == nil && i < 100*b.N+1e6; i++ {
		l.step(b)
	}
}

// BenchmarkLockstep: lockstepWindow calls of lockstepSize bytes kept in
// flight over 4 sessions, client and server stepped in turn by this
// goroutine over memnet (no polling loop, no second thread). "typed" is
// rpcbench's typed variant (a generated NewEchoCall per slot, its request
// message built once, ResetAfterDone, the Client's loop held as
// Client.Run holds it); "typed-copy" the same with done resetting the
// arena (the response copied into it); "typed-build" typed-copy building
// the request for every call (NewBlob, SetData); "typed-borrow"
// typed-copy with echoBorrowDesc; "typed-nodirect" typed with
// echoBorrowDesc (the server without MethodDesc.Direct); "rpc" its rpc variant (a registered buffer
// enqueued per call, echoed inline by a dispatch handler). ns/op is one
// call's client and server work; callgrind counts its instructions.
func BenchmarkLockstep(b *testing.B) {
	b.Run("typed", func(b *testing.B) { benchLockstepTyped(b, lockTyped, &typedpb.Echo_ServiceDesc) })
	b.Run("typed-copy", func(b *testing.B) { benchLockstepTyped(b, lockCopy, &typedpb.Echo_ServiceDesc) })
	b.Run("typed-build", func(b *testing.B) { benchLockstepTyped(b, lockBuild, &typedpb.Echo_ServiceDesc) })
	b.Run("typed-borrow", func(b *testing.B) { benchLockstepTyped(b, lockCopy, echoBorrowDesc()) })
	b.Run("typed-nodirect", func(b *testing.B) { benchLockstepTyped(b, lockTyped, echoBorrowDesc()) })
	b.Run("rpc", func(b *testing.B) {
		l := newLockstep(b, true)
		ep := l.cliEp
		p := ep.Pool()
		req, err := p.Alloc(lockstepSize)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = req.Release() }()
		clear(req.Bytes())
		sess := l.sess
		n, issued, next := 0, 0, 0
		var failed error
		var cont func(*rpc.Response)
		issue := func() {
			issued++
			s := sess[next]
			if next++; next == len(sess) {
				next = 0
			}
			if err := ep.Enqueue(s, reqEchoRaw, rpc.BufMsg(req.Clone()), cont); err != nil && failed == nil {
				failed = err
			}
		}
		cont = func(r *rpc.Response) {
			if r.Err == nil && len(r.Data()) != lockstepSize {
				r.Err = errors.New("wrong echo")
			}
			if r.Err != nil {
				if failed == nil {
					failed = r.Err
				}
				return
			}
			n++
			if issued < b.N+lockstepWindow*2 {
				issue()
			}
		}
		for i := 0; i < lockstepWindow; i++ {
			issue()
		}
		for i := 0; n < lockstepWindow && failed == nil && i < 1e6; i++ {
			l.step(b)
		}
		b.ResetTimer()
		n, issued = 0, lockstepWindow
		l.measured(b, &n, &failed)
		b.StopTimer()
		if failed != nil || n < b.N {
			b.Fatalf("%d of %d calls: %v", n, b.N, failed)
		}
		for i := 0; i < 1e5 && n < issued; i++ {
			l.step(b) // drain
		}
	})
}

// echoBorrowDesc is the generated Echo_ServiceDesc with a BufHandler
// written as a generator would emit it and no Direct
// (BenchmarkLockstep/typed-borrow): the server's request decoded borrowing
// its reference, served through invoke and the BufHandler (the server's
// path before MethodDesc.Direct).
func echoBorrowDesc() *service.ServiceDesc {
	d := typedpb.Echo_ServiceDesc
	d.Methods = append([]service.MethodDesc(nil), d.Methods...)
	d.Methods[0].Direct = nil // served by this BufHandler, not the generated Direct
	d.Methods[0].BufHandler = func(srv any, ctx context.Context, a *wire.Arena, in mem.Buf, ic service.UnaryServerInterceptor, info *service.MethodInfo) (wire.Object, error) {
		req := typedpb.NewBlob(a)
		if err := req.Decode(in); err != nil {
			return nil, service.Errorf(service.InvalidArgument, "decoding the request: %v", err)
		}
		a.BorrowInput = false
		resp := typedpb.NewBlob(a)
		if ic == nil {
			return resp, srv.(typedpb.EchoServer).Echo(ctx, req, resp)
		}
		return resp, ic(ctx, req, resp, info, func(ctx context.Context, req, resp any) error {
			return srv.(typedpb.EchoServer).Echo(ctx, req.(*typedpb.Blob), resp.(*typedpb.Blob))
		})
	}
	return &d
}

// The forms of BenchmarkLockstep's typed variant.
const (
	// lockTyped: each slot sends one request message built once, and its
	// AsyncCall resets the response arena after done (ResetAfterDone: the
	// response decoded from the received buffer); rpcbench's typed variant.
	lockTyped = iota
	// lockCopy: the same with done resetting the arena itself (the
	// response copied into the arena, then decoded).
	lockCopy
	// lockBuild: lockCopy building every request (NewBlob and SetData in
	// the slot's arena, reset with the response).
	lockBuild
)

// benchLockstepTyped is BenchmarkLockstep's typed variant in one of its
// forms (lockTyped, lockCopy, lockBuild).
func benchLockstepTyped(b *testing.B, form int, d *service.ServiceDesc) {
	build := form == lockBuild
	l := newLockstepDesc(b, false, d)
	cl := typedpb.NewEchoClient(l.c)
	data := make([]byte, lockstepSize)
	n, issued := 0, 0
	var failed error
	type slot struct {
		a    *wire.Arena
		req  *typedpb.Blob // built once (without build)
		call *service.AsyncCall[*typedpb.Blob]
	}
	issue := func(s *slot) {
		issued++
		req := s.req
		if build {
			req = typedpb.NewBlob(s.a)
			req.SetData(data)
		}
		if err := s.call.Start(context.Background(), req); err != nil && failed == nil {
			failed = err
		}
	}
	slots := make([]*slot, lockstepWindow)
	for i := range slots {
		s := &slot{a: wire.NewArena()}
		if !build {
			s.req = typedpb.NewBlob(wire.NewArena())
			s.req.SetData(data)
		}
		s.call = cl.NewEchoCall(s.a, func(resp *typedpb.Blob, err error) {
			if err == nil && len(resp.GetData()) != lockstepSize {
				err = errors.New("wrong echo")
			}
			if err == nil && form != lockTyped {
				err = s.a.Reset()
			}
			if err != nil {
				if failed == nil {
					failed = err
				}
				return
			}
			n++
			if issued < b.N+lockstepWindow*2 {
				issue(s)
			}
		})
		if form == lockTyped {
			s.call.ResetAfterDone()
		}
		slots[i] = s
	}
	// Warm up (binds the method) outside the count.
	release := service.LeadHere(l.c)
	defer release()
	for _, s := range slots {
		issue(s)
	}
	for i := 0; n < lockstepWindow && failed == nil && i < 1e6; i++ {
		l.step(b)
	}
	b.ResetTimer()
	n, issued = 0, lockstepWindow
	l.measured(b, &n, &failed)
	b.StopTimer()
	if failed != nil || n < b.N {
		b.Fatalf("%d of %d calls: %v", n, b.N, failed)
	}
	for i := 0; i < 1e5 && l.c.Endpoint().Stats().Proto.Retransmits == 0 && n < issued; i++ {
		l.step(b) // drain
	}
	for _, s := range slots {
		_ = s.a.Reset()
	}
}
