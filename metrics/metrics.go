// Package metrics exports what Cornflakes measures as Prometheus metrics
// (client_golang): typed service calls (counts, status codes and
// latencies, after OpenTelemetry's RPC conventions rpc.server.call.duration
// and rpc.client.call.duration), RPC endpoints (packets, retransmissions,
// bytes sent zero-copy and copied), memory pools (items and bytes in use,
// exhaustions) and the values setters copied although they were meant to
// go zero-copy (wire.SilentCopies).
//
// A Metrics is a registry of its own: pass it to service.WithServerObserver
// and service.WithClientObserver, add endpoints and pools, and serve
// Handler (or Listen) for scrapers. All methods are safe for concurrent
// use.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Buckets of the call duration histograms (seconds): 1 µs to 1 s, the
// range of microsecond-scale RPC and its tail.
var Buckets = []float64{1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 1e-2, 1e-1, 1}

// Metrics holds the collectors of one process (or one server).
type Metrics struct {
	reg   *prometheus.Registry
	dur   [2]*prometheus.HistogramVec // by service.Side
	calls *prometheus.CounterVec
	cache sync.Map // callKey -> *callObs

	mu    sync.Mutex
	eps   []namedEndpoint
	pools []*mem.Pool
}

type namedEndpoint struct {
	name string
	ep   *rpc.Endpoint
}

type callKey struct {
	side service.Side
	info *service.MethodInfo
	code service.Code
}

type callObs struct {
	dur   prometheus.Observer
	calls prometheus.Counter
}

// New returns a Metrics with its own registry, which also holds the Go
// runtime's and the process's collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	labels := []string{"rpc_service", "rpc_method", "rpc_status_code"}
	m.dur[service.ServerSide] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rpc_server_call_duration_seconds",
		Help:    "Duration of typed service calls on the server (OpenTelemetry rpc.server.call.duration).",
		Buckets: Buckets,
	}, labels)
	m.dur[service.ClientSide] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rpc_client_call_duration_seconds",
		Help:    "Duration of typed service calls on the client (OpenTelemetry rpc.client.call.duration).",
		Buckets: Buckets,
	}, labels)
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cornflakes_rpc_calls_total",
		Help: "Typed service calls completed, by side, method and status code (errors are the codes other than OK).",
	}, append([]string{"side"}, labels...))
	silent := func(bytes bool) func() float64 {
		return func() float64 {
			n, b := wire.SilentCopies()
			if bytes {
				return float64(b)
			}
			return float64(n)
		}
	}
	m.reg.MustRegister(m.dur[0], m.dur[1], m.calls,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cornflakes_wire_silent_copies_total",
			Help: "Values of at least the arena's threshold that setters copied because they were not in registered memory (meant zero-copy).",
		}, silent(false)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cornflakes_wire_silent_copy_bytes_total",
			Help: "Bytes of the values counted by cornflakes_wire_silent_copies_total.",
		}, silent(true)),
		(*endpointCollector)(m),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Registry is the registry the collectors are in (to add one's own).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveCall implements service.Observer. After the first call of a
// method with a code, it costs a map lookup, a histogram observation and
// a counter increment, and allocates nothing.
func (m *Metrics) ObserveCall(side service.Side, info *service.MethodInfo, code service.Code, d time.Duration) {
	k := callKey{side, info, code}
	v, ok := m.cache.Load(k)
	if !ok {
		svc, method := "", ""
		if info.Service != nil {
			svc, method = info.Service.Name, info.Service.Methods[info.Method].Name
		}
		c := code.String()
		o := &callObs{
			dur:   m.dur[side&1].WithLabelValues(svc, method, c),
			calls: m.calls.WithLabelValues(side.String(), svc, method, c),
		}
		v, _ = m.cache.LoadOrStore(k, o)
	}
	o := v.(*callObs)
	o.dur.Observe(d.Seconds())
	o.calls.Inc()
}

// AddEndpoint exports ep's counters (rpc.Endpoint.Stats, read at each
// scrape) under the label endpoint=name, and its pool's when AddPool
// can export it (a Concurrent pool).
func (m *Metrics) AddEndpoint(name string, ep *rpc.Endpoint) {
	m.mu.Lock()
	m.eps = append(m.eps, namedEndpoint{name, ep})
	m.mu.Unlock()
	m.AddPool(ep.Pool())
}

// AddPool exports p's use (mem.Pool.Stats, read at each scrape) under the
// label pool=<its name>; a pool added twice is exported once. Only a
// Concurrent pool (mem.PoolConfig.Concurrent) can be read by the scrape's
// goroutine: a single-goroutine pool's accounting belongs to its owner
// goroutine, so AddPool ignores it and reports false.
func (m *Metrics) AddPool(p *mem.Pool) bool {
	if p == nil || !p.Concurrent() {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.pools {
		if q == p {
			return true
		}
	}
	m.pools = append(m.pools, p)
	return true
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Server is a running metrics endpoint (Listen).
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Listen serves Handler at /metrics on addr ("127.0.0.1:9090", ":0")
// until Close.
func (m *Metrics) Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server (waiting at most 5 s for scrapes in progress).
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
