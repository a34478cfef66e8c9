package wireimpl

import (
	"encoding/binary"
	"errors"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Whole-list operations on a BytesList: one call and one loop for what a
// caller would otherwise do element by element (At, AppendBorrowed), with
// the loop's bounds checks hoisted and the kept totals summed in
// registers.

// errNotLoaded is AppendBorrowedFrom's error for a decoded list that was
// not loaded (its getter was not called).
var errNotLoaded = errors.New("wire: AppendBorrowedFrom of a decoded list that was not loaded (call its getter first)")

// AppendValues appends every element of l, in order and as At returns
// them (aliasing; an empty element is nil), to dst and returns the
// extended slice: the loop of At over the list in one call. Like At it
// panics when the list was not loaded (a decoded list whose getter was
// not called).
func (l *BytesList) AppendValues(dst [][]byte) [][]byte {
	if l.vep == 0 {
		return l.appendItems(dst)
	}
	z := &l.lz
	d := z.src.data
	m := int(z.n)
	k := len(dst)
	if m == 1 && k < cap(dst) { // one element (a one-value request): no loop
		e := entryWord(d[int(z.off):int(z.off)+EntrySize], 0) // checked by the decoder
		n, off := int(uint32(e)), int(e>>32)
		dst = dst[:k+1]
		if n == 0 {
			dst[k] = nil
		} else {
			dst[k] = d[off : off+n : off+n] // checked by the decoder or Load: never panics
		}
		return dst
	}
	if cap(dst)-k < m {
		dst = growValues(dst, m)
	}
	out := dst[k : k+m]
	ents := d[int(z.off) : int(z.off)+EntrySize*m] // checked by the decoder: the loop's one bounds check
	for i := range out {
		e := entryWord(ents, i)
		n, off := int(uint32(e)), int(e>>32)
		if n == 0 {
			out[i] = nil
			continue
		}
		out[i] = d[off : off+n : off+n] // checked by the decoder or Load: never panics
	}
	return dst[:k+m]
}

// appendItems is AppendValues of a list that is not a view.
func (l *BytesList) appendItems(dst [][]byte) [][]byte {
	if l.lz.src != nil {
		panic("wire: BytesList.AppendValues of a list not loaded")
	}
	for i := range l.items {
		dst = append(dst, l.items[i].data)
	}
	return dst
}

// growValues returns dst with room for m more values.
func growValues(dst [][]byte, m int) [][]byte {
	return append(dst, make([][]byte, m)...)[:len(dst)]
}

// AppendBorrowedAll appends every value of vals as AppendBorrowed appends
// it (the same rule and contract: each value's bytes must stay unchanged,
// and reachable, until the list is truncated below it or the arena's
// Reset; the checked build verifies them, ErrBorrowedModified), in one
// call. Within the list's capacity, values below the threshold cost one
// loop step each and no call; a value at or above the threshold, and every
// value after it, takes AppendBorrowed.
func (l *BytesList) AppendBorrowedAll(vals [][]byte) {
	if len(vals) == 1 { // small enough to be inlined: one value costs AppendBorrowed
		l.AppendBorrowed(vals[0])
		return
	}
	l.appendBorrowedAll(vals, false)
}

// SetBorrowedAll makes l's elements the values of vals, borrowed:
// Truncate(0) and AppendBorrowedAll(vals) in one call (a kept message's
// list set again from a slice of values), with AppendBorrowed's rule and
// contract.
func (l *BytesList) SetBorrowedAll(vals [][]byte) { l.appendBorrowedAll(vals, true) }

// appendBorrowedAll is AppendBorrowedAll of any number of values, or
// SetBorrowedAll when set is true.
func (l *BytesList) appendBorrowedAll(vals [][]byte, set bool) {
	a := l.a
	k := len(l.items)
	if set {
		if l.vep != 0 {
			l.Truncate(0)
		}
		k = 0
		l.items, l.tot = l.items[:0], listTotals{}
	}
	if l.vep == 0 && len(vals) <= cap(l.items)-k {
		thr := a.Threshold
		items := l.items[k : k+len(vals)]
		tcp := l.tot.cp
		for i, p := range vals {
			n := len(p)
			if n >= thr { // the rest one by one, with AppendBorrowed's cases
				l.items, l.tot.cp = l.items[:k+i], tcp
				for _, p := range vals[i:] {
					l.AppendBorrowed(p)
				}
				return
			}
			b := &items[i]
			b.data, b.buf = p[:n:n], mem.Buf{}
			tcp += n
			a.lend(b, p) // checked build only
		}
		l.items, l.tot.cp = l.items[:k+len(vals)], tcp // the length only: no write barrier
		return
	}
	for _, p := range vals {
		l.AppendBorrowed(p)
	}
}

// AppendBorrowedFrom appends every element of src, a loaded list (a
// decoded list after its getter, or a built one), borrowed: each element
// aliases src's, is sent zero-copy on the window of src's element when it
// is at least l's arena's Threshold and src holds it in registered memory
// (a decoded input's window, or a built element's reference), and is
// copied once, into the head, at serialization otherwise. No arena memory
// and no reference is taken: the echo server's "respond with the request's
// list" in one call, rather than At and AppendBorrowed per element.
//
// Contract (that of AppendBorrowed and AppendBufBorrowed): src's elements
// stay valid and unchanged until l is truncated below them or l's arena's
// Reset. When src is a list of l's arena, that holds by itself (the arena
// holds its decoded input, and its built elements, until Reset); when it
// is a list of another arena, that arena must not be Reset before (or its
// input must be held by the caller, as Arena.BorrowInput asks). The
// checked build verifies the values (ErrBorrowedModified).
//
// It returns ErrArenaReset when src is a decoded list of an arena Reset
// since its decode, and an error when src is a decoded list not loaded
// yet; l is then unchanged.
func (l *BytesList) AppendBorrowedFrom(src *BytesList) error {
	if l.shareView(src) {
		return nil
	}
	return l.borrowFrom(src, false)
}

// shareView is AppendBorrowedFrom's O(1) case: a live checked view src of
// l's arena, into an empty l (not a view) with room for src's elements,
// whose input was decoded at l's arena's current Threshold. l becomes the
// same view: it reads the input, which the arena holds until Reset, as src
// does, and its elements are those borrowFrom's loop would make (the same
// decisions: source.window's rule at that threshold). The flat serializer
// writes it from the entries (serializeOnlyView); every writer of a view
// makes its elements first (materialize, into l's own storage: no arena
// memory), and src is never touched: copy-on-write. It reports whether it
// applied (else nothing changed). A leaf of its own: within borrowFrom's
// frame the same stores cost twice as much.
func (l *BytesList) shareView(src *BytesList) bool {
	v := src.vep
	if v == 0 || mem.Checked || len(l.items) != 0 || l.vep != 0 {
		return false
	}
	a := l.a
	if src.a != a || v != a.epoch+1 || int(src.lz.n) > cap(l.items) || src.lz.src.thr != a.Threshold {
		return false
	}
	l.lz, l.vep = src.lz, v
	l.tot, l.tok = listTotals{}, false
	return true
}

// SetBorrowedFrom makes l's elements those of src, borrowed: Truncate(0)
// and AppendBorrowedFrom(src) in one call (the echo server's "respond
// with the request's list" into a kept message), with AppendBorrowedFrom's
// rule, contract and errors. On an error l is unchanged. src may be l
// (l is then unchanged).
func (l *BytesList) SetBorrowedFrom(src *BytesList) error { return l.borrowFrom(src, true) }

// borrowFrom is AppendBorrowedFrom, or SetBorrowedFrom when set is true.
func (l *BytesList) borrowFrom(src *BytesList, set bool) error {
	k := len(l.items)
	if set {
		k = 0
	}
	// (src is not l here: l is not a view.)
	if v := src.vep; v != 0 && v == src.a.epoch+1 && l.vep == 0 && int(src.lz.n) <= cap(l.items)-k {
		// A live checked view (in one segment), within l's capacity: one
		// loop over its entries.
		if set {
			l.tot = listTotals{} // l.items is cut at the end (k is 0)
		}
		z := &src.lz
		s := z.src
		d := s.data
		items := l.items[:k+int(z.n)]
		a := l.a
		thr := a.Threshold
		if s.buf.IsZero() { // an input outside registered memory: every value copied
			thr = MaxMessageSize + 1
		}
		if len(items)-k == 1 { // one element (a one-value request): no loop
			e := entryWord(d[int(z.off):int(z.off)+EntrySize], 0) // checked by the decoder
			n, off := int(uint32(e)), int(e>>32)
			b := &items[k]
			switch {
			case n == 0:
				*b = Bytes{}
				a.unlend(b) // checked build only
			case n < thr:
				b.data, b.buf = d[off:off+n:off+n], mem.Buf{} // checked by the decoder or Load: never panics
				l.tot.cp += n
				a.lendBuf(b, b.data, b.buf) // checked build only
			default:
				b.data, b.buf = d[off:off+n:off+n], s.buf.SliceTrusted(off, n)
				l.tot.zc += n
				l.tot.nz++
				a.lendBuf(b, b.data, b.buf) // checked build only
			}
			l.items = l.items[:len(items)] // the length only: no write barrier
			return nil
		}
		ents := d[int(z.off) : int(z.off)+EntrySize*(len(items)-k)] // checked by the decoder: the loop's one bounds check
		for i := k; i < len(items); i++ {
			e := entryWord(ents, i-k)
			n, off := int(uint32(e)), int(e>>32)
			b := &items[i]
			if n == 0 {
				// Field by field: *b = Bytes{} calls wbZero when the write
				// barrier is on, and the call makes the loop's values spill.
				b.data, b.buf = nil, mem.Buf{}
				a.unlend(b) // checked build only
				continue
			}
			p := d[off : off+n : off+n] // checked by the decoder or Load: never panics
			if n < thr {
				b.data, b.buf = p, mem.Buf{}
				l.tot.cp += n
			} else {
				b.data, b.buf = p, s.buf.SliceTrusted(off, n)
				l.tot.zc += n
				l.tot.nz++
			}
			a.lendBuf(b, p, b.buf) // checked build only
		}
		l.items = l.items[:len(items)] // the length only: no write barrier
		return nil
	}
	if set {
		return l.setBorrowedFromSlow(src)
	}
	return l.appendBorrowedFromSlow(src)
}

// setBorrowedFromSlow is SetBorrowedFrom outside borrowFrom's first case.
func (l *BytesList) setBorrowedFromSlow(src *BytesList) error {
	if err := src.borrowErr(); err != nil {
		return err // l unchanged
	}
	if src == l {
		return nil
	}
	l.Truncate(0)
	return l.appendBorrowedFromSlow(src)
}

// borrowErr is the error AppendBorrowedFrom reports for src: ErrArenaReset
// for a decoded list of an arena Reset since its decode, errNotLoaded for
// a decoded list not loaded yet, else nil.
func (src *BytesList) borrowErr() error {
	if v := src.vep; v != 0 {
		if v != src.a.epoch+1 {
			return ErrArenaReset
		}
		return nil
	}
	if src.lz.src != nil {
		if src.lz.stale() {
			return ErrArenaReset
		}
		return errNotLoaded
	}
	return nil
}

// appendBorrowedFromSlow is AppendBorrowedFrom outside its first case: src
// is a built list, a view of a Reset arena or beyond l's capacity, or a
// list not loaded, or l is a view.
func (l *BytesList) appendBorrowedFromSlow(src *BytesList) error {
	if err := src.borrowErr(); err != nil {
		return err
	}
	if src.vep != 0 { // a live view (borrowErr: a decoded list not loaded is an error)
		l.appendViewSlow(src)
		return nil
	}
	if l.vep != 0 {
		l.materialize()
	}
	a := l.a
	thr := a.Threshold
	m := len(src.items) // src may be l: its elements before the first append
	for i := range m {
		s := src.items[i]
		b := l.next()
		n := len(s.data)
		switch {
		case n == 0:
			*b = Bytes{}
			a.unlend(b) // checked build only
			continue
		case n >= thr && !s.buf.IsZero():
			b.data, b.buf = s.data, s.buf
		default:
			b.data, b.buf = s.data, mem.Buf{}
		}
		a.lendBuf(b, s.data, b.buf) // checked build only
		l.count(b)
	}
	return nil
}

// appendViewSlow is AppendBorrowedFrom of a live checked view src beyond
// l's capacity or onto a view l (which is materialized first; src may be
// l): each element by next. src is not changed.
func (l *BytesList) appendViewSlow(src *BytesList) {
	z := src.lz // src may be l, which materialize changes
	if l.vep != 0 {
		l.materialize()
	}
	a := l.a
	s := z.src
	d := s.data
	thr := a.Threshold
	if s.buf.IsZero() { // an input outside registered memory: every value copied
		thr = MaxMessageSize + 1
	}
	for i := range int(z.n) {
		e := binary.LittleEndian.Uint64(d[int(z.off)+EntrySize*i:]) // checked by the decoder
		n, off := int(uint32(e)), int(e>>32)
		b := l.next()
		if n == 0 {
			*b = Bytes{}
			a.unlend(b) // checked build only
			continue
		}
		p := d[off : off+n : off+n] // checked by the decoder or Load: never panics
		if n < thr {
			b.data, b.buf = p, mem.Buf{}
		} else {
			b.data, b.buf = p, s.buf.SliceTrusted(off, n)
		}
		a.lendBuf(b, p, b.buf) // checked build only
		l.count(b)
	}
}
