package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/rpc"
)

// binding is what a Client keeps of one method after binding it on its
// first call: the server's handle and request type, the fingerprint the
// server checked, and the interceptor chain.
type binding struct {
	key     *MethodDesc
	handle  uint32
	reqType uint8
	fp      uint64
	info    MethodInfo
	ic      UnaryClientInterceptor // the chain, bound to this method
}

// isRebind reports the server's request to bind again.
func isRebind(err error) bool {
	var se *Error
	return errors.As(err, &se) && se.Code == FailedPrecondition && string(se.Details) == rebindDetail
}

// bind returns method i's binding, binding it on first use.
func (c *Client) bind(ctx context.Context, d *ServiceDesc, i int) (*binding, error) {
	key := &d.Methods[i]
	if b := c.lookup(key); b != nil {
		return b, nil
	}
	m := &d.Methods[i]
	pre := &binding{reqType: ReqTypeDispatch, fp: m.Fingerprint}
	body := schemaOf(d, i).encode(nil)
	resp, err := c.roundTrip(ctx, pre, kindBind, nil, nil, body)
	if err != nil {
		var se *Error
		if errors.As(err, &se) && se.Code == FailedPrecondition && string(se.Details) == incompatibleDetail {
			return nil, fmt.Errorf("%w: %w", ErrIncompatible, se)
		}
		return nil, err
	}
	return c.storeBinding(d, i, resp)
}

// lookup returns the binding of the method key, nil if it is not bound.
func (c *Client) lookup(key *MethodDesc) *binding {
	if b := c.last.Load(); b != nil && b.key == key {
		return b
	}
	return c.lookupSlow(key)
}

// lookupSlow is lookup through the map (the method is not the last one used).
func (c *Client) lookupSlow(key *MethodDesc) *binding {
	if v, ok := c.binds.Load(key); ok {
		b := v.(*binding)
		c.last.Store(b)
		return b
	}
	return nil
}

// unbind forgets the binding of the method key (the server asked to bind
// again).
func (c *Client) unbind(key *MethodDesc) {
	c.binds.Delete(key)
	if b := c.last.Load(); b != nil && b.key == key {
		c.last.CompareAndSwap(b, nil)
	}
}

// storeBinding makes method i's binding from the body of the server's
// answer to its bind and stores it (a binding stored meanwhile wins).
func (c *Client) storeBinding(d *ServiceDesc, i int, resp []byte) (*binding, error) {
	key, m := &d.Methods[i], &d.Methods[i]
	if len(resp) < 16 {
		return nil, fmt.Errorf("%w: bind response of %d bytes", ErrBadHeader, len(resp))
	}
	b := &binding{key: key, handle: binary.LittleEndian.Uint32(resp), reqType: ReqTypeDispatch, fp: m.Fingerprint,
		info: MethodInfo{FullMethod: d.FullMethod(i), Service: d, Method: i}}
	if rpc.Mode(resp[4]) == rpc.Worker {
		b.reqType = ReqTypeWorker
	}
	if len(c.ics) > 0 {
		b.ic = chainClient(c.ics)
	}
	v, _ := c.binds.LoadOrStore(key, b)
	return v.(*binding), nil
}
