package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The two RPC request types this package occupies on a Nexus: every
// method of every service registered on a Server shares them (methods are
// told apart by the service header's method handle, assigned at bind
// time). Other request types stay free for plain rpc handlers.
const (
	// ReqTypeDispatch carries binds, cancellations and calls of methods
	// served in the endpoint's loop (rpc.Dispatch).
	ReqTypeDispatch uint8 = 0xCE
	// ReqTypeWorker carries calls of methods served on the Nexus's worker
	// pool (rpc.Worker).
	ReqTypeWorker uint8 = 0xCF
)

// MethodInfo describes the method an interceptor sees.
type MethodInfo struct {
	FullMethod string // "/helloworld.Greeter/SayHello"
	Service    *ServiceDesc
	Method     int // index in Service.Methods
}

// UnaryHandler runs a method (the next interceptor, or the method itself).
type UnaryHandler func(ctx context.Context, req, resp any) error

// UnaryServerInterceptor wraps every method a Server runs: it may inspect
// ctx (IncomingMetadata), req and resp (the generated message pointers),
// call handler or refuse with an error.
type UnaryServerInterceptor func(ctx context.Context, req, resp any, info *MethodInfo, handler UnaryHandler) error

// ServerOption configures a Server.
type ServerOption func(*Server)

// WithServerInterceptor installs interceptors, run in the order given
// (the first one outermost).
func WithServerInterceptor(ics ...UnaryServerInterceptor) ServerOption {
	return func(s *Server) { s.icList = append(s.icList, ics...); s.ic = chainServer(s.icList) }
}

func chainServer(ics []UnaryServerInterceptor) UnaryServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(ctx context.Context, req, resp any, info *MethodInfo, h UnaryHandler) error {
		var next func(i int) UnaryHandler
		next = func(i int) UnaryHandler {
			if i == len(ics) {
				return h
			}
			return func(ctx context.Context, req, resp any) error { return ics[i](ctx, req, resp, info, next(i+1)) }
		}
		return next(0)(ctx, req, resp)
	}
}

// RegisterOption configures how RegisterService serves a service.
type RegisterOption func(*regOpts)

type regOpts struct {
	mode    rpc.Mode
	methods map[string]rpc.Mode
}

// WithMode serves every method of the service in mode m: rpc.Dispatch
// (the default: in the endpoint's loop, the request decoded zero-copy
// from the receive buffer; the handler must be short) or rpc.Worker (on
// the Nexus's worker pool; see rpc.Worker for the memory rules).
func WithMode(m rpc.Mode) RegisterOption { return func(o *regOpts) { o.mode = m } }

// WithMethodMode serves the named method (its name in the service block,
// "SayHello") in mode m, overriding WithMode.
func WithMethodMode(method string, m rpc.Mode) RegisterOption {
	return func(o *regOpts) {
		if o.methods == nil {
			o.methods = map[string]rpc.Mode{}
		}
		o.methods[method] = m
	}
}

// Server serves the services registered on it over every endpoint of one
// Nexus. It is safe for concurrent use.
type Server struct {
	nx     *rpc.Nexus
	ic     UnaryServerInterceptor
	icList []UnaryServerInterceptor
	obs    Observer

	mu         sync.Mutex
	byName     map[string]uint32
	methods    atomic.Pointer[[]*method]
	workerOnce sync.Once
	workerErr  error

	inflight inflight // worker-mode calls a client may cancel
	calls    sync.Pool
	// loopCalls keeps, per endpoint id, the serverCall of the endpoint's
	// dispatch-mode requests: they run one at a time on the endpoint's
	// loop, so the next one takes it back without a sync.Pool round trip.
	loopCalls [256]loopCall
	resetErrs atomic.Int64 // Reset errors of call arenas (resetArena)
}

type method struct {
	info     MethodInfo
	desc     *MethodDesc
	impl     any
	mode     rpc.Mode
	schema   *methodSchema
	fp       uint64
	mu       sync.Mutex
	accepted atomic.Pointer[[]uint64] // client fingerprints bound as compatible
	// bigResp: a response of the method did not fit serverCall.respond's
	// fused path (too large, or zero-copy entries); it is not tried again.
	bigResp atomic.Bool
	// direct serves the method's calls on handle's common path: the
	// MethodDesc's Direct bound to impl (rpc.Dispatch mode, a Server
	// without interceptors or Observer); nil otherwise.
	direct MethodDirect
	// wflat writes a flat response of direct in place (MethodDesc.WriteResponse, tried
	// first by serverCall.WriteInline); nil: none.
	wflat  func(DirectResponse, []byte) int
	handle uint32 // the method's index in Server.methods (serverCall.keepFor)
}

// maxAccepted bounds the distinct compatible client versions a method
// remembers; beyond it, binds of further versions are refused
// (ResourceExhausted) rather than growing without bound.
const maxAccepted = 64

func (m *method) accepts(fp uint64) bool {
	if p := m.accepted.Load(); p != nil {
		for _, x := range *p {
			if x == fp {
				return true
			}
		}
	}
	return false
}

func (m *method) accept(fp uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur []uint64
	if p := m.accepted.Load(); p != nil {
		cur = *p
	}
	for _, x := range cur {
		if x == fp {
			return true
		}
	}
	if len(cur) >= maxAccepted {
		return false
	}
	next := append(append([]uint64(nil), cur...), fp)
	m.accepted.Store(&next)
	return true
}

type inflightKey struct {
	ep   *rpc.Endpoint
	sess rpc.Session
	id   uint64
}

// NewServer makes a Server on nx: it registers the handler of
// ReqTypeDispatch now, and that of ReqTypeWorker when a method is first
// registered in rpc.Worker mode.
func NewServer(nx *rpc.Nexus, opts ...ServerOption) (*Server, error) {
	s := &Server{nx: nx, byName: map[string]uint32{}}
	for _, o := range opts {
		o(s)
	}
	s.methods.Store(new([]*method)) // never nil: the dispatch handler does not test it
	s.calls.New = func() any {
		sc := &serverCall{arena: *wire.NewArena()}
		sc.a, sc.ctx, sc.keep = &sc.arena, &sc.ctx0, sc.keep0[:]
		// serveDirect's deferred panic guard: the runtime's recover is
		// called only when the call did not return (guarded still set).
		sc.guard = func() {
			if sc.guarded {
				if p := recover(); p != nil {
					s.directPanic(sc, p)
				}
			}
		}
		return sc
	}
	if err := nx.RegisterLoop(ReqTypeDispatch, s.dispatchHandler(), s.dispatchPanic); err != nil {
		return nil, err
	}
	return s, nil
}

// ErrDuplicate: RegisterService of a method already registered.
var ErrDuplicate = errors.New("service: method already registered")

// RegisterService registers impl, which must implement d's server
// interface, to serve d's methods. Generated Register<Service>Server
// functions call it. Services and methods may be registered at any time;
// registering a method twice is ErrDuplicate.
func (s *Server) RegisterService(d *ServiceDesc, impl any, opts ...RegisterOption) error {
	if err := d.check(); err != nil {
		return err
	}
	if d.HandlerType != nil {
		ht := reflect.TypeOf(d.HandlerType).Elem()
		if impl == nil || !reflect.TypeOf(impl).Implements(ht) {
			return fmt.Errorf("service: RegisterService(%s): %T does not implement %v", d.Name, impl, ht)
		}
	}
	var o regOpts
	for _, f := range opts {
		f(&o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur []*method
	if p := s.methods.Load(); p != nil {
		cur = *p
	}
	next := append([]*method(nil), cur...)
	for i := range d.Methods {
		name := d.FullMethod(i)
		if _, dup := s.byName[name]; dup {
			return fmt.Errorf("%w: %s", ErrDuplicate, name)
		}
		mode := o.mode
		if m, ok := o.methods[d.Methods[i].Name]; ok {
			mode = m
		}
		if mode == rpc.Worker {
			s.workerOnce.Do(func() { s.workerErr = s.nx.Register(ReqTypeWorker, rpc.Worker, s.serve) })
			if s.workerErr != nil {
				return s.workerErr
			}
		}
		var direct MethodDirect
		if bind := d.Methods[i].Direct; bind != nil && mode == rpc.Dispatch && s.ic == nil && s.obs == nil {
			direct = bind(impl) // nil when impl does not implement the server interface
		}
		next = append(next, &method{info: MethodInfo{FullMethod: name, Service: d, Method: i}, desc: &d.Methods[i],
			impl: impl, mode: mode, schema: schemaOf(d, i), fp: d.Methods[i].Fingerprint, direct: direct,
			wflat: d.Methods[i].WriteResponse, handle: uint32(len(next))})
	}
	for i := len(cur); i < len(next); i++ {
		s.byName[next[i].info.FullMethod] = uint32(i)
	}
	s.methods.Store(&next)
	return nil
}

// bind answers a bind request: the method's handle and mode if the
// client's schema is identical or compatible, an error otherwise.
func (s *Server) bind(r *rpc.Request, sc *serverCall, body []byte) {
	cs, err := parseSchema(body, sc.h.fp)
	if err != nil {
		s.fail(r, sc, &Error{Code: InvalidArgument, Message: err.Error()})
		return
	}
	s.mu.Lock()
	idx, ok := s.byName[cs.name]
	s.mu.Unlock()
	if !ok {
		s.fail(r, sc, &Error{Code: Unimplemented, Message: "method " + cs.name + " is not implemented by the server"})
		return
	}
	m := (*s.methods.Load())[idx]
	match := byte(0)
	if cs.fp != m.fp {
		if err := compatible(cs, m.schema); err != nil {
			s.fail(r, sc, &Error{Code: FailedPrecondition, Message: err.Error(), Details: []byte(incompatibleDetail)})
			return
		}
		if !m.accept(cs.fp) {
			s.fail(r, sc, &Error{Code: ResourceExhausted, Message: fmt.Sprintf("method %s: more than %d client versions", cs.name, maxAccepted)})
			return
		}
		match = 1
	}
	b := appendRespOK(sc.buf[:0])
	b = binary.LittleEndian.AppendUint32(b, idx)
	b = append(b, byte(m.mode), match, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, m.fp)
	sc.buf = b
	_ = r.RespondBytes(b)
}

// ---- contexts ----

type mdKey struct{}
type outMDKey struct{}
type infoKey struct{}

// IncomingMetadata returns the metadata the client sent with the call
// whose handler ctx is (nil if none). The pairs are the handler's to keep.
func IncomingMetadata(ctx context.Context) Metadata {
	if p, ok := ctx.Value(mdKey{}).(*Metadata); ok {
		return *p
	}
	return nil
}

// MethodFromContext returns the method a handler's ctx belongs to.
func MethodFromContext(ctx context.Context) (*MethodInfo, bool) {
	m, ok := ctx.Value(infoKey{}).(*MethodInfo)
	return m, ok
}

// WithMetadata returns a context whose calls carry md (replacing any
// metadata ctx already carries). md must respect the limits (Metadata);
// a call with metadata beyond them fails with ErrBadHeader.
func WithMetadata(ctx context.Context, md Metadata) context.Context {
	return context.WithValue(ctx, outMDKey{}, md)
}
