package testmsg

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// decodeAndUse decodes p (from a registered copy when reg is set), reads
// every field and re-serializes, returning the first error. It must never
// panic, and the arena must not grow beyond what the input justifies.
func decodeAndUse(t testing.TB, v *values, a *wire.Arena, p []byte, reg bool) error {
	t.Helper()
	grown := a.Grown()
	m := NewAllTypes(a)
	var err error
	if reg && len(p) > 0 {
		in := memtest.Alloc(t, v.pool, p)
		err = m.Decode(in)
		memtest.Release(t, in)
	} else {
		err = m.DecodeBytes(p)
	}
	if err == nil {
		err = walk(m)
	}
	if err == nil {
		_, err = wire.Flatten(m, nil)
	}
	if g := a.Grown() - grown; g > 1<<20+256*len(p) {
		t.Errorf("input of %d bytes grew the arena by %d bytes", len(p), g)
	}
	if err != nil && !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrInvalidUTF8) {
		t.Errorf("error %v is neither ErrMalformed nor ErrInvalidUTF8", err)
	}
	if rerr := a.Reset(); rerr != nil {
		t.Fatalf("Reset: %v", rerr)
	}
	return err
}

func validSample(t testing.TB, v *values, a *wire.Arena) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	for {
		m := randAllTypes(r, a, v)
		if kids, _ := m.GetKids(); kids.Len() == 0 || !m.HasChild() || !m.HasBlobs() || !m.HasRI64() {
			continue
		}
		flat, err := wire.Flatten(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		return flat
	}
}

// TestHostileTruncated decodes every prefix of a valid message.
func TestHostileTruncated(t *testing.T) {
	v := newValues(t)
	a := newArena(t, wire.DefaultThreshold)
	flat := validSample(t, v, a)
	if err := decodeAndUse(t, v, a, flat, true); err != nil {
		t.Fatalf("valid sample: %v", err)
	}
	fails := 0
	for n := range len(flat) {
		if decodeAndUse(t, v, a, flat[:n], n%2 == 0) != nil {
			fails++
		}
	}
	if fails == 0 {
		t.Error("no truncation was detected")
	}
}

// TestHostileWords overwrites every u32 of a valid message with hostile
// values (huge, just out of range, pointing backwards, zero).
func TestHostileWords(t *testing.T) {
	v := newValues(t)
	a := newArena(t, wire.DefaultThreshold)
	flat := validSample(t, v, a)
	vals := []uint32{0, 1, 3, 4, 7, 8, math.MaxUint32, math.MaxUint32 - 3, 1 << 31, 1 << 28, uint32(len(flat)), uint32(len(flat) + 1), uint32(len(flat) - 1), wire.MaxBitmapWords + 1}
	p := make([]byte, len(flat))
	errs := 0
	for off := 0; off+4 <= len(flat) && off < 4096; off += 4 {
		for _, x := range vals {
			copy(p, flat)
			binary.LittleEndian.PutUint32(p[off:], x)
			if decodeAndUse(t, v, a, p, false) != nil {
				errs++
			}
		}
	}
	if errs == 0 {
		t.Error("no corruption was detected")
	}
}

// header builds a message header with the given (field, lo, hi) entries.
func header(fields ...[3]uint32) []byte {
	hf := make([]wire.HeaderField, len(fields))
	for i, f := range fields {
		hf[i] = wire.HeaderField{Num: int(f[0]), Entry: uint64(f[1]) | uint64(f[2])<<32}
	}
	p, err := wire.AppendHeader(nil, hf)
	if err != nil {
		panic(err)
	}
	return p
}

func TestHostileCrafted(t *testing.T) {
	v := newValues(t)
	a := newArena(t, wire.DefaultThreshold)
	// deep: Inner.child chains nested far beyond MaxDepth (AllTypes.child = 33, Inner.child = 4).
	deep := func(levels int) []byte {
		// The root (field 33 needs a 2-word bitmap: 20 bytes), then levels
		// Inner headers of 16 bytes, each with one entry pointing right after it.
		const rh, ih = 4 + 8 + 8, 4 + 4 + 8
		total := rh + ih*levels
		p := header([3]uint32{33, uint32(total - rh), rh})
		for i := range levels {
			start := rh + ih*i
			if i == levels-1 {
				p = append(p, header([3]uint32{1, 5, 0})...) // id = 5
				break
			}
			p = append(p, header([3]uint32{4, uint32(total - start - ih), uint32(start + ih)})...)
		}
		return p
	}
	cases := []struct {
		name string
		p    []byte
		ok   bool
	}{
		{"empty", nil, false},
		{"empty message", []byte{0, 0, 0, 0}, true},
		{"trailing zero bitmap words", append([]byte{2, 0, 0, 0}, make([]byte, 8)...), true},
		{"bitmap too large", []byte{0xff, 0xff, 0, 0}, false},
		{"bytes out of range", header([3]uint32{15, 10, 1 << 20}), false},
		{"empty bytes, offset ignored", header([3]uint32{15, 0, math.MaxUint32}), true},
		{"bytes size overflow", header([3]uint32{15, math.MaxUint32, 16}), false},
		{"huge list count", header([3]uint32{22, 1 << 27, 16}), false},
		{"list count over MaxListLen", header([3]uint32{25, math.MaxUint32, 16}), false},
		{"list overlapping the fixed part", header([3]uint32{24, 1, 4}), false},
		{"nested pointing at itself", header([3]uint32{33, 16, 0}), false},
		{"nested smaller than a header", append(header([3]uint32{33, 2, 16}), 0, 0), false},
		{"message list huge count", header([3]uint32{32, 1 << 26, 16}), false},
		{"deep nesting within limit", deep(wire.MaxDepth - 1), true},
		{"deep nesting beyond MaxDepth", deep(wire.MaxDepth + 5), false},
		{"very deep nesting", deep(10000), false},
	}
	for _, c := range cases {
		err := decodeAndUse(t, v, a, c.p, false)
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok=%v", c.name, err, c.ok)
		}
		if c.name == "very deep nesting" && !errors.Is(err, wire.ErrTooDeep) {
			t.Errorf("%s: err = %v, want ErrTooDeep", c.name, err)
		}
		var de *wire.DecodeError
		if err != nil && errors.Is(err, wire.ErrMalformed) && !errors.As(err, &de) {
			t.Errorf("%s: %v is not a *DecodeError", c.name, err)
		}
	}
}

// TestHostileNoAllocation checks that a huge claimed count allocates nothing.
func TestHostileNoAllocation(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages")
	}
	a := wire.NewArena()
	p := header([3]uint32{22, 1 << 27, 16})
	allocs := testing.AllocsPerRun(100, func() {
		m := NewAllTypes(a)
		if err := m.DecodeBytes(p); err == nil {
			t.Fatal("accepted")
		}
		_ = a.Reset()
	})
	if allocs > 1 { // the *DecodeError
		t.Errorf("%v allocations per hostile decode", allocs)
	}
}

// TestHostileLazyErrorsNameField checks that errors found when a list is
// first accessed (not when its message was decoded) name the list's field,
// as the decoder's own errors do.
func TestHostileLazyErrorsNameField(t *testing.T) {
	le := func(p []byte, v ...uint32) []byte {
		for _, x := range v {
			p = binary.LittleEndian.AppendUint32(p, x)
		}
		return p
	}
	// One list field whose region starts right after its 16-byte header.
	list := func(num, count uint32) []byte { return header([3]uint32{num, count, 16}) }
	i64s := append(list(25, 1000), make([]byte, 8000)...)
	cases := []struct {
		name   string
		field  uint32
		p      []byte
		limit  int
		access func(m *AllTypes) error
		reason string
		cause  error
	}{
		{"bytes element out of range", 22, le(list(22, 1), 10, 1<<20), 0,
			func(m *AllTypes) error { _, err := m.GetBlobs(); return err }, "list element out of range", wire.ErrMalformed},
		{"string element out of range", 23, le(list(23, 1), 10, 1<<20), 0,
			func(m *AllTypes) error { _, err := m.GetNames(); return err }, "list element out of range", wire.ErrMalformed},
		// Two elements: the decoder checks the last one (an empty message
		// at 32), the first points back into the entries.
		{"message element out of order", 32, le(list(32, 2), 4, 0, 4, 32, 0), 0,
			func(m *AllTypes) error { _, err := m.GetKids(); return err }, "list element header out of order or out of range", wire.ErrMalformed},
		{"scalar list over the arena limit", 25, i64s, 4096,
			func(m *AllTypes) error { _, err := m.GetRI64(); return err }, "materializing", wire.ErrArenaLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newArena(t, wire.DefaultThreshold)
			_ = a.Reset() // an epoch that the lazy record packs next to the field number
			a.Limit = c.limit
			m := NewAllTypes(a)
			if err := m.DecodeBytes(c.p); err != nil {
				t.Fatalf("decode: %v (the error must wait for the first access)", err)
			}
			err := c.access(m)
			var de *wire.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, c.cause) {
				t.Fatalf("access: err = %v, want a *DecodeError with %v", err, c.cause)
			}
			want := int(c.field)
			if de.Field != want || de.Reason != c.reason {
				t.Errorf("access: field %d, reason %q; want field %d, reason %q", de.Field, de.Reason, want, c.reason)
			}
			// The list stays pending: a second access reports the same.
			if err2 := c.access(m); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("second access: %v, want %v again", err2, err)
			}
		})
	}
}

// TestUseAfterReset: a message kept past its arena's Reset is refused
// (ErrArenaReset) when it is sized, serialized or decoded into, instead of
// serializing whatever the arena made of its memory since. Outside the
// checked build the check holds until the arena hands that memory out
// again; in it (mem.Checked), always.
func TestUseAfterReset(t *testing.T) {
	a := newArena(t, wire.DefaultThreshold)
	old := NewItemV1(a)
	old.SetId(3)
	old.SetName("old")
	_ = a.Reset()
	check := func(when string) {
		t.Helper()
		if _, err := wire.Flatten(old, nil); !errors.Is(err, wire.ErrArenaReset) {
			t.Errorf("%s: Flatten: %v, want ErrArenaReset", when, err)
		}
		if err := old.Serialize(make([]byte, old.Sizes().Head()), nil); !errors.Is(err, wire.ErrArenaReset) {
			t.Errorf("%s: Serialize: %v, want ErrArenaReset", when, err)
		}
		if err := old.DecodeBytes([]byte{0, 0, 0, 0}); !errors.Is(err, wire.ErrArenaReset) {
			t.Errorf("%s: DecodeBytes: %v, want ErrArenaReset", when, err)
		}
	}
	check("after Reset")
	if !mem.Checked {
		return // the next message takes old's memory: nothing left to tell them apart
	}
	fresh := NewItemV1(a)
	fresh.SetId(9)
	check("after a new message in the arena")
	if p, err := wire.Flatten(fresh, nil); err != nil || len(p) == 0 {
		t.Errorf("the new message: %v", err)
	}
}

// TestUseAfterResetNested: a message kept past its arena's Reset is refused
// (ErrArenaReset) also when it is reached through a fresh message, as a
// nested field, a list element or deeper: sizing checks every nested
// message before it walks it, instead of sizing and serializing whatever
// the arena made of the old message's memory since. A fresh message
// attached after the Reset is fine. The stale message is built or decoded
// after a few others of its type, so that the fresh ones made after the
// Reset (which take the first slots of the arena's memory for the type
// outside the checked build) never share its memory.
func TestUseAfterResetNested(t *testing.T) {
	kinds := []struct {
		name string
		make func(t *testing.T, a *wire.Arena) *Inner // before the Reset
	}{
		{"built", func(t *testing.T, a *wire.Arena) *Inner {
			old := NewInner(a)
			old.SetId(3)
			old.SetData([]byte("old data"))
			old.InitTags(1).Append("old tag")
			old.InitChild().SetId(4)
			return old
		}},
		{"decoded", func(t *testing.T, a *wire.Arena) *Inner {
			src := NewAllTypes(wire.NewArena())
			c := src.InitChild()
			c.SetId(3)
			c.SetData([]byte("old data"))
			c.InitTags(1).Append("old tag")
			c.InitChild().SetId(4)
			flat, err := wire.Flatten(src, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := NewAllTypes(a)
			if err := m.DecodeBytes(flat); err != nil {
				t.Fatal(err)
			}
			old, err := m.GetChild() // its tags and child stay lazy
			if err != nil {
				t.Fatal(err)
			}
			return old
		}},
	}
	cases := []struct {
		name   string
		attach func(a *wire.Arena, old *Inner) *AllTypes // after the Reset
		want   error
	}{
		{"nested field", func(a *wire.Arena, old *Inner) *AllTypes {
			m := NewAllTypes(a)
			m.SetChild(old)
			return m
		}, wire.ErrArenaReset},
		{"list element", func(a *wire.Arena, old *Inner) *AllTypes {
			m := NewAllTypes(a)
			k := m.InitKids(2)
			k.Append(NewInner(a))
			k.Append(old)
			return m
		}, wire.ErrArenaReset},
		{"grandchild", func(a *wire.Arena, old *Inner) *AllTypes {
			m := NewAllTypes(a)
			m.InitChild().SetChild(old)
			return m
		}, wire.ErrArenaReset},
		{"grandchild in a list", func(a *wire.Arena, old *Inner) *AllTypes {
			m := NewAllTypes(a)
			kid := NewInner(a)
			kid.SetChild(old)
			m.InitKids(1).Append(kid)
			return m
		}, wire.ErrArenaReset},
		{"fresh nested messages", func(a *wire.Arena, _ *Inner) *AllTypes {
			m := NewAllTypes(a)
			c := m.InitChild()
			c.SetId(5)
			c.InitChild().SetData([]byte("new data"))
			kid := NewInner(a)
			kid.InitTags(1).Append("new tag")
			m.InitKids(1).Append(kid)
			return m
		}, nil},
	}
	for _, k := range kinds {
		for _, c := range cases {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				a := newArena(t, wire.DefaultThreshold)
				for range 4 {
					NewInner(a)
				}
				old := k.make(t, a)
				_ = a.Reset()
				m := c.attach(a, old)
				check := func(when string) {
					t.Helper()
					p, err := wire.Flatten(m, nil)
					if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
						t.Fatalf("%s: Flatten: %v, want %v", when, err, c.want)
					}
					if err := m.Serialize(make([]byte, m.Sizes().Head()), &wire.SGA{}); !errors.Is(err, c.want) {
						t.Errorf("%s: Serialize: %v, want %v", when, err, c.want)
					}
					if err := wire.SerializeSGA(m, &wire.SGA{}); !errors.Is(err, c.want) {
						t.Errorf("%s: SerializeSGA: %v, want %v", when, err, c.want)
					}
					if c.want != nil {
						return
					}
					d := NewAllTypes(wire.NewArena())
					if err := d.DecodeBytes(p); err != nil || !d.Equal(m) {
						t.Errorf("%s: round trip: %v, %v want %v", when, err, d, m)
					}
				}
				check("after Reset")
				// More messages and copied bytes in the arena: outside the
				// checked build they reuse the old message's bytes and lists.
				for range 2 {
					x := NewAllTypes(a)
					x.SetData([]byte("reused bytes"))
					x.InitNames(1).Append("reused")
					x.InitKids(2)
				}
				check("after new messages in the arena")
			})
		}
	}
}

// TestUseAfterResetLazy: a list or nested message of a decoded message
// that is first accessed after the arena's Reset is refused with
// ErrArenaReset (the error of the field's getter, like a lazy decode
// error) instead of being decoded from the released input, also after the
// arena decoded a new input since.
func TestUseAfterResetLazy(t *testing.T) {
	src := NewAllTypes(wire.NewArena())
	src.InitChild().SetId(7)
	src.InitKids(1).Append(NewInner((*wire.Arena)(src.WireCore().Arena())))
	src.InitBlobs(1).Append([]byte("blob"))
	src.InitNames(1).Append("name")
	src.InitRI64(1).Append(9)
	flat, err := wire.Flatten(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		access func(m *AllTypes) error
	}{
		{"nested message", func(m *AllTypes) error { _, err := m.GetChild(); return err }},
		{"list of messages", func(m *AllTypes) error { _, err := m.GetKids(); return err }},
		{"list of bytes", func(m *AllTypes) error { _, err := m.GetBlobs(); return err }},
		{"list of strings", func(m *AllTypes) error { _, err := m.GetNames(); return err }},
		{"list of scalars", func(m *AllTypes) error { _, err := m.GetRI64(); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newArena(t, wire.DefaultThreshold)
			NewAllTypes(a) // fresh, made after the Reset, takes this one's memory
			m := NewAllTypes(a)
			if err := m.DecodeBytes(flat); err != nil {
				t.Fatal(err)
			}
			_ = a.Reset()
			if err := c.access(m); !errors.Is(err, wire.ErrArenaReset) {
				t.Errorf("after Reset: %v, want ErrArenaReset", err)
			}
			// A new decode takes the arena's record of the old input.
			fresh := NewAllTypes(a)
			if err := fresh.DecodeBytes(flat); err != nil {
				t.Fatal(err)
			}
			if err := c.access(m); !errors.Is(err, wire.ErrArenaReset) {
				t.Errorf("after a new decode: %v, want ErrArenaReset", err)
			}
			if err := c.access(fresh); err != nil {
				t.Errorf("the new message: %v", err)
			}
		})
	}
}
