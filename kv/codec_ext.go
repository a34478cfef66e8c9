package kv

import (
	"fmt"
	"sync"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Body is an encoded message as a WireCodec produces it: exactly one of a
// Cornflakes object (serialized into the packet by the RPC layer), a
// registered buffer (sent zero-copy; the RPC layer takes over its
// reference) or bytes in the codec's own memory (copied into a packet
// buffer), valid until the codec's Done.
type Body struct {
	Obj   wire.Object
	Buf   mem.Buf
	Bytes []byte
}

// WireCodec is a serializer of the store's messages implemented outside
// this package (kv/kvbench's baselines: protobuf, vtprotobuf, FlatBuffers,
// Cap'n Proto). One value is used by one goroutine (a server endpoint or a
// client connection); every method's results stay valid until Done, which
// ends one message. Decoders must reject malformed input with an error
// wrapping ErrBadMessage (never a panic) and check MaxKeys and MaxListLen.
type WireCodec interface {
	// EncodeRequest serializes req (client side).
	EncodeRequest(req *workload.Request, pool *mem.Pool) (Body, error)
	// DecodeResponse decodes a response body into resp, whose Values
	// alias p or codec scratch until Done.
	DecodeResponse(op workload.Op, p []byte, resp *workload.Response) error
	// DecodeRequest decodes a request body into q (server side); q's
	// slices alias p or codec scratch until Done.
	DecodeRequest(op workload.Op, p []byte, q *Query) error
	// EncodeResponse serializes the answer (server side); res.Vals are
	// borrowed until Done.
	EncodeResponse(op workload.Op, res *Result, pool *mem.Pool) (Body, error)
	// Done ends one message: scratch and arenas are reset.
	Done()
}

var codecReg struct {
	sync.RWMutex
	f [numCodecs]func() WireCodec
}

// RegisterCodec makes codec c (a baseline: CodecProtobuf, CodecVTProtobuf,
// CodecFlatBuffers or CodecCapnp) available to servers and clients of this
// process; newCodec returns a fresh codec state. It is called from the init
// function of the package implementing c (kv/kvbench), and panics when c is
// not a baseline codec or is registered twice (a programming error).
func RegisterCodec(c Codec, newCodec func() WireCodec) {
	if c.valid() != nil || c.Serializer() == SerCornflakes || newCodec == nil {
		panic(fmt.Sprintf("kv: RegisterCodec(%s): not a baseline codec", c))
	}
	codecReg.Lock()
	defer codecReg.Unlock()
	if codecReg.f[c] != nil {
		panic(fmt.Sprintf("kv: RegisterCodec(%s): registered twice", c))
	}
	codecReg.f[c] = newCodec
}

// registered returns c's registered constructor, or nil.
func registered(c Codec) func() WireCodec {
	codecReg.RLock()
	defer codecReg.RUnlock()
	return codecReg.f[c]
}

// extCodec adapts a WireCodec to the package's codec interface.
type extCodec struct{ c WireCodec }

func fromBody(b Body) body { return body{obj: b.Obj, buf: b.Buf, bytes: b.Bytes} }

func (e extCodec) encodeRequest(req *workload.Request, pool *mem.Pool) (body, error) {
	b, err := e.c.EncodeRequest(req, pool)
	return fromBody(b), err
}

func (e extCodec) decodeResponse(op workload.Op, p []byte, resp *workload.Response) error {
	return e.c.DecodeResponse(op, p, resp)
}

func (e extCodec) decodeRequest(op workload.Op, p []byte, q *Query) error {
	return e.c.DecodeRequest(op, p, q)
}

func (e extCodec) encodeResponse(op workload.Op, res *Result, pool *mem.Pool) (body, error) {
	b, err := e.c.EncodeResponse(op, res, pool)
	return fromBody(b), err
}

func (e extCodec) done() { e.c.Done() }
