package wireimpl

import "github.com/cornflakes-go/cornflakes/mem"

// Sizes is the runtime's form of wire.Sizes (the same fields, so a
// generated Sizes method converts it for free).
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

// EntrySink receives the zero-copy entries of a message during
// serialization, in wire order (wire.EntrySink is this type). The Buf is
// borrowed for the duration of the call.
type EntrySink interface {
	ZeroCopyEntry(b mem.Buf) error
}

// SGA is the runtime's form of wire.SGA (the same fields): when the sink
// of a serialization is an *SGA, zero-copy entries are appended to Entries
// without an interface call. wire.SerializeSGA passes its *wire.SGA
// converted to *SGA.
type SGA struct {
	Head    []byte
	Entries []mem.Buf
}

// ZeroCopyEntry appends b to Entries (SGA is an EntrySink).
func (s *SGA) ZeroCopyEntry(b mem.Buf) error {
	s.Entries = append(s.Entries, b)
	return nil
}

// Flatten appends the whole serialized m, zero-copy fields included, to dst
// as one contiguous buffer and returns the extended slice. On error dst is
// returned unchanged.
func Flatten(m Msg, dst []byte) ([]byte, error) {
	sz, err := sizesOf(m, m.WireCore())
	if err != nil {
		return dst, err
	}
	n := len(dst)
	total := sz.Total()
	if cap(dst)-n < total {
		nd := make([]byte, n, n+total)
		copy(nd, dst)
		dst = nd
	}
	if err := SerializeFlat(m, dst[n:n+total]); err != nil {
		return dst[:n], err
	}
	return dst[:n+total], nil
}

// SerializeFlat writes the whole serialized m, zero-copy fields included,
// into dst, which must be exactly its Sizes().Total() bytes (ErrDstSize
// otherwise). It uses the sizes of the last Sizes of m like SerializeTo.
func SerializeFlat(m Msg, dst []byte) error { return serialize(m, dst, nil, true) }
