package wireimpl

import (
	"sort"
	"unicode/utf8"
)

// MapKey is the constraint of map keys: the Go types of protobuf's map key
// kinds (bool; int32, sint32, sfixed32; int64, sint64, sfixed64; uint32,
// fixed32; uint64, fixed64; string).
type MapKey interface {
	bool | int32 | int64 | uint32 | uint64 | string
}

// MapEntry is implemented by the generated entry message of a map field
// (`map<K, V> x = n` is on the wire exactly `repeated XEntry x = n` with
// `K key = 1; V value = 2`, docs/WIRE_FORMAT.md "Maps").
type MapEntry[K MapKey] interface {
	MessagePtr
	// WireMapKey returns the entry's key. A string key aliases the
	// entry's bytes (it is only compared, never kept, by Map).
	WireMapKey() K
	// WireSetMapKey sets the entry's key.
	WireSetMapKey(k K)
}

// Map is a map field: a view of its list of entry messages, which is kept
// in strictly ascending key order (false < true; integers by value;
// strings bytewise). That order is the iteration order of At and the order
// on the wire, so a map serializes deterministically. Lookups are binary
// searches (O(log n)); Entry and Delete insert and remove in place (O(n)).
//
// Get a Map from the generated GetX accessor, which loads a decoded map
// and checks its order once: a decoded map whose keys are not strictly
// ascending (duplicates included), or whose string keys are not valid
// UTF-8, is rejected with a *DecodeError. A Map value is valid until the
// arena's Reset or the next decode into its message (get it again then),
// like the list it views.
type Map[K MapKey, P MapEntry[K]] struct {
	l    *MessageList[P]
	newT func(*Arena) P
}

// LoadMap loads the map stored in l (decoding it on first use, with newT
// making entries) and, unless *checked, verifies its key order and sets
// *checked. Generated GetX accessors call it; the generated decode hook
// clears *checked whenever l is decoded again.
func LoadMap[K MapKey, P MapEntry[K]](a *Arena, l *MessageList[P], newT func(*Arena) P, checked *bool) (Map[K, P], error) {
	m := Map[K, P]{l: l, newT: newT}
	if err := l.Load(a, newT); err != nil {
		return m, err
	}
	if *checked {
		return m, nil
	}
	for i := range l.items {
		k := l.items[i].(P).WireMapKey()
		if s, ok := any(k).(string); ok && !utf8.ValidString(s) {
			return m, &DecodeError{Field: 1, Reason: "map key is not valid UTF-8", Err: ErrInvalidUTF8}
		}
		if i > 0 && keyCmp(l.items[i-1].(P).WireMapKey(), k) >= 0 {
			return m, malformed(0, 1, "map keys not in strictly ascending order")
		}
	}
	*checked = true
	return m, nil
}

// keyCmp orders map keys: -1, 0 or +1.
func keyCmp[K MapKey](a, b K) int {
	switch x := any(a).(type) {
	case bool:
		y := any(b).(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int32:
		return cmp3(x, any(b).(int32))
	case int64:
		return cmp3(x, any(b).(int64))
	case uint32:
		return cmp3(x, any(b).(uint32))
	case uint64:
		return cmp3(x, any(b).(uint64))
	case string:
		return cmp3(x, any(b).(string))
	}
	panic("unreachable")
}

func cmp3[T int32 | int64 | uint32 | uint64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Len is the number of entries (distinct keys).
func (m Map[K, P]) Len() int { return m.l.Len() }

// At returns entry i in ascending key order (0 <= i < Len()).
func (m Map[K, P]) At(i int) P { return m.l.items[i].(P) }

// search returns the index of k, or where it would be inserted.
func (m Map[K, P]) search(k K) (int, bool) {
	items := m.l.items
	i := sort.Search(len(items), func(i int) bool { return keyCmp(items[i].(P).WireMapKey(), k) >= 0 })
	return i, i < len(items) && keyCmp(items[i].(P).WireMapKey(), k) == 0
}

// Find returns the entry with key k and true, or the zero P and false.
func (m Map[K, P]) Find(k K) (P, bool) {
	if i, ok := m.search(k); ok {
		return m.l.items[i].(P), true
	}
	var zero P
	return zero, false
}

// Entry returns the entry with key k, inserting a new entry (key k, value
// unset) at its place in key order when there is none. The entry is made
// in the map's arena.
func (m Map[K, P]) Entry(k K) P {
	i, ok := m.search(k)
	if ok {
		return m.l.items[i].(P)
	}
	e := m.newT(m.l.a)
	e.WireSetMapKey(k)
	l := m.l
	l.items = grow(msgSlotType, l.a, l.items)
	copy(l.items[i+1:], l.items[i:len(l.items)-1])
	l.items[i] = e
	return e
}

// Delete removes the entry with key k and reports whether there was one.
func (m Map[K, P]) Delete(k K) bool {
	i, ok := m.search(k)
	if !ok {
		return false
	}
	l := m.l
	copy(l.items[i:], l.items[i+1:])
	l.items[len(l.items)-1] = nil
	l.items = l.items[:len(l.items)-1]
	return true
}

// Equal reports whether both maps hold equal entries by eq (both are in
// key order, so equal maps have equal lists).
func (m Map[K, P]) Equal(o Map[K, P], eq func(P, P) bool) bool { return m.l.Equal(o.l, eq) }

// List returns the list of entries the map views (in key order). Adding to
// it directly may break the key order; use Entry.
func (m Map[K, P]) List() *MessageList[P] { return m.l }

// MapStringKey returns the value of a string key field without checking
// or copying it (generated WireMapKey methods use it; LoadMap checks the
// keys' UTF-8).
func MapStringKey(s *String) string { return stringOf(s.b.data) }
