package rpcbench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/internal/stats"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// zc_resp: what a zero-copy response costs the server by its size. The
// handler answers each small request with a reference to a registered
// buffer of ZCRespSizes bytes it holds (rpc.BufMsg of a Clone: no copy in
// the application), and the server's thread CPU time is divided by its
// calls; the server sleeps when idle, so that time is its work (and its
// wake-ups), robust to other load on the machine. On a datapath that
// sends registered memory by reference (shm, whose packets carry a
// megabyte) a 1 MiB answer should cost what a 4 KiB one does; one that
// copies (udp) pays for every byte.
var ZCRespSizes = []int{4 << 10, 1 << 20}

// Request types of zc_resp: the response is ZCRespSizes[i] bytes.
const (
	reqZC0 = 10 // + index in ZCRespSizes
)

// zcWindow is zc_resp's requests in flight: one, so that the server
// wakes up once per call whatever the response's size (with more, a
// client slowed by large responses would let the server sleep between
// calls that a fast one batches, and the comparison would count
// wake-ups).
const zcWindow = 1

// zcServer is the state of zc_resp's server endpoint: the buffers it
// answers with (in a Concurrent pool: the handler runs on the server's
// loop, which takes and drops references on them) and its call count.
type zcServer struct {
	pool  *mem.Pool
	bufs  []mem.Buf
	calls uint64 // handler invocations (read after the loop stopped)
}

// newZCServer allocates one buffer of every size of ZCRespSizes from a
// pool on space (nil: private memory). The buffers hold a pattern, so
// that a copy anywhere would have to read real bytes.
func newZCServer(space *mem.Space) (*zcServer, error) {
	p, err := mem.NewPool(mem.PoolConfig{Name: "rpcbench zc_resp", Concurrent: true, Space: space})
	if err != nil {
		return nil, err
	}
	z := &zcServer{pool: p}
	for _, n := range ZCRespSizes {
		b, err := p.Alloc(n)
		if err != nil {
			_ = z.close()
			return nil, err
		}
		for i := range b.Bytes() {
			b.Bytes()[i] = byte(i)
		}
		z.bufs = append(z.bufs, b)
	}
	return z, nil
}

func (z *zcServer) register(nx *rpc.Nexus) error {
	for i := range z.bufs {
		b := z.bufs[i]
		if err := nx.Register(uint8(reqZC0+i), rpc.Dispatch, func(r *rpc.Request) {
			z.calls++
			_ = r.Respond(rpc.BufMsg(b.Clone()))
		}); err != nil {
			return err
		}
	}
	return nil
}

func (z *zcServer) close() error {
	for _, b := range z.bufs {
		_ = b.Release()
	}
	z.bufs = nil
	return z.pool.Close()
}

// cpuLoop is a server loop that runs ep (sleeping in the datapath when
// idle) and stores the thread CPU time it used in *cpu: its goroutine is
// locked to its thread (newSetupLoop), so that is the server's work plus
// its wake-ups, whatever else the machine runs.
func cpuLoop(ctx context.Context, ep *rpc.Endpoint, cpu *time.Duration) error {
	t0 := cpuclock.Thread()
	err := ep.Run(ctx)
	*cpu = time.Duration(cpuclock.Thread() - t0)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// zcResp measures, b.reps times interleaved, the server's CPU ns per call
// for each size of ZCRespSizes, and records the medians.
func (b *bench) zcResp() error {
	dp := b.o.Datapath
	ns := make([][]float64, len(ZCRespSizes))
	rates := make([][]float64, len(ZCRespSizes))
	for rep := 0; rep < b.reps; rep++ {
		line := ""
		for i, size := range ZCRespSizes {
			perCall, rate, err := b.zcRun(i)
			if err != nil {
				return fmt.Errorf("%d B: %w", size, err)
			}
			ns[i], rates[i] = append(ns[i], perCall), append(rates[i], rate)
			line += fmt.Sprintf(" %d B %.0f ns/call (%.0f rps)", size, perCall, rate)
		}
		l, _ := loadAvg()
		b.progress("  zc_resp rep %d:%s (load %.2f)\n", rep, line, l)
	}
	for i, size := range ZCRespSizes {
		b.add("zc_resp", fmt.Sprint(size), dp, stats.Median(ns[i]), "server_ns")
		b.add("zc_resp", fmt.Sprintf("%d_rate", size), dp, stats.Median(rates[i]), "rps")
	}
	return nil
}

// zcRun runs one closed loop of zcWindow requests of type reqZC0+i and
// returns the server's CPU ns per call and the calls per second.
func (b *bench) zcRun(i int) (perCall, rate float64, err error) {
	f := b.fabric()
	z, err := newZCServer(f.space)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := z.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	var cpu time.Duration
	err = onLockedThread("rpc-client", func() error {
		// The server sleeps when idle (IdleSpin < 0): its CPU time is
		// then what serving the calls cost.
		s, sess, err := newSetupLoop(f, b.ep(rpc.EndpointConfig{IdleSpin: -1}), 1, z.register,
			func(ctx context.Context, ep *rpc.Endpoint, _ datapath.Endpoint) error { return cpuLoop(ctx, ep, &cpu) })
		if err != nil {
			return err
		}
		defer s.close()
		rate, err = closedLoop(s.cli, sess, uint8(reqZC0+i), smallSize, zcWindow, b.dur, nil)
		s.stopServer()
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if z.calls == 0 {
		return 0, 0, fmt.Errorf("no call reached the server")
	}
	runtime.KeepAlive(z)
	// The CPU time covers the warm-up too: divide by every call.
	return float64(cpu.Nanoseconds()) / float64(z.calls), rate, nil
}
