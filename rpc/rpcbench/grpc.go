package rpcbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
)

// rawCodec passes []byte messages through gRPC unchanged, so the echo
// measures gRPC-Go's transport rather than a serializer.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return nil, errors.New("rpcbench: rawCodec wants *[]byte")
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return errors.New("rpcbench: rawCodec wants *[]byte")
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "cfraw" }

var _ encoding.Codec = rawCodec{}

var echoDesc = grpc.ServiceDesc{
	ServiceName: "cornflakes.bench.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var b []byte
			if err := dec(&b); err != nil {
				return nil, err
			}
			return &b, nil
		},
	}},
}

// gRPC-Go's transports: loopback TCP (variant "grpc", datapath "tcp") and
// a Unix domain socket (variant "grpc-uds", datapath "uds"), the usual IPC
// choice between processes on one host.
const (
	grpcTCP = "tcp"
	grpcUDS = "unix"
)

// grpcVariants are the gRPC-Go variants small_rate and latency measure next
// to the RPC and the raw datapath: the record's variant and datapath and
// the transport.
var grpcVariants = []struct{ variant, datapath, network string }{
	{"grpc", "tcp", grpcTCP},
	{"grpc-uds", "uds", grpcUDS},
}

// grpcRate runs `clients` goroutines doing unary echo calls of size bytes
// over network (grpcTCP: loopback TCP; grpcUDS: a Unix domain socket in a
// fresh temporary directory, removed afterwards) for d and returns calls
// per second; lat collects latencies when non-nil (use clients == 1).
func grpcRate(network string, size, clients int, d time.Duration, lat *[]time.Duration) (r float64, err error) {
	withRole("grpc", func() { r, err = grpcRun(network, size, clients, d, lat) })
	return r, err
}

// grpcListen opens the server's listener and returns the client's target.
func grpcListen(network string) (net.Listener, string, func(), error) {
	switch network {
	case grpcTCP:
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, "", nil, err
		}
		return lis, lis.Addr().String(), func() {}, nil
	case grpcUDS:
		dir, err := os.MkdirTemp("", "cfrpcb-grpc")
		if err != nil {
			return nil, "", nil, err
		}
		path := filepath.Join(dir, "echo.sock")
		lis, err := net.Listen("unix", path)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, "", nil, err
		}
		return lis, "unix://" + path, func() { _ = os.RemoveAll(dir) }, nil
	}
	return nil, "", nil, fmt.Errorf("rpcbench: grpc over %q", network)
}

func grpcRun(network string, size, clients int, d time.Duration, lat *[]time.Duration) (float64, error) {
	lis, target, cleanup, err := grpcListen(network)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	srv.RegisterService(&echoDesc, struct{}{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ctx := context.Background()
	req := make([]byte, size)
	call := func() error {
		var resp []byte
		return conn.Invoke(ctx, "/cornflakes.bench.Echo/Call", &req, &resp)
	}
	for i := 0; i < 100; i++ { // warm-up (connection setup)
		if err := call(); err != nil {
			return 0, err
		}
	}
	var count atomic.Int64
	var mu sync.Mutex
	var firstErr error
	end := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for time.Now().Before(end) {
				t0 := time.Now()
				if err := call(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				if lat != nil {
					local = append(local, time.Since(t0))
				}
				count.Add(1)
			}
			if lat != nil {
				mu.Lock()
				*lat = append(*lat, local...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}
