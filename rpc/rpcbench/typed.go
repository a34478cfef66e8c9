package rpcbench

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Variant "typed": the small echo RPC of variant "rpc" through generated
// stubs (typedpb.Echo) and the goroutine-safe service.Client, at the rpc
// variant's concurrency: window calls in flight over nSess sessions, kept
// in flight by the generated reusable asynchronous calls (NewEchoCall, one
// per slot: each call's done function checks the echo and starts the
// slot's next request, and the call resets the slot's response arena after
// it (AsyncCall.ResetAfterDone: the response decoded from the received
// buffer, not copied into the arena first), the slot's request
// message built once as the rpc variant's request buffer is allocated
// once), with the Client's loop run by service.Client.Run on one
// locked thread pinned to the rpc client's CPU. The server is newSetup's
// with the service registered (a dispatch handler).
//
// Variant "typed-sync": the same through the synchronous stub (Echo):
// window goroutines, each with its own arena, call in a closed loop and
// run the Client's loop in turn (its leader and followers), each on a
// locked thread pinned to the rpc client's CPU (unpinned, the caller
// running the loop may share the server's CPU), so a hand-off between
// them is an OS context switch.

type echoServer struct {
	typedpb.UnimplementedEchoServer
}

func (*echoServer) Echo(ctx context.Context, req *typedpb.Blob, resp *typedpb.Blob) error {
	resp.SetData(req.GetData())
	return nil
}

// typedSetup starts the server of the typed variants and dials it.
func typedSetup(f fabric, cfg rpc.EndpointConfig, nSess int, opts ...service.ClientOption) (*setup, *service.Client, error) {
	s, _, err := newSetup(f, cfg, 0)
	if err != nil {
		return nil, nil, err
	}
	srv, err := service.NewServer(s.srvNx)
	if err == nil {
		err = typedpb.RegisterEchoServer(srv, &echoServer{})
	}
	if err != nil {
		s.close()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := service.Dial(ctx, s.cli, s.srvNx.Addr(), 1, append([]service.ClientOption{service.WithSessions(nSess)}, opts...)...)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, c, nil
}

// typedSlot is one call kept in flight by typedRate. Its request is
// built once (in an arena of its own, never reset while the slot runs)
// and sent by every Start, as the rpc variant sends one request buffer
// per call; a, the response's arena, is reset by the call after every
// done (ResetAfterDone).
type typedSlot struct {
	t     *typedLoop
	a     *wire.Arena
	req   *typedpb.Blob
	start time.Time
	call  *service.AsyncCall[*typedpb.Blob]
}

type typedLoop struct {
	cl        *typedpb.EchoClient
	data      []byte
	lat       *[]time.Duration
	measuring bool
	stop      bool
	n         int64
	inflight  int
	err       error
	cancel    context.CancelFunc
}

func (t *typedLoop) fail(err error) {
	if t.err == nil {
		t.err = err
	}
	t.cancel()
}

func (t *typedLoop) issue(sl *typedSlot) {
	if t.lat != nil {
		sl.start = time.Now()
	}
	t.inflight++
	if err := sl.call.Start(context.Background(), sl.req); err != nil {
		t.inflight--
		t.fail(err)
	}
}

func (sl *typedSlot) complete(resp *typedpb.Blob, err error) {
	t := sl.t
	t.inflight--
	if err == nil && len(resp.GetData()) != smallSize {
		err = errors.New("rpcbench typed: wrong echo")
	}
	if err == nil && sl.call.ResetErrors() != 0 {
		err = errors.New("rpcbench typed: a response arena's Reset failed")
	}
	if err != nil {
		t.fail(err)
		return
	}
	if t.measuring {
		t.n++
		if t.lat != nil {
			*t.lat = append(*t.lat, time.Since(sl.start))
		}
	}
	if !t.stop {
		t.issue(sl)
	} else if t.inflight == 0 {
		t.cancel()
	}
}

// typedRate measures the typed variant's rate (and, with lat, every
// call's latency).
func (b *bench) typedRate(f fabric, cfg rpc.EndpointConfig, nSess, window int, lat *[]time.Duration) (float64, error) {
	var r float64
	err := onLockedThread("typed-client", func() error {
		s, c, err := typedSetup(f, cfg, nSess)
		if err != nil {
			return err
		}
		defer s.close()
		defer func() { _ = c.Close() }()
		t := &typedLoop{cl: typedpb.NewEchoClient(c), data: make([]byte, smallSize), lat: lat}
		if lat != nil {
			*lat = (*lat)[:0]
		}
		run := func(d time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			t.cancel = cancel
			err := c.Run(ctx)
			if t.err != nil {
				return t.err
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		d := b.durFor(smallSize)
		slots := make([]*typedSlot, window)
		for i := range slots {
			sl := &typedSlot{t: t, a: wire.NewArena()}
			sl.req = typedpb.NewBlob(wire.NewArena())
			sl.req.SetData(t.data)
			sl.call = t.cl.NewEchoCall(sl.a, sl.complete)
			sl.call.ResetAfterDone() // the call resets sl.a after complete
			slots[i] = sl
		}
		for _, sl := range slots {
			t.issue(sl)
		}
		if err := run(d / 10); err != nil { // warm-up (binds the method)
			return err
		}
		t.measuring = true
		start := time.Now()
		if err := run(d); err != nil {
			return err
		}
		el := time.Since(start)
		t.measuring, t.stop = false, true
		if t.inflight > 0 {
			if err := run(30 * time.Second); err != nil { // drain
				return err
			}
		}
		r = float64(t.n) / el.Seconds()
		s.stopServer()
		b.sys.collect(s.cliDP, s.srvDP)
		return nil
	})
	return r, err
}

// typedSyncRate measures the typed-sync variant's rate (and, with lat,
// every call's latency).
func (b *bench) typedSyncRate(f fabric, cfg rpc.EndpointConfig, nSess, window int, lat *[]time.Duration) (float64, error) {
	s, c, err := typedSetup(f, cfg, nSess, service.WithSpin(0))
	if err != nil {
		return 0, err
	}
	defer s.close()
	defer func() { _ = c.Close() }()
	cl := typedpb.NewEchoClient(c)
	data := make([]byte, smallSize)

	var measuring, stop atomic.Bool
	var done atomic.Int64
	var firstErr error
	var mu sync.Mutex
	lats := make([][]time.Duration, window)
	var wg sync.WaitGroup
	for i := 0; i < window; i++ {
		wg.Add(1)
		go withRole("typed-client", func() {
			defer wg.Done()
			// On the client's CPU, as the rpc variant's client loop: the
			// caller that runs the loop must not share the server's CPU.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			restore := pinThread(cpuClient)
			defer restore()
			a := wire.NewArena()
			for !stop.Load() {
				t0 := time.Now()
				req := typedpb.NewBlob(a)
				req.SetData(data)
				resp, err := cl.Echo(context.Background(), a, req)
				if err == nil && len(resp.GetData()) != smallSize {
					err = errors.New("rpcbench typed-sync: wrong echo")
				}
				if err == nil {
					err = a.Reset()
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					stop.Store(true)
					return
				}
				if measuring.Load() {
					done.Add(1)
					if lat != nil {
						lats[i] = append(lats[i], time.Since(t0))
					}
				}
			}
		})
	}
	d := b.durFor(smallSize)
	time.Sleep(d / 10)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d)
	n := done.Load()
	el := time.Since(start)
	measuring.Store(false)
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if lat != nil {
		*lat = (*lat)[:0]
		for _, l := range lats {
			*lat = append(*lat, l...)
		}
	}
	s.stopServer()
	return float64(n) / el.Seconds(), nil
}
