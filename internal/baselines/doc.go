// Package baselines holds the code generated for the microbenchmark schemas
// (internal/benchschema) by the baseline serializers that `cornflakes microbench` compares
// Cornflakes against:
//
//   - pb: protoc-gen-go (protobuf-go) and protoc-gen-go-vtproto (vtprotobuf) from bench.proto;
//   - fb: flatc --go (FlatBuffers) from bench.fbs;
//   - capnpb: capnpc-go (Cap'n Proto, capnproto.org/go/capnp/v3 v3.1.0-alpha.1) from bench.capnp.
//
// The code is committed; scripts/gen-baselines.sh regenerates it and TestGeneratedUpToDate fails
// when it is stale (and is skipped when the tools are missing). The codecs that drive these
// libraries through their fastest documented APIs, shared by `cornflakes microbench` and
// `cornflakes echo`, live in package internal/baselines/codec; see docs/BASELINES.md.
package baselines
