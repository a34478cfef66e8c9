package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cornflakes-go/cornflakes/kv/internal/kvcodec"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// The store's typed service (kvpb.KV, declared in kv/kvpb/kv.proto): the
// Server registers it on its Nexus next to the raw request types, so that
// a ServiceClient calls it through the generated stubs and the
// goroutine-safe service.Client. Handlers run on the endpoint that
// received the call (dispatch mode); the store is safe for that.

// kvService implements kvpb.KVServer over the server's store.
type kvService struct {
	kvpb.UnimplementedKVServer
	s       *Server
	scratch sync.Pool // *svcScratch
	reqs    atomic.Uint64
	errs    atomic.Uint64
	denied  atomic.Uint64
}

type svcScratch struct {
	q   Query
	res Result
}

// registerService registers the typed service on the server's Nexus.
func (s *Server) registerService() error {
	srv, err := service.NewServer(s.nx)
	if err != nil {
		return err
	}
	s.svc = &kvService{s: s}
	s.svc.scratch.New = func() any { return new(svcScratch) }
	return kvpb.RegisterKVServer(srv, s.svc)
}

// exec decodes req as op, runs it on the store and fills resp as the raw
// path's Cornflakes codec does (values zero-copy from the store).
func (k *kvService) exec(op workload.Op, req *kvpb.Req, resp *kvpb.Resp) error {
	if k.s.cfg.Keys != nil && writes(op) {
		// A handler does not see the caller's credential: with Keys set,
		// writes go through the raw request types, which check the role.
		k.denied.Add(1)
		return service.Errorf(service.PermissionDenied, "kv: %v through the typed service with ServerConfig.Keys set", op)
	}
	k.reqs.Add(1)
	sc := k.scratch.Get().(*svcScratch)
	defer k.scratch.Put(sc)
	sc.q.reset(op)
	err := queryOfReq(req, &sc.q)
	if err == nil {
		err = k.s.store.Exec(&sc.q, &sc.res, k.s.eps[0].maxResp)
	} else {
		sc.res.set(workload.StatusError)
	}
	clear(sc.q.Keys)
	clear(sc.q.Vals)
	if err != nil {
		k.errs.Add(1)
	}
	resp.SetStatus(kvcodec.StatusToWire(sc.res.Status))
	if sc.res.Status == workload.StatusOK && op.IsRead() {
		if kvcodec.SingleValue(op) && len(sc.res.Vals) == 1 {
			resp.SetValBuf(sc.res.Vals[0])
		} else {
			l := resp.InitVals(len(sc.res.Vals))
			for _, b := range sc.res.Vals {
				l.AppendBuf(b)
			}
		}
	}
	sc.res.Release() // the response's arena holds its own references
	return nil
}

// queryOfReq appends a decoded request's keys and values to q (they alias
// the message's arena) and checks its counts and index: the one reading of
// a kvpb.Req, for the raw codec and the service alike.
func queryOfReq(m *kvpb.Req, q *Query) error {
	ks, err := m.GetKeys()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	vs, err := m.GetVals()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if ks.Len() > MaxKeys || vs.Len() > MaxKeys {
		return fmt.Errorf("%w: more than %d keys or values", ErrBadMessage, MaxKeys)
	}
	for i := 0; i < ks.Len(); i++ {
		q.Keys = append(q.Keys, ks.At(i))
	}
	for i := 0; i < vs.Len(); i++ {
		q.Vals = append(q.Vals, vs.At(i))
	}
	q.Index, err = checkIndex(m.GetIndex())
	return err
}

func (k *kvService) Get(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpGet, req, resp)
}
func (k *kvService) Put(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpPut, req, resp)
}
func (k *kvService) GetM(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpGetM, req, resp)
}
func (k *kvService) PutM(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpPutM, req, resp)
}
func (k *kvService) GetList(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpGetList, req, resp)
}
func (k *kvService) PutList(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpPutList, req, resp)
}
func (k *kvService) AppendToList(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpAppendToList, req, resp)
}
func (k *kvService) GetFromList(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpGetFromList, req, resp)
}
func (k *kvService) Delete(_ context.Context, req *kvpb.Req, resp *kvpb.Resp) error {
	return k.exec(workload.OpDelete, req, resp)
}

// ErrNotFound is returned by ServiceClient calls whose key (or list
// element) does not exist.
var ErrNotFound = errors.New("kv: not found")

// ServiceClient is the store's typed client: the generated stubs
// (kvpb.KVClient) over a service.Client on an endpoint of its own. Any
// number of goroutines may use it at once. Values it returns are messages
// of the caller's arena: valid until that arena's Reset.
type ServiceClient struct {
	cl *Client
	id uint8
	ep *rpc.Endpoint
	sc *service.Client
	KV *kvpb.KVClient // every method of the service, for what the helpers below do not cover
}

// DialService opens an endpoint on c's Nexus and a service.Client to the
// server's first endpoint (the typed service answers on every endpoint).
// Close it before c.
func (c *Client) DialService(ctx context.Context) (_ *ServiceClient, err error) {
	id, err := c.takeID()
	if err != nil {
		return nil, err
	}
	sc := &ServiceClient{cl: c, id: id}
	defer func() {
		if err != nil {
			_ = sc.Close()
		}
	}()
	dp, err := openDatapath(c.cfg.Datapath, c.cfg.Local, c.cfg.Memnet, c.cfg.XDP, nil, nil)
	if err != nil {
		return nil, err
	}
	ec := c.cfg.RPC
	ec.ID, ec.Datapath = id, dp
	if sc.ep, err = c.nx.NewEndpoint(ec); err != nil {
		_ = dp.Close()
		return nil, err
	}
	if sc.sc, err = service.Dial(ctx, sc.ep, c.cfg.Server, FirstEndpointID); err != nil {
		return nil, fmt.Errorf("kv: dial service: %w", err)
	}
	sc.KV = kvpb.NewKVClient(sc.sc)
	return sc, nil
}

// Close closes the service client and its endpoint.
func (s *ServiceClient) Close() error {
	var errs []error
	if s.sc != nil {
		errs = append(errs, s.sc.Close())
		s.sc = nil
	}
	if s.ep != nil {
		errs = append(errs, s.ep.Close())
		s.ep = nil
	}
	if s.id != 0 {
		s.cl.releaseID(s.id)
		s.id = 0
	}
	return errors.Join(errs...)
}

// check turns a response's status into an error.
func check(resp *kvpb.Resp, err error) (*kvpb.Resp, error) {
	if err != nil {
		return nil, err
	}
	st, err := kvcodec.StatusFromWire(resp.GetStatus())
	switch {
	case err != nil:
		return nil, err
	case st == workload.StatusNotFound:
		return nil, ErrNotFound
	case st != workload.StatusOK:
		return nil, ErrServer
	}
	return resp, nil
}

// Get returns key's value (a slice of a's memory, valid until a.Reset), or
// ErrNotFound.
func (s *ServiceClient) Get(ctx context.Context, a *wire.Arena, key []byte) ([]byte, error) {
	req := kvpb.NewReq(a)
	req.InitKeys(1).Append(key)
	resp, err := check(s.KV.Get(ctx, a, req))
	if err != nil {
		return nil, err
	}
	return resp.GetVal(), nil
}

// Put stores value under key (both are serialized before Put returns).
func (s *ServiceClient) Put(ctx context.Context, a *wire.Arena, key, value []byte) error {
	req := kvpb.NewReq(a)
	req.InitKeys(1).Append(key)
	req.InitVals(1).Append(value)
	_, err := check(s.KV.Put(ctx, a, req))
	return err
}

// Delete removes key, or returns ErrNotFound.
func (s *ServiceClient) Delete(ctx context.Context, a *wire.Arena, key []byte) error {
	req := kvpb.NewReq(a)
	req.InitKeys(1).Append(key)
	_, err := check(s.KV.Delete(ctx, a, req))
	return err
}

// AppendToList appends value to the list under key (creating it).
func (s *ServiceClient) AppendToList(ctx context.Context, a *wire.Arena, key, value []byte) error {
	req := kvpb.NewReq(a)
	req.InitKeys(1).Append(key)
	req.InitVals(1).Append(value)
	_, err := check(s.KV.AppendToList(ctx, a, req))
	return err
}

// GetList returns every element of the list under key (slices of a's
// memory, valid until a.Reset), or ErrNotFound.
func (s *ServiceClient) GetList(ctx context.Context, a *wire.Arena, key []byte) ([][]byte, error) {
	req := kvpb.NewReq(a)
	req.InitKeys(1).Append(key)
	resp, err := check(s.KV.GetList(ctx, a, req))
	if err != nil {
		return nil, err
	}
	l, err := resp.GetVals()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	out := make([][]byte, l.Len())
	for i := range out {
		out[i] = l.At(i)
	}
	return out, nil
}
