package wireimpl

import (
	"errors"
	"fmt"
	"hash/maphash"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Borrowed values (docs/CODEGEN.md, "Borrowed values").
//
// Set copies a value below the threshold into the arena at once, and
// Serialize copies it a second time, into the head. SetBorrowed and
// AppendBorrowed skip the first copy: the field aliases the caller's
// bytes, which Serialize copies into the head like any copied value (one
// copy per value, as an aliasing serializer such as vtprotobuf makes).
// The caller promises that the bytes stay unchanged, and reachable, while
// the field holds them: until the field is set again or the arena's next
// Reset. A value at or above the threshold is decided as Set decides it
// (zero-copy when it lies in registered memory or in the input the arena
// decoded last), but a registered one is held on the caller's reference
// (Set takes one); one that is not zero-copy is borrowed too, instead of
// being copied into the arena.
//
// Reusing a built message (docs/CODEGEN.md, "Reusing a built message"): a
// message may be serialized any number of times, and its fields set again
// between serializations. The borrowed setters then grow nothing: no
// arena memory, no reference held by the arena or taken on the value's
// item, no Go allocation; a list emptied by Truncate(0) keeps its storage
// for the next Appends. The copying setters (Set, Append, SetBuf) copy
// into the arena or take a reference each time, which only Reset gives
// back: reuse needs the borrowed ones.
//
// The checked build (-tags cfcheck) keeps a checksum of every borrowed
// value and verifies them when a message of the arena is serialized on
// the direct path (the serialization then fails with ErrBorrowedModified)
// and at Reset (which then returns an error wrapping it). It keeps one
// record per field: setting a field again with a borrowed setter replaces
// its record (a re-set field holds the new value only, so the old one may
// change from then on), and a field re-set without borrowing (an empty
// value, a value aliasing the decoded input) drops it. A field re-set with
// a copying setter keeps its record, and the old value stays checked
// until Reset.

// ErrBorrowedModified: a value set with SetBorrowed or AppendBorrowed was
// modified before the arena's Reset (reported by the checked build only).
var ErrBorrowedModified = errors.New("wire: a borrowed value (SetBorrowed, AppendBorrowed) was modified before the arena's Reset")

// lentValue is a borrowed value and its checksum (checked build).
type lentValue struct {
	p   []byte
	sum uint64
	buf mem.Buf // a borrowed reference (SetBufBorrowed), checked live
}

var lentSeed = maphash.MakeSeed()

// checkLent returns an error wrapping ErrBorrowedModified for the first
// borrowed value of the batch whose bytes changed since it was set, or nil.
func (a *Arena) checkLent() error {
	for i := range a.lent {
		v := &a.lent[i]
		if len(v.p) == 0 { // a dropped record (see lend)
			continue
		}
		if err := v.buf.Check(); err != nil {
			return fmt.Errorf("%w (value %d of the batch: its reference was released: %w)", ErrBorrowedModified, i, err)
		}
		if maphash.Bytes(lentSeed, v.p) != v.sum {
			return fmt.Errorf("%w (value %d of the batch, %d bytes)", ErrBorrowedModified, i, len(v.p))
		}
	}
	return nil
}

// resetLent is Reset's check of the borrowed values (checked build): it
// returns first, or, when first is nil, checkLent's error; it forgets the
// values.
func (a *Arena) resetLent(first error) error {
	if err := a.checkLent(); err != nil && first == nil {
		first = err
	}
	clear(a.lent)
	a.lent = a.lent[:0]
	clear(a.lentAt)
	return first
}

// SetBorrowed makes p the value like Set, but without copying it into the
// arena: a value Set would copy (below a.Threshold, or at or above it
// outside registered memory) aliases p and is copied once, into the head,
// when the message is serialized. A value inside the input the arena
// decoded last is held exactly as Set holds it. A value at or above the
// threshold that lies in registered memory is sent zero-copy as Set sends
// it, but on the caller's reference: the arena takes none (as
// SetBufBorrowed), so re-setting a field takes no reference either.
//
// Contract: p's bytes must not change, and p must not be handed back to
// a pool for reuse, until b is set again or a's next Reset (every
// serialization of the message in between reads them). The checked build
// verifies it (see ErrBorrowedModified).
func (b *Bytes) SetBorrowed(a *Arena, p []byte) {
	n := len(p)
	if n < a.Threshold { // inside the decoded input too: Set would alias it the same way
		b.data, b.buf = p[:n:n], mem.Buf{}
		a.lend(b, p) // checked build only
		return
	}
	if a.lastSrc == nil && n != 0 { // Set's zero-copy case, on the caller's reference
		if buf, ok := recoverBorrowed(p); ok {
			b.data, b.buf = p[:n:n], buf
			a.lendBuf(b, p, buf) // checked build only
			return
		}
	}
	b.setBorrowed(a, p)
}

// setBorrowed is SetBorrowed for a value at or above the threshold that
// is empty, lies outside registered memory, or may lie in the decoded
// input.
func (b *Bytes) setBorrowed(a *Arena, p []byte) {
	n := len(p)
	if n == 0 {
		*b = Bytes{}
		a.unlend(b) // checked build only
		return
	}
	if src := a.lastSrc; src != nil {
		if _, ok := within(p, src.data); ok {
			b.Set(a, p) // aliases the input, which the arena holds
			a.unlend(b) // checked build only
			return
		}
		if buf, ok := recoverBorrowed(p); ok { // (without a decoded input, SetBorrowed tried it)
			b.data, b.buf = p[:n:n], buf
			a.lendBuf(b, p, buf) // checked build only
			return
		}
	}
	a.noteSilentCopy(n) // meant zero-copy, not in registered memory
	b.data, b.buf = p[:n:n], mem.Buf{}
	a.lend(b, p) // checked build only
}

// recoverBorrowed is mem.Recover(p) without keeping the reference it
// takes: a handle on the caller's reference, which the borrowed contract
// keeps live until the arena's Reset (p must not go back to its pool
// before it). The item's count is left as it was, so that re-setting a
// field any number of times takes no reference and grows nothing.
func recoverBorrowed(p []byte) (mem.Buf, bool) {
	buf, ok := mem.Recover(p)
	if ok && !buf.TryRelease() { // the checked build, a Concurrent pool
		// Recover found the item live (a count of at least one before
		// its +1), so this drops Recover's reference only.
		_ = buf.Release()
	}
	return buf, ok
}

// SetBufBorrowed makes buf's window the value like SetBuf, but without
// taking a reference (no Clone, nothing released at Reset) and without
// copying a small value into the arena: below a.Threshold the window is
// copied once, into the head, when the message is serialized; otherwise it
// is sent as its own zero-copy entry on the caller's reference.
//
// Contract: the caller keeps its reference on buf, unreleased, and the
// window unchanged, until b is set again or a's next Reset (as
// Arena.BorrowInput asks of a decoded input). The checked build verifies both (ErrBorrowedModified,
// wrapping mem's use-after-release error for a released reference).
func (b *Bytes) SetBufBorrowed(a *Arena, buf mem.Buf) {
	p := buf.Bytes()
	n := len(p)
	switch {
	case n == 0:
		*b = Bytes{}
		a.unlend(b) // checked build only
		return
	case n < a.Threshold:
		*b = Bytes{data: p[:n:n]}
	default:
		b.data, b.buf = p[:n:n], buf
	}
	a.lendBuf(b, p, buf) // checked build only
}

// SetBufBorrowed makes buf's window the value (see Bytes.SetBufBorrowed).
func (s *String) SetBufBorrowed(a *Arena, buf mem.Buf) {
	s.b.SetBufBorrowed(a, buf)
	s.utf8s = utf8Unchecked
}

// AppendBufBorrowed adds buf's window like AppendBuf, without taking a
// reference (the rule and contract of Bytes.SetBufBorrowed: the caller's
// reference stays unreleased, and the window unchanged, until the list
// is truncated below it or the arena's Reset). Within the list's capacity
// it costs no call.
func (l *BytesList) AppendBufBorrowed(buf mem.Buf) {
	if k := len(l.items); k < cap(l.items) && l.vep == 0 {
		a := l.a
		p := buf.Bytes()
		n := len(p)
		l.items = l.items[:k+1]
		b := &l.items[k]
		switch {
		case n == 0:
			*b = Bytes{}
			a.unlend(b) // checked build only
			return
		case n < a.Threshold:
			*b = Bytes{data: p[:n:n]}
			l.tot.cp += n
		default:
			b.data, b.buf = p[:n:n], buf
			l.tot.zc += n
			l.tot.nz++
		}
		a.lendBuf(b, p, buf) // checked build only
		return
	}
	l.appendBufBorrowedSlow(buf)
}

// appendBufBorrowedSlow is AppendBufBorrowed beyond the list's capacity
// or on a decoded list.
func (l *BytesList) appendBufBorrowedSlow(buf mem.Buf) {
	b := l.next()
	b.SetBufBorrowed(l.a, buf)
	l.count(b)
}

// SetBorrowed makes v the value without copying it into the arena (see
// Bytes.SetBorrowed; a Go string does not change, so the contract only
// asks that it is not built over memory that does).
func (s *String) SetBorrowed(a *Arena, v string) {
	s.b.SetBorrowed(a, bytesOf(v))
	s.utf8s = utf8Unchecked
}

// SetBytesBorrowed makes p the value without copying it into the arena
// (see Bytes.SetBorrowed; p is not checked until Get).
func (s *String) SetBytesBorrowed(a *Arena, p []byte) {
	s.b.SetBorrowed(a, p)
	s.utf8s = utf8Unchecked
}

// AppendBorrowed adds p without copying it into the arena (the rule and
// contract of Bytes.SetBorrowed: p must stay unchanged until the list is
// truncated below it or the arena's Reset). Within the list's capacity, a
// value below the threshold costs no call, and a registered one at or
// above it is sent zero-copy on the caller's reference.
func (l *BytesList) AppendBorrowed(p []byte) {
	a := l.a
	if k := len(l.items); k < cap(l.items) && l.vep == 0 {
		n := len(p)
		if n < a.Threshold {
			l.items = l.items[:k+1]
			b := &l.items[k]
			b.data, b.buf = p[:n:n], mem.Buf{}
			l.tot.cp += n
			a.lend(b, p) // checked build only
			return
		}
		if a.lastSrc == nil && n != 0 { // Append's zero-copy case, on the caller's reference
			if buf, ok := recoverBorrowed(p); ok {
				l.items = l.items[:k+1]
				b := &l.items[k]
				b.data, b.buf = p[:n:n], buf
				l.tot.zc += n
				l.tot.nz++
				a.lendBuf(b, p, buf) // checked build only
				return
			}
		}
	}
	l.appendBorrowedSlow(p)
}

// appendBorrowedSlow is AppendBorrowed outside its first case.
func (l *BytesList) appendBorrowedSlow(p []byte) {
	b := l.next()
	b.SetBorrowed(l.a, p)
	l.count(b)
}

// AppendStringBorrowed adds s without copying it into the arena (see
// AppendBorrowed).
func (l *BytesList) AppendStringBorrowed(s string) { l.AppendBorrowed(bytesOf(s)) }

// AppendBorrowed adds s without copying it into the arena (see
// Bytes.SetBorrowed).
func (l *StringList) AppendBorrowed(s string) {
	l.items = grow(stringType, l.a, l.items)
	l.items[len(l.items)-1].SetBorrowed(l.a, s)
}

// AppendBytesBorrowed adds p without copying it into the arena (see
// Bytes.SetBorrowed).
func (l *StringList) AppendBytesBorrowed(p []byte) {
	l.items = grow(stringType, l.a, l.items)
	l.items[len(l.items)-1].SetBytesBorrowed(l.a, p)
}
