package naos

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sync"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// Messages in memory, for transports that take a buffer (the RPC
// transport, datagrams): the same format as on a stream, with the send
// list copied into one buffer (the one copy a kernel socket would make).

var decoders = sync.Pool{New: func() any { return new(decoder) }}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// encodeWith traverses v and calls fill with the message size; fill
// returns the buffer the message is copied into.
func encodeWith(v any, opts Options, alloc func(n int) ([]byte, error)) error {
	if v == nil {
		return fmt.Errorf("naos: Encode(nil)")
	}
	rv := reflect.ValueOf(v)
	p, err := planOf(rv.Type())
	if err != nil {
		return err
	}
	root := reflect.New(rv.Type())
	root.Elem().Set(rv)
	e := encoders.Get().(*encoder)
	defer func() { e.reset(); encoders.Put(e) }()
	*e = encoder{iov: e.iov[:0], stack: e.stack[:0], keep: e.keep[:0], st: stager{blocks: e.st.blocks}}
	// No coalescing: each range is copied from its own object. Small
	// ranges are staged (one copy into the staging blocks, then a few
	// large copies into dst) rather than listed one iovec each.
	ne := newEncoder(opts, false)
	e.sharing, e.compact, e.coalesce, e.dense, e.maxBytes, e.seen, e.st.max = ne.sharing, ne.compact, ne.coalesce, ne.dense, ne.maxBytes, ne.seen, ne.st.max
	if err := e.traverse(root.UnsafePointer(), p); err != nil {
		return err
	}
	h := e.header(p, uint64(e.total))
	dst, err := alloc(len(h) + int(e.total))
	if err != nil {
		return err
	}
	o := copy(dst, h)
	for _, r := range e.iov {
		o += copy(dst[o:], unsafe.Slice((*byte)(r.base), r.n))
	}
	return nil
}

// AppendEncode appends the message holding v (and everything reachable
// from it) to dst.
func AppendEncode(dst []byte, v any, opts Options) ([]byte, error) {
	err := encodeWith(v, opts, func(n int) ([]byte, error) {
		dst = append(dst, make([]byte, n)...)
		return dst[len(dst)-n:], nil
	})
	return dst, err
}

// EncodeBuf encodes v into a buffer of pool (registered memory), which
// the caller owns. The pool must be usable from this goroutine.
func EncodeBuf(pool *mem.Pool, v any, opts Options) (mem.Buf, error) {
	var b mem.Buf
	err := encodeWith(v, opts, func(n int) ([]byte, error) {
		var err error
		b, err = pool.Alloc(n)
		if err != nil {
			return nil, fmt.Errorf("naos: %w", err)
		}
		return b.Bytes(), nil
	})
	return b, err
}

// Decode recovers the value of type T from one whole message in msg,
// with the same checks as Recv; bytes after the message are an error.
// The value does not alias msg.
func Decode[T any](msg []byte, lim Limits) (T, error) {
	var v T
	p, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return v, err
	}
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	r := &d.own
	*r = reader{buf: msg, w: len(msg)}
	d.r, d.lim = r, lim.withDefaults()
	defer func() { r.buf, d.r = nil, nil }()
	if err := d.decode(unsafe.Pointer(&v), p); err != nil {
		if err == io.EOF {
			err = formatErr("empty message")
		}
		var zero T
		return zero, err
	}
	if r.r != r.w {
		var zero T
		return zero, formatErr("%d bytes after the message", r.w-r.r)
	}
	return v, nil
}

// Call sends req as a request of type reqType on session s of the RPC
// endpoint ep (encoded into ep's pool) and decodes the response as a T.
// It has rpc.Endpoint.Call's rules (the endpoint's goroutine, ctx).
func Call[T any](ctx context.Context, ep *rpc.Endpoint, s rpc.Session, reqType uint8, req any, opts Options) (T, error) {
	var zero T
	b, err := EncodeBuf(ep.Pool(), req, opts)
	if err != nil {
		return zero, err
	}
	resp, err := ep.Call(ctx, s, reqType, rpc.BufMsg(b))
	if err != nil {
		return zero, err
	}
	defer resp.Release()
	return Decode[T](resp.Bytes(), opts.Limits)
}

// RequestValue decodes the body of an RPC request as a T.
func RequestValue[T any](r *rpc.Request, lim Limits) (T, error) {
	return Decode[T](r.Data(), lim)
}

// Respond answers r with the message holding v, encoded into the pool of
// r's endpoint (call it on the goroutine that runs the handler).
func Respond(r *rpc.Request, v any, opts Options) error {
	b, err := EncodeBuf(r.Endpoint().Pool(), v, opts)
	if err != nil {
		return err
	}
	return r.Respond(rpc.BufMsg(b))
}
