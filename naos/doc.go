// Package naos sends Go values over a network without serializing them,
// after Naos (Taranov et al., USENIX ATC'21): the sender traverses the
// value's object graph depth first and sends the objects' own memory, and
// the receiver allocates new objects of the same types, lands the bytes in
// them and recovers the pointers.
//
// # API
//
// Over a stream socket (TCP or Unix): NewConn wraps the connection;
// Conn.Send(v) sends v and everything reachable from it; Recv[T](conn)
// returns the next value as a T; Conn.SendAsync(v) returns a Handle
// (Wait, Test). Over the RPC transport (package rpc): Call, RequestValue
// and Respond; for any other transport, AppendEncode, EncodeBuf and
// Decode put one message in memory.
//
// # Types
//
// Booleans, integers, uintptr, floats, complex numbers, strings, arrays,
// slices, structs (unexported fields included: memory is sent as it is),
// pointers, maps (sent as an array of keys and an array of values) and
// interfaces holding concrete types registered on both sides (Register).
// Channels, functions and unsafe.Pointer are refused with an
// *UnsupportedError naming the field path. A plan per type (its
// pointer-free byte ranges, where its pointers, slices, strings, maps and
// interfaces sit) is compiled by reflection once and cached; a structural
// fingerprint of the type's layout (kinds, sizes, alignments, offsets,
// element types, architecture, byte order; not names) travels with every
// message and Recv[T] refuses another layout with a *MismatchError naming
// both types.
//
// # Lifetime rule
//
// A value is sent from the memory it lives in. Until Send returns, or the
// Handle of SendAsync completes, the caller must not modify the value or
// anything reachable from it (allocate, fill and swap instead): the kernel
// reads that memory while the send is in progress. The Conn keeps the
// value reachable for that time (the send list holds pointers to the
// start of every range it sends, and the value itself is referenced until
// the send completes); it relies on no property of the garbage collector
// beyond the one every system call on Go memory relies on, that heap
// objects do not move. On a stream, ranges of at most Options.Stage bytes
// (small objects and short strings) are copied into the Conn's staging
// buffer during the traversal and sent from there, consecutive ones as one
// range; larger ranges leave from their own memory. Received values are ordinary Go values, allocated
// by the receiver with their types (reflect), their pointers stored with
// typed writes so that write barriers stay in place. Objects an array of
// pointers points to are allocated together in one slab (as Naos' received
// objects are contiguous), and short strings share chunks: one live element
// keeps its slab or chunk reachable.
//
// # Untrusted input
//
// A receiver trusts no byte: the header's magic, version, flags and
// fingerprint, every length, pointer word, map size and interface type id
// is checked before anything is allocated or stored, allocations are
// bounded by Limits (and, when the sender states the message length, by
// it), and malformed input is an error wrapping ErrFormat. docs/NAOS.md
// describes the wire format, the limits and the measurements.
package naos
