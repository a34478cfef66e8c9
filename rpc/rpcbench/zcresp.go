package rpcbench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/stats"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// zc_resp: what a zero-copy response costs the server by its size. The
// handler answers each small request with a reference to a registered
// buffer of ZCRespSizes bytes it holds (rpc.BufMsg of a Clone: no copy in
// the application), and the server's busy time is counted per call: the
// loop iterations that received or sent a packet (the datapath's
// counters moved), as kv's busy-polling server counts them. On a
// datapath that sends registered memory by reference (shm, whose packets
// carry a megabyte) a 1 MiB answer should cost what a 4 KiB one does; one
// that copies (udp) pays for every byte.
var ZCRespSizes = []int{4 << 10, 1 << 20}

// Request types of zc_resp: the response is ZCRespSizes[i] bytes.
const (
	reqZC0 = 10 // + index in ZCRespSizes
)

// zcWindow is zc_resp's requests in flight: one session's slots.
const zcWindow = rpc.DefaultWindow

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

// busyLoop is a server loop that never sleeps and adds to *busy the time
// of every iteration in which the datapath received or sent a packet.
func busyLoop(ctx context.Context, ep *rpc.Endpoint, dp datapath.Endpoint, busy *time.Duration) error {
	start := time.Now()
	last := time.Duration(0)
	for i := 0; ; i++ {
		if i&1023 == 0 && ctx.Err() != nil {
			return nil
		}
		before := dp.Stats()
		if err := ep.RunOnce(); err != nil {
			return err
		}
		now := time.Since(start)
		if after := dp.Stats(); after.RxPackets != before.RxPackets || after.TxPackets != before.TxPackets {
			*busy += now - last
		}
		last = now
	}
}

// zcResp measures, b.reps times interleaved, the server's busy ns per call
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
// returns the server's busy ns per call and the calls per second.
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
	var busy time.Duration
	err = onLockedThread("rpc-client", func() error {
		s, sess, err := newSetupLoop(f, b.ep(rpc.EndpointConfig{}), 1, z.register,
			func(ctx context.Context, ep *rpc.Endpoint, dp datapath.Endpoint) error {
				return busyLoop(ctx, ep, dp, &busy)
			})
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
	// The busy time covers the warm-up too: divide by every call.
	return float64(busy.Nanoseconds()) / float64(z.calls), rate, nil
}
