package wireimpl

// Clone returns a deep copy of src made in arena a with newT (the
// generated New function of src's type). The copy shares nothing with src
// or its arena: every value, zero-copy ones included, is copied into a's
// memory (one contiguous allocation, which the copy's fields alias), so
// the copy stays valid after src's arena is Reset, until a's Reset.
//
// With a nil a, the copy is made in a new private arena that holds no
// registered memory and no references and is never Reset: a plain Go heap
// value, reclaimed by the garbage collector when unreachable, for
// messages kept in caches or maps. Its setters allocate from that private
// arena.
//
// Errors are those of sizing src (e.g. ErrArenaReset when src's arena was
// Reset) and of decoding the copy (ErrArenaLimit when the copy exceeds
// a.Limit; ErrRequired when src lacks a proto2 required field).
func Clone[P MessagePtr](src P, a *Arena, newT func(*Arena) P) (P, error) {
	var zero P
	sz, err := sizesOf(src, src.WireCore())
	if err != nil {
		return zero, err
	}
	total := sz.Total()
	var buf []byte
	if a == nil {
		a = NewArena()
		a.Threshold = CopyAll
		buf = make([]byte, 0, total) // exactly the copy's bytes, not an arena chunk
	} else if total > 0 {
		buf = a.alloc(total)[:0]
	}
	p, err := Flatten(src, buf)
	if err != nil {
		return zero, err
	}
	m := newT(a)
	if err := DecodeBytes(m, p); err != nil {
		return zero, err
	}
	return m, nil
}
