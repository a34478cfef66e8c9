package wireimpl

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Bytes is a hybrid bytes field: its value is either copied (into the arena,
// or aliasing a decoded input) and will be written into the head at
// Serialize, or zero-copy: a window on a registered item that the arena
// holds a reference to and that Serialize hands to the sink as its own
// scatter-gather entry.
//
// The copy-or-zero-copy decision is made when the value is set (Cornflakes
// §3.2): len < threshold → copy; otherwise mem.Recover finds the item →
// zero-copy; otherwise copy. The zero Bytes is empty.
type Bytes struct {
	data []byte
	buf  mem.Buf // borrowed window; the arena holds the reference
}

// Set makes p the value, deciding copy or zero-copy with a.Threshold. A
// zero-copy value aliases p: the bytes must not change until the message is
// sent and a is Reset (Cornflakes' memory model: never modify a value in
// place while it may be in flight; allocate, fill and swap instead). A
// value that lies in the registered input the arena decoded last (a field
// of a decoded message, the echo-server case) is not copied into the arena
// whatever its size: it aliases that input, which the arena keeps alive and
// unchanged until Reset, and is zero-copy at or above the threshold.
//
// Set's first case is the echo server's: a non-empty value inside the
// input the arena decoded last aliases it, zero-copy on that input's
// reference at or above the threshold (no reference count, no
// mem.Recover), in a few instructions. Without a decoded input, a value at
// or above the threshold in registered memory is zero-copy (mem.Recover)
// and a smaller one is copied into the arena's current chunk. Every other
// value takes set.
func (b *Bytes) Set(a *Arena, p []byte) {
	if src := a.lastSrc; src != nil {
		// p's offset in the input; a p outside it (below: the difference
		// wraps around) or straddling its end fails the range test.
		off := uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(unsafe.Pointer(unsafe.SliceData(src.data)))
		if n := len(p); n != 0 && off < uintptr(len(src.data)) && uintptr(n) <= uintptr(len(src.data))-off {
			if n >= a.Threshold { // one write-barrier test per branch
				b.data, b.buf = p[:n:n], src.buf.SliceTrusted(int(off), n)
			} else {
				b.data, b.buf = p[:n:n], mem.Buf{}
			}
			return
		}
	} else if n := len(p); n >= a.Threshold {
		// A builder's large value (no decoded input): zero-copy when it
		// lies in registered memory; else set copies it (noting the
		// silent copy).
		if n != 0 {
			if buf, ok := mem.Recover(p); ok {
				a.refs = append(a.refs, buf)
				b.data, b.buf = p[:n:n], buf
				return
			}
		}
	} else if d, ok := a.copyInChunk(p); ok { // a builder's small value
		b.data, b.buf = d, mem.Buf{}
		return
	}
	b.set(a, p)
}

// set is Set outside its first cases (the general rule).
func (b *Bytes) set(a *Arena, p []byte) {
	n := len(p)
	src := a.lastSrc
	// The common copied case first: a value below the threshold, no
	// decoded input to alias, room in the arena's current chunk (Arena.Copy
	// inline). The length decides before anything else: such a value never
	// needs mem.Recover.
	if src == nil && n < a.Threshold {
		if d, ok := a.copyInChunk(p); ok {
			*b = Bytes{data: d}
			return
		}
		if n == 0 {
			*b = Bytes{}
			return
		}
		*b = Bytes{data: a.Copy(p)}
		return
	}
	if n == 0 {
		*b = Bytes{}
		return
	}
	// A value inside a registered input this arena already holds (a field
	// of a decoded message) shares that reference: no refcount operation,
	// same lifetime (until Reset) as a recovered one. Below the threshold
	// it is not copied into the arena either: it aliases the input (which
	// the arena keeps alive) and is copied into the head at Serialize.
	if src != nil {
		if off, ok := within(p, src.data); ok {
			b.data = p[:n:n]
			if n >= a.Threshold {
				b.buf = src.buf.Slice(off, n)
			} else {
				b.buf = mem.Buf{}
			}
			return
		}
	}
	if n >= a.Threshold {
		if buf, ok := mem.Recover(p); ok {
			a.refs = append(a.refs, buf)
			b.data = p[:n:n]
			b.buf = buf
			return
		}
		a.noteSilentCopy(n) // meant zero-copy, not in registered memory
	}
	b.data = a.Copy(p)
	b.buf = mem.Buf{}
}

// SetString is Set for a string value.
func (b *Bytes) SetString(a *Arena, s string) { b.Set(a, bytesOf(s)) }

// SetBuf makes buf's window the value. Below a.Threshold the bytes are
// copied into the packet when the message is serialized; otherwise the
// value is sent as its own zero-copy entry. Either way the arena takes its
// own reference (Clone), released at Reset, except for values shorter than
// RefCopyMin, which are copied into the arena at once (a reference costs
// more than copying them twice). The caller keeps (and must still release)
// its own reference; like a zero-copy value, the window must not be
// modified until Reset.
func (b *Bytes) SetBuf(a *Arena, buf mem.Buf) {
	n := buf.Len()
	switch {
	case n == 0:
		*b = Bytes{}
		return
	case n < RefCopyMin && n < a.Threshold:
		b.data = a.Copy(buf.Bytes())
		b.buf = mem.Buf{}
		return
	}
	// Copied once, at serialization, straight from registered memory
	// into the packet (below the threshold), or sent as its own zero-copy
	// entry: either way the arena holds its own reference until Reset.
	// Clone returns buf itself, so the reference is appended and the
	// window kept without a second copy of the handle.
	a.refs = append(a.refs, buf.Clone())
	b.data = buf.Bytes()
	if n < a.Threshold {
		b.buf = mem.Buf{}
	} else {
		b.buf = buf
	}
}

// Clear makes the value empty.
func (b *Bytes) Clear() { *b = Bytes{} }

// Get returns the value. The slice aliases arena memory, registered memory
// or the decoded input: do not modify it, and do not use it after the
// arena's Reset (keep a copy, or Clone Buf(), to keep it longer).
func (b *Bytes) Get() []byte { return b.data }

// Len is the value's length.
func (b *Bytes) Len() int { return len(b.data) }

// IsZeroCopy reports whether the value will be sent as its own zero-copy
// scatter-gather entry.
func (b *Bytes) IsZeroCopy() bool { return !b.buf.IsZero() }

// Buf returns the zero-copy window, or the zero Buf for a copied value. It
// is BORROWED from the arena: Clone it to keep it past the arena's Reset.
func (b *Bytes) Buf() mem.Buf { return b.buf }

// Equal reports whether b and o hold the same bytes.
func (b *Bytes) Equal(o *Bytes) bool { return bytes.Equal(b.data, o.data) }

// String is a hybrid string field: a Bytes whose UTF-8 validity is checked
// when it is read (Get), once, and remembered. Invalid UTF-8, whether it
// came from the wire or from a setter, is never returned as a string
// without an error; Bytes gives the raw bytes without a check.
type String struct {
	b     Bytes
	utf8s uint8 // 0 unchecked, 1 valid, 2 invalid
}

const (
	utf8Unchecked = iota
	utf8Valid
	utf8Invalid
)

// Set makes p the value (see Bytes.Set; p is not checked until Get).
func (s *String) Set(a *Arena, p []byte) { s.b.Set(a, p); s.utf8s = utf8Unchecked }

// SetString makes v the value (see Bytes.Set; a zero-copy value aliases v).
func (s *String) SetString(a *Arena, v string) { s.b.Set(a, bytesOf(v)); s.utf8s = utf8Unchecked }

// SetBuf makes buf's window the value (see Bytes.SetBuf).
func (s *String) SetBuf(a *Arena, buf mem.Buf) { s.b.SetBuf(a, buf); s.utf8s = utf8Unchecked }

// Clear makes the value empty.
func (s *String) Clear() { *s = String{} }

// Get returns the value as a string, or ErrInvalidUTF8 (and "") when it is
// not valid UTF-8. The string aliases the same memory as Bytes.Get and has
// the same lifetime: it must not be used after the arena's Reset (copy it
// with strings.Clone to keep it).
func (s *String) Get() (string, error) {
	if !s.Valid() {
		return "", ErrInvalidUTF8
	}
	return stringOf(s.b.data), nil
}

// Valid reports whether the value is valid UTF-8 (checked once).
func (s *String) Valid() bool {
	switch s.utf8s {
	case utf8Valid:
		return true
	case utf8Invalid:
		return false
	}
	if utf8.Valid(s.b.data) {
		s.utf8s = utf8Valid
		return true
	}
	s.utf8s = utf8Invalid
	return false
}

// Bytes returns the raw value without a UTF-8 check (aliasing; see Bytes.Get).
func (s *String) Bytes() []byte { return s.b.data }

// Len is the value's length in bytes.
func (s *String) Len() int { return len(s.b.data) }

// IsZeroCopy reports whether the value is sent zero-copy.
func (s *String) IsZeroCopy() bool { return !s.b.buf.IsZero() }

// Buf returns the zero-copy window (BORROWED; see Bytes.Buf).
func (s *String) Buf() mem.Buf { return s.b.buf }

// Equal reports whether s and o hold the same bytes.
func (s *String) Equal(o *String) bool { return bytes.Equal(s.b.data, o.b.data) }
