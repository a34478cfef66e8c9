// Package wire is the application API of Cornflakes serialization: hybrid
// zero-copy serialization (Cornflakes, SOSP'23 §3) over registered memory
// (package mem). Generated message types (docs/CODEGEN.md) are built in an
// Arena, hold their repeated fields in the list types of this package, and
// are Objects that datapaths send; the machinery that generated code runs
// on is package runtime/wireimpl, which applications do not use.
//
// # Building and sending
//
// Messages live in an Arena (NewFoo(arena)); the arena holds every copied
// byte, message struct, list array and mem.Buf reference of a batch, and
// Reset ends the batch in one step, releasing every reference. A bytes or
// string field decides at assignment whether to copy or to reference its
// value: shorter than the arena's Threshold → copied into the arena;
// otherwise, if mem.Recover finds it in registered memory → held zero-copy
// with a reference; otherwise copied. Threshold 0 zero-copies everything
// registered; CopyAll copies everything.
//
// A message is an Object: Sizes gives the header, copied and zero-copy
// sizes; Serialize writes the header and copied values into one buffer and
// hands each zero-copy value to an EntrySink (a datapath posts it as a
// scatter-gather entry). SerializeSGA builds a reusable scatter-gather
// array (the HotOS API) and Flatten one contiguous buffer.
//
// # Decoding
//
// Decode (from a mem.Buf) and DecodeBytes (from a []byte) are zero-copy and
// lazy: fields alias the input, which the arena keeps alive (a reference,
// when the input is registered memory) until Reset; lists and nested
// messages are decoded on first access (plain nested messages with their
// parent). Every offset and size is bounds-checked, counts are bounded by
// the input, nesting by MaxDepth; malformed input gives a *DecodeError
// (errors.Is(err, ErrMalformed)), never a panic. Strings are checked for
// UTF-8 when read.
//
// # Lifetimes
//
// Every slice or string a getter returns aliases arena memory, registered
// memory or the decoded input, and is valid until the arena's Reset. Do not
// modify it. To keep a value longer, copy it, or Clone the message.
//
// The format is specified byte by byte in docs/WIRE_FORMAT.md.
package wire
