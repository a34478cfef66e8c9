package dptest

import (
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Object is a hand-written wire.Object: Serialize writes Header then Copied
// into dst and reports Entries as zero-copy entries, in order. Its wire
// bytes are therefore Header || Copied || Entries[0] || Entries[1] ...
//
// Entries are borrowed from the test, which keeps owning them. The fault
// fields make it misbehave on purpose.
type Object struct {
	Header, Copied []byte
	Entries        []mem.Buf

	// Err, when set, is returned by Serialize after it reported FailAfter
	// entries.
	Err       error
	FailAfter int
	// ExtraEntries reports that many more entries (repeating the last one)
	// than Sizes declares: a lying object the datapath must reject.
	ExtraEntries int
	// MissingEntries reports that many fewer entries than Sizes declares.
	MissingEntries int
}

var _ wire.Object = (*Object)(nil)

// Sizes implements wire.Object.
func (o *Object) Sizes() wire.Sizes {
	s := wire.Sizes{Header: len(o.Header), Copied: len(o.Copied), Entries: len(o.Entries)}
	for _, e := range o.Entries {
		s.ZeroCopy += e.Len()
	}
	return s
}

// Serialize implements wire.Object.
func (o *Object) Serialize(dst []byte, sink wire.EntrySink) error {
	n := copy(dst, o.Header)
	copy(dst[n:], o.Copied)
	report := len(o.Entries) - o.MissingEntries
	for i := range report + o.ExtraEntries {
		if o.Err != nil && i == o.FailAfter {
			return o.Err
		}
		e := o.Entries[min(i, len(o.Entries)-1)]
		if err := sink.ZeroCopyEntry(e); err != nil {
			return err
		}
	}
	if o.Err != nil {
		return o.Err
	}
	return nil
}

// WireBytes returns the bytes the object serializes to (a fresh slice).
func (o *Object) WireBytes() []byte {
	b := append(append([]byte(nil), o.Header...), o.Copied...)
	for _, e := range o.Entries {
		b = append(b, e.Bytes()...)
	}
	return b
}
