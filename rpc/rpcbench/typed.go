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
// stubs (typedpb.Echo) and the goroutine-safe service.Client: window
// caller goroutines, each with its own arena, call in a closed loop over
// nSess sessions, and run the client endpoint's loop in turn (the
// Client's leader and followers), each on a locked thread pinned to the
// rpc client's CPU; the server is newSetup's.

type echoServer struct {
	typedpb.UnimplementedEchoServer
}

func (echoServer) Echo(ctx context.Context, req *typedpb.Blob, resp *typedpb.Blob) error {
	resp.SetData(req.GetData())
	return nil
}

// typedRate measures the typed variant's rate (and, with lat, every
// call's latency).
func (b *bench) typedRate(f fabric, cfg rpc.EndpointConfig, nSess, window int, lat *[]time.Duration) (float64, error) {
	s, _, err := newSetup(f, cfg, 0)
	if err != nil {
		return 0, err
	}
	defer s.close()
	srv, err := service.NewServer(s.srvNx)
	if err != nil {
		return 0, err
	}
	if err := typedpb.RegisterEchoServer(srv, echoServer{}); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := service.Dial(ctx, s.cli, s.srvNx.Addr(), 1, service.WithSessions(nSess),
		// Every caller runs on the client's one CPU (below), where a
		// spinning caller only takes time from the one running the loop.
		service.WithSpin(0))
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	cl := typedpb.NewEchoClient(c)
	// Calls carry no deadline, as the rpc variant's: a deadline costs the
	// server a timer per call (context.WithTimeout).
	callCtx := context.Background()
	data := make([]byte, smallSize)

	var measuring, stop atomic.Bool
	var done atomic.Int64
	var firstErr error
	var mu sync.Mutex
	lats := make([][]time.Duration, window)
	var wg sync.WaitGroup
	for i := 0; i < window; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			withRole("typed-client", func() {
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
					resp, err := cl.Echo(callCtx, a, req)
					if err == nil && len(resp.GetData()) != smallSize {
						err = errors.New("rpcbench typed: wrong echo")
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
		}(i)
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
