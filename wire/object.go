package wire

import "github.com/cornflakes-go/cornflakes/runtime/wireimpl"

// Sizes describes a serialized object for serialize-and-send.
//
// Header+Copied bytes go into one contiguous TX buffer (the head); the
// ZeroCopy bytes are carried by Entries scatter-gather entries that follow
// the head on the wire, in the order Serialize reports them.
type Sizes struct {
	Header   int // bytes of header (bitmaps, field entries, list entries)
	Copied   int // bytes of fields copied into the head
	ZeroCopy int // bytes of fields sent zero-copy from registered memory
	Entries  int // number of zero-copy scatter-gather entries
}

// Head is the size of the contiguous part: header plus copied fields.
func (s Sizes) Head() int { return s.Header + s.Copied }

// Total is the size of the whole serialized object.
func (s Sizes) Total() int { return s.Header + s.Copied + s.ZeroCopy }

// EntrySink receives the zero-copy entries of an object during Serialize,
// in wire order. It is the interface
//
//	type EntrySink interface {
//		ZeroCopyEntry(b mem.Buf) error
//	}
//
// The Buf is borrowed for the duration of the call: a sink that needs the
// memory after ZeroCopyEntry returns (a datapath until the send completes)
// must Clone it and Release the clone later. A sink's error aborts Serialize.
//
// It is the runtime's interface type itself (an alias, not a type of its
// own), so that a sink reaches the generated code's runtime without an
// interface conversion per Serialize.
type EntrySink = wireimpl.EntrySink

// Object is a message that can be serialized and sent without an
// intermediate scatter-gather array or a flattening copy. Generated message
// types implement it; datapaths consume it (datapath.Endpoint.SendObject).
type Object interface {
	// Sizes reports the layout Serialize will produce. It is stable until
	// the object is modified.
	Sizes() Sizes
	// Serialize writes the header and the copied region into dst, which
	// must be exactly Sizes().Head() bytes, and passes each zero-copy entry
	// to sink in wire order. Serialize does not retain dst or sink.
	Serialize(dst []byte, sink EntrySink) error
}
