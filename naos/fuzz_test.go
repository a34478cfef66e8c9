package naos

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

var fuzzLimits = Limits{MaxBytes: 1 << 20, MaxElems: 1 << 16}

func fuzzSeeds(f *testing.F) {
	shared := &node{V: 3}
	cyc := &node{V: 1, Kids: []*node{shared, shared}}
	cyc.Next = cyc
	for _, s := range []struct {
		v any
		o Options
	}{
		{everything(), Options{}},
		{everything(), Options{Sharing: true}},
		{[]*Pair{{1, "a"}, nil, {2, "b"}}, Options{Compact: true}},
		{[]*Pair{{1, "a"}, nil, {2, "b"}}, Options{}},
		{[]*Pair{{1, "a"}, nil, {2, "b"}}, Options{asIs: true}},
		{[]*Pair{{1, "a"}, nil, {2, "b"}}, Options{Compact: true, asIs: true}},
		{[]*Pair{{1, string(make([]byte, 200))}, {2, ""}}, Options{}},
		{cyc, Options{Sharing: true}},
		{map[string][]int{"k": {1, 2}}, Options{}},
		{[]Point{{1, 2}}, Options{}},
		{[]float32{1, 2, 3}, Options{}},
		{randGenerated(newRand(1), 0), Options{}},
	} {
		msg, err := AppendEncode(nil, s.v, s.o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg)
	}
}

// FuzzDecode feeds arbitrary bytes to the receiver, as every root type of
// the seeds: it must return a value or an error, never panic, hang or
// allocate beyond its limits.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		try := func(err error) {
			var me *MismatchError
			if err != nil && !errors.Is(err, ErrFormat) && !errors.As(err, &me) {
				t.Fatalf("unexpected error type: %v", err)
			}
		}
		_, err := Decode[Everything](msg, fuzzLimits)
		try(err)
		_, err = Decode[[]*Pair](msg, fuzzLimits)
		try(err)
		_, err = Decode[*node](msg, fuzzLimits)
		try(err)
		_, err = Decode[map[string][]int](msg, fuzzLimits)
		try(err)
		_, err = Decode[*Generated](msg, fuzzLimits)
		try(err)
		_, err = Decode[[]float32](msg, fuzzLimits)
		try(err)
		// Whatever decodes must encode again (with sharing detection: a
		// message with the sharing flag may have built a cycle).
		if v, err := Decode[*Generated](msg, fuzzLimits); err == nil {
			if _, err := AppendEncode(nil, v, Options{Sharing: true, Limits: fuzzLimits}); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
	})
}

func TestHostile(t *testing.T) {
	good, _ := AppendEncode(nil, []*Pair{{1, "abc"}}, Options{asIs: true}) // flat objects as they are
	patch := func(off int, word uint64) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint64(b[off:], word)
		return b
	}
	hl := headerSize + len("[]*naos.Pair")
	for name, msg := range map[string][]byte{
		"empty":        nil,
		"bad magic":    append([]byte("XXXX"), good[4:]...),
		"truncated":    good[:len(good)-2],
		"huge length":  patch(hl+8, 1<<62),  // slice length
		"len > data":   patch(hl+8, 1000),   // more elements than bytes
		"huge string":  patch(hl+48, 1<<40), // Pair.Val's length
		"data length":  patch(16, 1<<50),    // header's data length
		"short length": patch(16, 10),       // header's data length too small
	} {
		if _, err := Decode[[]*Pair](msg, Limits{}); err == nil || !errors.Is(err, ErrFormat) && name != "empty" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Packed flat objects (flagDense): the slice header (24 bytes), the
	// pointer array (8), Key (4), the string's length (a uvarint), "abc".
	dense, _ := AppendEncode(nil, []*Pair{{1, "abc"}}, Options{})
	if len(dense) != hl+40 || dense[hl+36] != 3 || string(dense[hl+37:]) != "abc" {
		t.Fatalf("dense message % x", dense[hl:])
	}
	edit := func(off int, b ...byte) []byte {
		return append(append(append([]byte(nil), dense[:off]...), b...), dense[off+len(b):]...)
	}
	cut := func(off int, tail ...byte) []byte {
		m := append(append([]byte(nil), dense[:off]...), tail...)
		binary.LittleEndian.PutUint64(m[16:], uint64(len(m)-hl))
		return m
	}
	for name, msg := range map[string][]byte{
		"len > data": edit(hl+8, 100), // 100 elements, 32 bytes of pointers
		"many objects": func() []byte {
			m := cut(hl+24, make([]byte, 8*64)...)
			m[hl+8] = 64
			m[hl+16] = 64
			for i := 0; i < 64; i++ {
				m[hl+24+8*i] = 1
			}
			return m
		}(), // 64 non-nil pointers, no objects
		"string > data":     edit(hl+36, 4),                                                         // 4 bytes of string, 3 follow
		"long string":       cut(hl+36, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), // 2^63
		"overflow":          cut(hl+36, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), // 70 bits
		"unended length":    cut(hl+36, 0x80),
		"huge string":       cut(hl+36, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), // 2^35
		"no length":         cut(hl + 36),
		"header says more":  patch2(dense, 16, 41),
		"header says less":  patch2(dense, 16, 39),
		"sharing and dense": edit(5, flagDense|flagSharing),
	} {
		if _, err := Decode[[]*Pair](msg, Limits{}); !errors.Is(err, ErrFormat) {
			t.Errorf("dense, %s: %v", name, err)
		}
	}
	// An invalid bool.
	b, _ := AppendEncode(nil, []bool{true}, Options{})
	b[len(b)-1] = 7
	if _, err := Decode[[]bool](b, Limits{}); !errors.Is(err, ErrFormat) {
		t.Errorf("bool: %v", err)
	}
	// An unregistered interface type id.
	b, _ = AppendEncode(nil, []Shape{Rect{1, 2}}, Options{})
	hl = headerSize + len("[]naos.Shape")
	binary.LittleEndian.PutUint64(b[hl+24+16:], 12345)
	if _, err := Decode[[]Shape](b, Limits{}); !errors.Is(err, ErrFormat) {
		t.Errorf("type id: %v", err)
	}
	// A registered type that does not implement the interface.
	type noArea struct{ X int }
	_ = Register(noArea{})
	b, _ = AppendEncode(nil, []any{noArea{1}}, Options{})
	c := append([]byte(nil), b...)
	c = append(c[:0:0], c...)
	copy(c[headerSize:], "[]naos.Shape") // same length as "[]interface {}"? the name does not matter
	binary.LittleEndian.PutUint64(c[8:], mustPlan[[]Shape]().fp)
	if _, err := Decode[[]Shape](c, Limits{}); !errors.Is(err, ErrFormat) {
		t.Errorf("implements: %v", err)
	}
	// Limits: a value over MaxBytes is refused before it is allocated.
	big, _ := AppendEncode(nil, make([]float64, 1000), Options{})
	if _, err := Decode[[]float64](big, Limits{MaxBytes: 4000}); !errors.Is(err, ErrFormat) {
		t.Errorf("limit: %v", err)
	}
	if _, err := Decode[[]float64](big, Limits{MaxElems: 999}); !errors.Is(err, ErrFormat) {
		t.Errorf("elems: %v", err)
	}
}

// patch2 returns a copy of msg with the 8-byte word at off set.
func patch2(msg []byte, off int, word uint64) []byte {
	b := append([]byte(nil), msg...)
	binary.LittleEndian.PutUint64(b[off:], word)
	return b
}

func mustPlan[T any]() *plan {
	p, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		panic(err)
	}
	return p
}
