package naosbench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp" // the "udp" datapath
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// rpcMaxMsg is the largest message of the RPC endpoints (and the largest
// item of their pools).
const rpcMaxMsg = 16<<20 - 64<<10

const reqArray = 1

// rpcHarness is a server and a client endpoint on kernel UDP loopback;
// the server's handler decodes each request with the codec of the record
// being measured and answers one byte.
type rpcHarness struct {
	srvNx, cliNx *rpc.Nexus
	srv, cli     *rpc.Endpoint
	sess         rpc.Session
	stop         context.CancelFunc
	done         chan error

	mu     sync.Mutex
	dec    func([]byte) error
	decErr error
}

func newPool(name string) (*mem.Pool, error) {
	return mem.NewPool(mem.PoolConfig{Name: name, MaxClass: 32 << 20, MaxBytes: 4 << 30})
}

func newRPCHarness() (_ *rpcHarness, err error) {
	h := &rpcHarness{done: make(chan error, 1)}
	defer func() {
		if err != nil {
			_ = h.close()
		}
	}()
	if h.srvNx, err = rpc.NewNexus(nexusConfig); err != nil {
		return nil, err
	}
	if err = h.srvNx.Register(reqArray, rpc.Dispatch, h.handle); err != nil {
		return nil, err
	}
	open := func(id uint8, name string) (*rpc.Endpoint, *rpc.Nexus, error) {
		nx := h.srvNx
		if id != 1 {
			if h.cliNx, err = rpc.NewNexus(nexusConfig); err != nil {
				return nil, nil, err
			}
			nx = h.cliNx
		}
		dp, err := datapath.Open("udp", datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
		if err != nil {
			return nil, nil, err
		}
		pool, err := newPool(name)
		if err != nil {
			_ = dp.Close()
			return nil, nil, err
		}
		ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: id, Datapath: dp, Pool: pool, MaxMsgSize: rpcMaxMsg})
		if err != nil {
			_ = dp.Close()
			return nil, nil, err
		}
		return ep, nx, nil
	}
	if h.srv, _, err = open(1, "naosbench-srv"); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	h.stop = stop
	srv := h.srv
	go func() { h.done <- srv.Run(ctx) }()
	if h.cli, _, err = open(2, "naosbench-cli"); err != nil {
		return nil, err
	}
	if h.sess, err = h.cli.Connect(h.srvNx.Addr(), 1); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err = h.cli.WaitConnected(wctx, h.sess); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *rpcHarness) handle(r *rpc.Request) {
	h.mu.Lock()
	dec := h.dec
	h.mu.Unlock()
	if dec != nil {
		if err := dec(r.Data()); err != nil {
			h.mu.Lock()
			if h.decErr == nil {
				h.decErr = err
			}
			h.mu.Unlock()
		}
	}
	_ = r.RespondBytes([]byte{1})
}

func (h *rpcHarness) close() error {
	var errs []error
	if h.cli != nil {
		errs = append(errs, h.cli.Close())
	}
	if h.stop != nil {
		h.stop()
		<-h.done
		errs = append(errs, h.srv.Close())
	} else if h.srv != nil {
		errs = append(errs, h.srv.Close())
	}
	if h.cliNx != nil {
		errs = append(errs, h.cliNx.Close())
	}
	if h.srvNx != nil {
		errs = append(errs, h.srvNx.Close())
	}
	return errors.Join(errs...)
}

func (h *rpcHarness) measure(lib string, d *dataset, budget time.Duration) (result, error) {
	enc, err := newCodec(lib, d, false)
	if err != nil {
		return result{}, err
	}
	dec, err := newCodec(lib, d, false) // the server's own (gob keeps state per stream)
	if err != nil {
		return result{}, err
	}
	h.mu.Lock()
	h.dec, h.decErr = dec.decode, nil
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.dec = nil
		h.mu.Unlock()
	}()
	var buf []byte
	frame := func() (rpc.Msg, error) {
		var err error
		buf, err = enc.encode(buf[:0])
		return rpc.BytesMsg(buf), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rt := func() (time.Duration, error) {
		t0 := time.Now()
		m, err := frame()
		if err != nil {
			return 0, err
		}
		resp, err := h.cli.Call(ctx, h.sess, reqArray, m)
		if err != nil {
			return 0, err
		}
		_ = resp.Release()
		return time.Since(t0), nil
	}
	var warm time.Duration
	for i := 0; i < 2; i++ {
		if warm, err = rt(); err != nil {
			return result{}, err
		}
	}
	reps, stream := plan(warm, budget)
	xs := make([]time.Duration, 0, reps)
	deadline := time.Now().Add(budget)
	for i := 0; i < reps && (i < 3 || time.Now().Before(deadline)); i++ {
		x, err := rt()
		if err != nil {
			return result{}, err
		}
		xs = append(xs, x)
	}
	lat := float64(median(xs)) / 1e3
	// Throughput: up to window requests outstanding (one for gob, whose
	// frames must be decoded in order).
	window := 8
	if lib == "gob" {
		window = 1
	}
	sent, got := 0, 0
	var cerr error
	cont := func(r *rpc.Response) {
		got++
	}
	c0 := cpuTime()
	t0 := time.Now()
	for got < stream && cerr == nil {
		for sent < stream && sent-got < window {
			m, err := frame()
			if err != nil {
				return result{}, err
			}
			if err := h.cli.Enqueue(h.sess, reqArray, m, cont); err != nil {
				return result{}, err
			}
			sent++
		}
		if err := h.cli.RunOnce(); err != nil {
			return result{}, err
		}
		if ctx.Err() != nil {
			return result{}, fmt.Errorf("throughput: %w", ctx.Err())
		}
	}
	el := time.Since(t0)
	cpu := float64(cpuTime()-c0) / 1e3 / float64(stream)
	h.mu.Lock()
	derr := h.decErr
	h.mu.Unlock()
	if derr != nil {
		return result{}, derr
	}
	return result{lat, float64(stream) / el.Seconds(), cpu}, nil
}

// nexusConfig: the failure timeout is long because a server decoding a
// large array on a loaded machine may not answer heartbeats for a while
// (the default 500 ms would end the session mid-run).
var nexusConfig = rpc.NexusConfig{FailureTimeout: 30 * time.Second, ConnectTimeout: 10 * time.Second}
