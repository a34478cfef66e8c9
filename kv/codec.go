package kv

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/kv/internal/kvcodec"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Serializer names (the bench package's names plus vtprotobuf).
const (
	SerCornflakes  = "cornflakes"
	SerProtobuf    = "protobuf"
	SerVTProtobuf  = "vtprotobuf"
	SerFlatBuffers = "flatbuffers"
	SerCapnp       = "capnp"
)

// Cornflakes modes: the copy threshold of the arena that builds responses.
const (
	ModeHybrid   = "hybrid"   // values of at least 512 B zero-copy, smaller ones copied
	ModeCopy     = "copy"     // everything copied into the packet
	ModeZeroCopy = "zerocopy" // every value zero-copy
)

// Serializers lists every serializer the server speaks.
var Serializers = []string{SerCornflakes, SerProtobuf, SerVTProtobuf, SerFlatBuffers, SerCapnp}

// Errors of this package.
var (
	// ErrUnknownSerializer: a serializer or mode name is not known.
	ErrUnknownSerializer = errors.New("kv: unknown serializer")
	// ErrBadMessage: a request or response body does not decode.
	ErrBadMessage = kvcodec.ErrBadMessage
	// ErrServer: the server answered a request with an error status.
	ErrServer = errors.New("kv: server error")
)

// Codec identifies a serializer configuration. The RPC request type of a
// request is Codec<<4 | op, so one server answers every serializer at once
// and a client picks one per connection.
type Codec uint8

// The codecs.
const (
	codecInvalid Codec = iota
	CodecCFHybrid
	CodecCFCopy
	CodecCFZeroCopy
	CodecCFHybridFlat // serialize-and-send off: Flatten into one buffer, then send (Table 5)
	CodecCFCopyFlat
	CodecCFZeroCopyFlat
	CodecProtobuf
	CodecVTProtobuf
	CodecFlatBuffers
	CodecCapnp
	numCodecs
)

// AllCodecs lists every codec linked into the program: the Cornflakes
// codecs, and the baselines when kv/kvbench (which registers them with
// RegisterCodec) is imported.
func AllCodecs() []Codec {
	var cs []Codec
	for c := CodecCFHybrid; c < numCodecs; c++ {
		if c.Serializer() == SerCornflakes || registered(c) != nil {
			cs = append(cs, c)
		}
	}
	return cs
}

// LookupCodec maps a serializer, a Cornflakes mode ("" = hybrid) and
// serialize-and-send to a codec.
func LookupCodec(serializer, mode string, serializeAndSend bool) (Codec, error) {
	switch serializer {
	case SerCornflakes:
		var c Codec
		switch mode {
		case "", ModeHybrid:
			c = CodecCFHybrid
		case ModeCopy:
			c = CodecCFCopy
		case ModeZeroCopy:
			c = CodecCFZeroCopy
		default:
			return 0, fmt.Errorf("%w: cornflakes mode %q (hybrid, copy, zerocopy)", ErrUnknownSerializer, mode)
		}
		if !serializeAndSend {
			c += CodecCFHybridFlat - CodecCFHybrid
		}
		return c, nil
	case SerProtobuf:
		return CodecProtobuf, nil
	case SerVTProtobuf:
		return CodecVTProtobuf, nil
	case SerFlatBuffers:
		return CodecFlatBuffers, nil
	case SerCapnp:
		return CodecCapnp, nil
	}
	return 0, fmt.Errorf("%w %q (have %s)", ErrUnknownSerializer, serializer, strings.Join(Serializers, ", "))
}

// Serializer is the serializer name of c.
func (c Codec) Serializer() string {
	switch c {
	case CodecProtobuf:
		return SerProtobuf
	case CodecVTProtobuf:
		return SerVTProtobuf
	case CodecFlatBuffers:
		return SerFlatBuffers
	case CodecCapnp:
		return SerCapnp
	}
	return SerCornflakes
}

// String names c, e.g. "cornflakes/hybrid" or "cornflakes/hybrid/flat".
func (c Codec) String() string {
	switch c {
	case CodecCFHybrid:
		return "cornflakes/hybrid"
	case CodecCFCopy:
		return "cornflakes/copy"
	case CodecCFZeroCopy:
		return "cornflakes/zerocopy"
	case CodecCFHybridFlat:
		return "cornflakes/hybrid/flat"
	case CodecCFCopyFlat:
		return "cornflakes/copy/flat"
	case CodecCFZeroCopyFlat:
		return "cornflakes/zerocopy/flat"
	case codecInvalid:
		return "invalid"
	}
	if c < numCodecs {
		return c.Serializer()
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// ReqType is the RPC request type of op under codec c.
func ReqType(c Codec, op workload.Op) uint8 { return uint8(c)<<4 | uint8(op) }

// splitType is the inverse of ReqType.
func splitType(t uint8) (Codec, workload.Op) { return Codec(t >> 4), workload.Op(t & 15) }

// threshold is the arena copy threshold of a Cornflakes codec.
func (c Codec) threshold() int {
	switch c {
	case CodecCFCopy, CodecCFCopyFlat:
		return wire.CopyAll
	case CodecCFZeroCopy, CodecCFZeroCopyFlat:
		return 0
	}
	return wire.DefaultThreshold
}

// valid returns an error wrapping ErrUnknownSerializer when c is not a codec.
func (c Codec) valid() error {
	if c == codecInvalid || c >= numCodecs {
		return fmt.Errorf("%w: codec %d", ErrUnknownSerializer, c)
	}
	return nil
}

// hybrid reports whether c is a hybrid Cornflakes codec, whose copy
// threshold follows the datapath.
func (c Codec) hybrid() bool { return c == CodecCFHybrid || c == CodecCFHybridFlat }

// newCodecOn returns c's codec for an endpoint on dp: a hybrid Cornflakes
// codec copies fields below threshold, or below dp's calibrated hybrid
// threshold when threshold is 0 (the paper calibrates it per datapath: 512
// bytes where a NIC gathers, all sizes up to 16 KB on kernel UDP).
func newCodecOn(c Codec, dp datapath.Endpoint, threshold int) (codec, error) {
	cd, err := newCodec(c)
	if err != nil || !c.hybrid() {
		return cd, err
	}
	if threshold <= 0 {
		threshold = datapath.HybridThreshold(dp)
	}
	cd.(*cfCodec).a.Threshold = threshold
	return cd, nil
}

// codec is one serializer's encoder/decoder state, used by one goroutine
// (a server endpoint or a client connection).
type codec interface {
	// encodeRequest serializes req (client side). The returned message is
	// consumed by Enqueue; done() is called after it.
	encodeRequest(req *workload.Request, pool *mem.Pool) (body, error)
	// decodeResponse decodes a response body into resp, whose Values alias
	// p (or codec scratch) until done().
	decodeResponse(op workload.Op, p []byte, resp *workload.Response) error
	// decodeRequest decodes a request body into q (server side); q's slices
	// alias p or codec scratch until done().
	decodeRequest(op workload.Op, p []byte, q *Query) error
	// encodeResponse serializes the answer (server side). res.Vals are
	// borrowed; the message is consumed by Respond and done() follows.
	encodeResponse(op workload.Op, res *Result, pool *mem.Pool) (body, error)
	// done ends one message: scratch and arenas are reset.
	done()
}

// segDecoder is a codec that decodes a response received in place
// (rpc.Response.Segments) without gathering it: Cornflakes, whose decoder
// aliases zero-copy fields in the sender's segments. Other codecs read
// rpc.Response.Data, the gathered copy.
type segDecoder interface {
	decodeResponseSegs(op workload.Op, segs [][]byte, hold mem.Buf, resp *workload.Response) error
}

func newCodec(c Codec) (codec, error) {
	switch c {
	case CodecCFHybrid, CodecCFCopy, CodecCFZeroCopy:
		return newCFCodec(c.threshold(), true), nil
	case CodecCFHybridFlat, CodecCFCopyFlat, CodecCFZeroCopyFlat:
		return newCFCodec(c.threshold(), false), nil
	}
	if c.valid() == nil {
		if f := registered(c); f != nil {
			return extCodec{f()}, nil
		}
		return nil, fmt.Errorf("%w: %s is not linked into this program (import kv/kvbench, which registers the baselines)", ErrUnknownSerializer, c)
	}
	return nil, fmt.Errorf("%w: codec %d", ErrUnknownSerializer, c)
}

// singleValue reports whether op answers with exactly one value (the
// response's val field) rather than a list (vals).
func singleValue(op workload.Op) bool { return kvcodec.SingleValue(op) }

func statusToWire(s workload.Status) uint32 { return kvcodec.StatusToWire(s) }

func statusFromWire(s uint32) (workload.Status, error) { return kvcodec.StatusFromWire(s) }

// body is an encoded message as a codec produces it: a Cornflakes object
// (serialize-and-send), a registered buffer (sent zero-copy) or bytes in
// the library's own memory (copied into a packet buffer by the RPC layer).
type body struct {
	obj   wire.Object
	buf   mem.Buf
	bytes []byte
}

// msg hands the body to the RPC layer (which consumes it).
func (b body) msg() rpc.Msg {
	switch {
	case b.obj != nil:
		return rpc.ObjectMsg(b.obj)
	case !b.buf.IsZero():
		return rpc.BufMsg(b.buf)
	}
	return rpc.BytesMsg(b.bytes)
}

// appendTo appends the body's bytes to dst and releases its buffer (tests,
// fuzz seeds).
func (b body) appendTo(dst []byte) ([]byte, error) {
	switch {
	case b.obj != nil:
		return wire.Flatten(b.obj, dst)
	case !b.buf.IsZero():
		dst = append(dst, b.buf.Bytes()...)
		return dst, b.buf.Release()
	}
	return append(dst, b.bytes...), nil
}

// allocMsg returns a registered buffer of exactly n bytes from pool.
func allocMsg(pool *mem.Pool, n int) (mem.Buf, error) { return kvcodec.AllocMsg(pool, n) }

// checkIndex converts a wire list index.
func checkIndex(i uint32) (int, error) { return kvcodec.CheckIndex(i, MaxListLen) }
