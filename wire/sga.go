package wire

import (
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// SGA is a scatter-gather array (the HotOS'21 API): one head buffer with
// the header and the copied fields, then the zero-copy entries in wire
// order. The serialized object is Head followed by each entry's bytes.
// An SGA is reusable: SerializeSGA overwrites it, keeping its capacity.
type SGA struct {
	// Head holds the header and the copied region.
	Head []byte
	// Entries are the zero-copy entries, BORROWED from the object: they are
	// valid while its arena is not Reset. Clone an entry to keep it longer
	// (a datapath does, until its send completes).
	Entries []mem.Buf
}

// ZeroCopyEntry appends b to Entries (SGA is an EntrySink).
func (s *SGA) ZeroCopyEntry(b mem.Buf) error {
	s.Entries = append(s.Entries, b)
	return nil
}

// Len is the serialized size: len(Head) plus every entry's length.
func (s *SGA) Len() int {
	n := len(s.Head)
	for _, e := range s.Entries {
		n += e.Len()
	}
	return n
}

// AppendTo appends the serialized object (Head, then each entry) to dst.
func (s *SGA) AppendTo(dst []byte) []byte {
	dst = append(dst, s.Head...)
	for _, e := range s.Entries {
		dst = append(dst, e.Bytes()...)
	}
	return dst
}

// SerializeSGA serializes obj into sga: Head is resized to Sizes().Head()
// (reusing its capacity) and Entries receives the zero-copy entries.
func SerializeSGA(obj Object, sga *SGA) error {
	if f, ok := obj.(wireimpl.SGAWriter); ok {
		// A generated message on the direct path: sizes and encode in one call.
		return f.WireSerializeSGA((*wireimpl.SGA)(sga))
	}
	sz := obj.Sizes()
	rt := (*wireimpl.SGA)(sga)
	rt.Reset(sz.Head())
	// The runtime's SGA has this layout: entries are appended to it
	// without an interface call per entry.
	return obj.Serialize(sga.Head, rt)
}

// Flatten appends the whole serialized object, zero-copy fields included,
// to dst as one contiguous buffer (for stacks without scatter-gather) and
// returns the extended slice. On error dst is returned unchanged.
func Flatten(obj Object, dst []byte) ([]byte, error) {
	sz := obj.Sizes()
	n := len(dst)
	total := sz.Total()
	if cap(dst)-n < total {
		nd := make([]byte, n, n+total)
		copy(nd, dst)
		dst = nd
	}
	out := dst[n : n+total]
	var err error
	if m, ok := obj.(Msg); ok {
		err = wireimpl.SerializeFlat(m, out)
	} else {
		f := &flattener{out: out, at: sz.Head()}
		err = obj.Serialize(out[:sz.Head()], f)
		if err == nil && f.at != total {
			err = ErrModified
		}
	}
	if err != nil {
		return dst[:n], err
	}
	return dst[:n+total], nil
}

// flattener copies the zero-copy entries of a foreign Object after its head.
type flattener struct {
	out []byte
	at  int
}

func (f *flattener) ZeroCopyEntry(b mem.Buf) error {
	if b.Len() > len(f.out)-f.at {
		return ErrModified
	}
	f.at += copy(f.out[f.at:], b.Bytes())
	return nil
}
