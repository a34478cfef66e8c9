package wireimpl

import (
	"encoding/binary"
	"math"
)

// Scalar is the element type of a list of scalars. Enums are int32;
// sint/sfixed types use their int type, fixed types their uint type.
type Scalar interface {
	bool | int32 | int64 | uint32 | uint64 | float32 | float64
}

var (
	boolType    = NewType[bool]()
	int32Type   = NewType[int32]()
	int64Type   = NewType[int64]()
	uint32Type  = NewType[uint32]()
	float32Type = NewType[float32]()
	float64Type = NewType[float64]()
)

func scalarType[T Scalar]() *Type[T] {
	var z T
	var t any
	switch any(z).(type) {
	case bool:
		t = boolType
	case int32:
		t = int32Type
	case int64:
		t = int64Type
	case uint32:
		t = uint32Type
	case uint64:
		t = uint64Type
	case float32:
		t = float32Type
	case float64:
		t = float64Type
	}
	return t.(*Type[T])
}

// scalarWidth is the wire width of one list element: 1 (bool), 4 (32-bit
// types) or 8 (64-bit types).
func scalarWidth[T Scalar]() int {
	var z T
	switch any(z).(type) {
	case bool:
		return 1
	case int32, uint32, float32:
		return 4
	}
	return 8
}

// ScalarList is a repeated scalar field, packed on the wire at its natural
// width (1, 4 or 8 bytes per element, little-endian, no padding).
type ScalarList[T Scalar] struct {
	a     *Arena
	items []T
	lz    lazy
	zc    Bytes // items view memory outside the arena (packed.go)
}

// Init makes the list empty with room for n elements.
func (l *ScalarList[T]) Init(a *Arena, n int) {
	l.a = a
	l.items = scalarType[T]().newSliceRaw(a, max(n, 0))[:0]
	l.lz, l.zc = lazy{}, Bytes{}
}

// Load binds the list to a and decodes a decoded list (once; see
// BytesList.Load for ErrArenaReset).
func (l *ScalarList[T]) Load(a *Arena) error {
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
	items, ok := scalarType[T]().tryNewSlice(l.a, int(z.n))
	if !ok {
		return limitErr(int(z.off), z.field())
	}
	raw := z.src.data[z.off : int(z.off)+len(items)*scalarWidth[T]()]
	decodeScalars(items, raw)
	l.items = items
	*z = lazy{}
	return nil
}

func decodeScalars[T Scalar](items []T, raw []byte) {
	le := binary.LittleEndian
	switch s := any(items).(type) {
	case []bool:
		for i := range s {
			s[i] = raw[i] != 0
		}
	case []int32:
		for i := range s {
			s[i] = int32(le.Uint32(raw[4*i:]))
		}
	case []uint32:
		for i := range s {
			s[i] = le.Uint32(raw[4*i:])
		}
	case []float32:
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case []int64:
		for i := range s {
			s[i] = int64(le.Uint64(raw[8*i:]))
		}
	case []uint64:
		for i := range s {
			s[i] = le.Uint64(raw[8*i:])
		}
	case []float64:
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	}
}

func encodeScalars[T Scalar](raw []byte, items []T) {
	le := binary.LittleEndian
	switch s := any(items).(type) {
	case []bool:
		for i, v := range s {
			raw[i] = 0
			if v {
				raw[i] = 1
			}
		}
	case []int32:
		for i, v := range s {
			le.PutUint32(raw[4*i:], uint32(v))
		}
	case []uint32:
		for i, v := range s {
			le.PutUint32(raw[4*i:], v)
		}
	case []float32:
		for i, v := range s {
			le.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	case []int64:
		for i, v := range s {
			le.PutUint64(raw[8*i:], uint64(v))
		}
	case []uint64:
		for i, v := range s {
			le.PutUint64(raw[8*i:], v)
		}
	case []float64:
		for i, v := range s {
			le.PutUint64(raw[8*i:], math.Float64bits(v))
		}
	}
}

// Len is the number of elements.
func (l *ScalarList[T]) Len() int {
	if l.lz.src != nil {
		return int(l.lz.n)
	}
	return len(l.items)
}

// At returns element i.
func (l *ScalarList[T]) At(i int) T { return l.items[i] }

// SetAt replaces element i.
func (l *ScalarList[T]) SetAt(i int, v T) {
	if l.zc.data != nil {
		l.detach() // packed.go
	}
	l.items[i] = v
}

// Append adds v.
func (l *ScalarList[T]) Append(v T) {
	if l.zc.data != nil {
		l.detach() // packed.go
	}
	l.items = grow(scalarType[T](), l.a, l.items)
	l.items[len(l.items)-1] = v
}

// Slice returns the elements; the slice aliases arena memory, or for a
// zero-copy list (IsZeroCopy, SetBuf) registered memory or the decoded
// input, which must not be modified (valid until Reset).
func (l *ScalarList[T]) Slice() []T { return l.items }

// Truncate shortens the list to n elements (panics when n > Len()).
func (l *ScalarList[T]) Truncate(n int) {
	if l.zc.data != nil {
		l.detach() // packed.go
	}
	l.items = truncate(l.items, n)
}

// Equal reports whether both lists hold the same elements, comparing
// floats by their bits (NaN equals the same NaN; -0 differs from +0).
func (l *ScalarList[T]) Equal(o *ScalarList[T]) bool {
	if len(l.items) != len(o.items) {
		return false
	}
	for i := range l.items {
		if !scalarEqual(l.items[i], o.items[i]) {
			return false
		}
	}
	return true
}

func scalarEqual[T Scalar](x, y T) bool {
	switch xv := any(x).(type) {
	case float32:
		return math.Float32bits(xv) == math.Float32bits(any(y).(float32))
	case float64:
		return math.Float64bits(xv) == math.Float64bits(any(y).(float64))
	}
	return x == y
}

// EqualFloat32 compares by bits (the rule generated Equal methods use).
func EqualFloat32(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }

// EqualFloat64 compares by bits (the rule generated Equal methods use).
func EqualFloat64(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
