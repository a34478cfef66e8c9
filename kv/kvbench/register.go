// Package kvbench holds what the key-value store's benchmarks add to kv:
// the baseline serializers (protobuf, vtprotobuf, FlatBuffers, Cap'n
// Proto), registered with kv.RegisterCodec when this package is imported,
// so that a program importing only kv builds none of them.
package kvbench

import "github.com/cornflakes-go/cornflakes/kv"

func init() {
	kv.RegisterCodec(kv.CodecProtobuf, func() kv.WireCodec { return newPBCodec(false) })
	kv.RegisterCodec(kv.CodecVTProtobuf, func() kv.WireCodec { return newPBCodec(true) })
	kv.RegisterCodec(kv.CodecFlatBuffers, func() kv.WireCodec { return newFBCodec() })
	kv.RegisterCodec(kv.CodecCapnp, func() kv.WireCodec { return newCapnpCodec() })
}
