package wireimpl

import (
	"encoding/binary"
	"unsafe"
)

// MessagePtr is the constraint of message-typed fields: a generated
// message pointer type.
type MessagePtr interface {
	Msg
	comparable
}

// MessageList is a repeated message field. Get it from the generated GetX
// (which loads a decoded list, decoding each element's fields; their own
// lists and nested messages stay lazy) or InitX accessor.
type MessageList[P MessagePtr] struct {
	a     *Arena
	items []Msg
	lz    lazy
}

// Init makes the list empty with room for n elements.
func (l *MessageList[P]) Init(a *Arena, n int) {
	var items []Msg
	if p := a.take(msgSlotType.id, n, unsafe.Sizeof(Msg(nil))); p != nil { // newSliceRaw, inlined
		items = (*[maxSlabLen]Msg)(p)[:0:n]
	} else {
		items = msgSlotType.newSliceRawSlow(a, max(n, 0))[:0]
	}
	*l = MessageList[P]{a: a, items: items} // one write: lz zeroed with it
}

// Load binds the list to a and decodes a decoded list (once), making
// elements with newT (the generated New function). After an error the list
// stays undecoded and the next Load reports it again. It fails with
// ErrArenaReset after the Reset of the arena that decoded the list.
func (l *MessageList[P]) Load(a *Arena, newT func(*Arena) P) error {
	if l.a == nil {
		l.a = a
	}
	z := &l.lz
	if z.src == nil {
		return nil
	}
	if z.stale() {
		return ErrArenaReset
	}
	items, ok := msgSlotType.tryNewSlice(l.a, int(z.n))
	if !ok {
		return limitErr(int(z.off), z.field())
	}
	src := z.src
	prev := int(z.off) + EntrySize*len(items)
	for i := range items {
		at := int(z.off) + EntrySize*i
		e := src.data[at : at+EntrySize]
		size, off := int(binary.LittleEndian.Uint32(e)), int(binary.LittleEndian.Uint32(e[4:]))
		if off < prev || size < 4 || off > int(z.end) || size > int(z.end)-off {
			return malformed(at, z.field(), "list element header out of order or out of range")
		}
		prev = off + size
		if overLimit(l.a) {
			return limitErr(at, z.field())
		}
		m := newT(l.a)
		if err := decodeAt(m, l.a, src, off, off+size, z.depth()+1); err != nil {
			return err
		}
		items[i] = m
	}
	l.items = items
	*z = lazy{}
	return nil
}

// Len is the number of elements.
func (l *MessageList[P]) Len() int {
	if l.lz.src != nil {
		return int(l.lz.n)
	}
	return len(l.items)
}

// At returns element i.
func (l *MessageList[P]) At(i int) P { return l.items[i].(P) }

// Append adds m (a message of the same arena).
func (l *MessageList[P]) Append(m P) {
	l.items = grow(msgSlotType, l.a, l.items)
	l.items[len(l.items)-1] = m
}

// Truncate shortens the list to n elements.
func (l *MessageList[P]) Truncate(n int) {
	clear(l.items[n:])
	l.items = l.items[:n]
}

// Equal reports whether both lists (both loaded) have equal elements by eq.
func (l *MessageList[P]) Equal(o *MessageList[P], eq func(P, P) bool) bool {
	if len(l.items) != len(o.items) {
		return false
	}
	for i := range l.items {
		if !eq(l.items[i].(P), o.items[i].(P)) {
			return false
		}
	}
	return true
}

// Loaded2 calls two generated getters (of lists or nested messages) and
// reports whether both succeeded; generated Equal methods use it.
func Loaded2[L any](x, y func() (L, error)) (L, L, bool) {
	l, err1 := x()
	m, err2 := y()
	return l, m, err1 == nil && err2 == nil
}

// Nested is a singular message field: set, or decoded lazily on first Get.
type Nested[P MessagePtr] struct {
	p  P
	lz lazy
}

// Present reports whether the field is set (decoded or assigned).
func (n *Nested[P]) Present() bool {
	var zero P
	return n.p != zero || n.lz.src != nil
}

// Pending reports whether the field is a lazy record not decoded yet (Get
// decodes it). When it is not, Loaded is the field's value (the zero P
// when absent): the generated getter of a field decoded with its parent
// tests it and returns Loaded without calling Get.
func (n *Nested[P]) Pending() bool { return n.lz.src != nil }

// Get returns the message (the zero P when absent), decoding it on first
// access with newT (the generated New function). After an error the field
// stays undecoded and the next Get reports it again. A field not decoded
// yet fails with ErrArenaReset after the Reset of the arena that decoded
// its parent.
func (n *Nested[P]) Get(a *Arena, newT func(*Arena) P) (P, error) {
	z := &n.lz
	if z.src != nil {
		if z.stale() {
			return n.p, ErrArenaReset
		}
		if overLimit(a) {
			return n.p, limitErr(int(z.off), z.field())
		}
		m := newT(a)
		if err := decodeAt(m, a, z.src, int(z.off), int(z.off+z.n), z.depth()+1); err != nil {
			return n.p, err
		}
		n.p = m
		*z = lazy{}
	}
	return n.p, nil
}

// Set assigns m (the zero P clears the field). m must belong to the same
// arena as the parent (or outlive it).
func (n *Nested[P]) Set(m P) {
	n.p = m
	n.lz = lazy{}
}

// Clear unsets the field.
func (n *Nested[P]) Clear() { *n = Nested[P]{} }
