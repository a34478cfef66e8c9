package testmsg

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

var thresholds = []struct {
	name string
	thr  int
}{{"zerocopy", 0}, {"hybrid", wire.DefaultThreshold}, {"copy", wire.CopyAll}}

// TestRoundTripRandom builds random messages using every field kind and
// checks, in every threshold mode, that Flatten, SerializeSGA and Serialize
// agree, that decoding (from []byte and from a registered mem.Buf) gives an
// equal message, that re-serializing the decoded message gives it back, and
// that all references are released.
func TestRoundTripRandom(t *testing.T) {
	for _, mode := range thresholds {
		t.Run(mode.name, func(t *testing.T) {
			v := newValues(t)
			a := newArena(t, mode.thr)
			var sga wire.SGA
			for seed := range uint64(300) {
				r := rand.New(rand.NewPCG(seed, 42))
				m := randAllTypes(r, a, v)
				flat, err := wire.Flatten(m, nil)
				if err != nil {
					t.Fatalf("seed %d: Flatten: %v", seed, err)
				}
				sz := m.Sizes()
				if sz.Total() != len(flat) {
					t.Fatalf("seed %d: Sizes %+v, Flatten %d bytes", seed, sz, len(flat))
				}
				if mode.thr == wire.CopyAll && (sz.Entries != 0 || sz.ZeroCopy != 0) {
					t.Fatalf("seed %d: copy mode has zero-copy entries: %+v", seed, sz)
				}
				if err := wire.SerializeSGA(m, &sga); err != nil {
					t.Fatalf("seed %d: SerializeSGA: %v", seed, err)
				}
				if got := sga.AppendTo(nil); !bytes.Equal(got, flat) {
					t.Fatalf("seed %d: SGA differs from Flatten", seed)
				}
				if len(sga.Entries) != sz.Entries || sga.Len() != sz.Total() {
					t.Fatalf("seed %d: SGA has %d entries (%d bytes), Sizes %+v", seed, len(sga.Entries), sga.Len(), sz)
				}
				// Serialize with a sink.
				head := make([]byte, sz.Head())
				var s sink
				if err := m.Serialize(head, &s); err != nil || s.n != sz.Entries || s.bytes != sz.ZeroCopy || !bytes.Equal(head, flat[:sz.Head()]) {
					t.Fatalf("seed %d: Serialize: err %v entries %d/%d", seed, err, s.n, sz.Entries)
				}

				// Decode from the Go heap.
				d1 := NewAllTypes(a)
				if err := d1.DecodeBytes(bytes.Clone(flat)); err != nil {
					t.Fatalf("seed %d: DecodeBytes: %v", seed, err)
				}
				if !d1.Equal(m) || !m.Equal(d1) {
					t.Fatalf("seed %d: decoded message differs:\n got %v\nwant %v", seed, d1, m)
				}
				// Decode from registered memory.
				in := memtest.Alloc(t, v.pool, flat)
				d2 := NewAllTypes(a)
				if err := d2.Decode(in); err != nil {
					t.Fatalf("seed %d: Decode: %v", seed, err)
				}
				memtest.Release(t, in) // the arena holds its own reference
				if err := walk(d2); err != nil {
					t.Fatalf("seed %d: walk: %v", seed, err)
				}
				if !d2.Equal(m) {
					t.Fatalf("seed %d: decoded (Buf) message differs", seed)
				}
				if d2.String() != m.String() {
					t.Fatalf("seed %d: String differs:\n%s\n%s", seed, d2, m)
				}
				// Re-serialize the decoded message and decode it again.
				again, err := wire.Flatten(d2, nil)
				if err != nil {
					t.Fatalf("seed %d: Flatten(decoded): %v", seed, err)
				}
				if mode.thr == wire.CopyAll && !bytes.Equal(again, flat) {
					t.Fatalf("seed %d: copy mode re-serialization is not byte-identical", seed)
				}
				d3 := NewAllTypes(a)
				if err := d3.DecodeBytes(again); err != nil || !d3.Equal(m) {
					t.Fatalf("seed %d: second round trip: %v", seed, err)
				}
				if err := a.Reset(); err != nil {
					t.Fatalf("seed %d: Reset: %v", seed, err)
				}
				if a.Held() != 0 {
					t.Fatalf("arena holds %d references after Reset", a.Held())
				}
				v.release()
				memtest.AssertInUse(t, v.pool, 0)
			}
		})
	}
}

// TestHybridDecision checks the per-field copy/zero-copy rule at each threshold.
func TestHybridDecision(t *testing.T) {
	v := newValues(t)
	small := v.registered(bytes.Repeat([]byte{1}, 100))
	big := v.registered(bytes.Repeat([]byte{2}, 600))
	heapBig := bytes.Repeat([]byte{3}, 600)
	cases := []struct {
		thr     int
		val     []byte
		entries int
	}{
		{0, small, 1}, {0, big, 1}, {0, heapBig, 0},
		{512, small, 0}, {512, big, 1}, {512, heapBig, 0},
		{wire.CopyAll, small, 0}, {wire.CopyAll, big, 0}, {wire.CopyAll, heapBig, 0},
	}
	for _, c := range cases {
		a := newArena(t, c.thr)
		m := NewAllTypes(a)
		m.SetData(c.val)
		if got := m.Sizes().Entries; got != c.entries {
			t.Errorf("threshold %d, %d-byte value (registered %v): %d entries, want %d", c.thr, len(c.val), &c.val[0] != &heapBig[0], got, c.entries)
		}
		if c.entries == 1 && a.Held() != 1 {
			t.Errorf("threshold %d: arena holds %d references, want 1", c.thr, a.Held())
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	// A copied value is independent of the caller's memory.
	a := newArena(t, wire.DefaultThreshold)
	p := []byte("mutable")
	m := NewAllTypes(a)
	m.SetData(p)
	p[0] = 'X'
	if string(m.GetData()) != "mutable" {
		t.Errorf("copied value changed with the caller's memory: %q", m.GetData())
	}
	// SetBuf takes its own reference.
	b := v.registeredBuf(bytes.Repeat([]byte{4}, 1000))
	m.SetDataBuf(b)
	if b.Refs() != 2 {
		t.Errorf("after SetDataBuf refs = %d, want 2", b.Refs())
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if b.Refs() != 1 {
		t.Errorf("after Reset refs = %d, want 1", b.Refs())
	}
}

// TestStringUTF8 checks that invalid UTF-8 from the wire is reported, never
// returned as a valid string.
func TestStringUTF8(t *testing.T) {
	a := wire.NewArena()
	m := NewAllTypes(a)
	m.SetNameBytes([]byte{'o', 'k', 0xff})
	l := m.InitNames(2)
	l.Append("fine")
	l.AppendBytes([]byte{0xc3, 0x28})
	flat, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := NewAllTypes(a)
	if err := d.DecodeBytes(flat); err != nil {
		t.Fatal(err)
	}
	if s, err := d.GetName(); err != wire.ErrInvalidUTF8 || s != "" {
		t.Errorf("GetName = %q, %v; want ErrInvalidUTF8", s, err)
	}
	if got := d.GetNameBytes(); !bytes.Equal(got, []byte{'o', 'k', 0xff}) {
		t.Errorf("GetNameBytes = %q", got)
	}
	names, err := d.GetNames()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := names.At(0); err != nil || s != "fine" {
		t.Errorf("names[0] = %q, %v", s, err)
	}
	if _, err := names.At(1); err != wire.ErrInvalidUTF8 {
		t.Errorf("names[1] error = %v, want ErrInvalidUTF8", err)
	}
}

// TestCompat decodes each schema version with the other.
func TestCompat(t *testing.T) {
	v := newValues(t)
	a := newArena(t, wire.DefaultThreshold)
	v2 := NewItemV2(a)
	v2.SetId(77)
	v2.SetName("item")
	v2.SetData(v.registered(bytes.Repeat([]byte{9}, 700)))
	e := v2.InitExtra(2)
	e.Append(-1)
	e.Append(1 << 40)
	meta := v2.InitMeta()
	meta.SetId(5)
	meta.SetData([]byte("meta"))
	v2.SetScore(0)
	flat2, err := wire.Flatten(v2, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := NewItemV1(a)
	if err := old.DecodeBytes(flat2); err != nil {
		t.Fatalf("v1 decoding v2: %v", err)
	}
	if name, _ := old.GetName(); old.GetId() != 77 || name != "item" || !bytes.Equal(old.GetData(), v2.GetData()) {
		t.Errorf("v1 decoded %v from %v", old, v2)
	}
	// The old reader re-serializes what it knows (unknown fields dropped).
	flat1, err := wire.Flatten(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	nw := NewItemV2(a)
	if err := nw.DecodeBytes(flat1); err != nil {
		t.Fatalf("v2 decoding v1: %v", err)
	}
	if nw.GetId() != 77 || nw.HasExtra() || nw.HasMeta() || nw.HasScore() || !bytes.Equal(nw.GetData(), v2.GetData()) {
		t.Errorf("v2 decoded %v", nw)
	}
	if ex, err := nw.GetExtra(); err != nil || ex.Len() != 0 {
		t.Errorf("absent list: %v %v", ex, err)
	}
	if mt, err := nw.GetMeta(); err != nil || mt != nil {
		t.Errorf("absent nested: %v %v", mt, err)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
}

// TestSparseField checks field 1000 alone: a 32-word bitmap, one entry.
func TestSparseField(t *testing.T) {
	a := wire.NewArena()
	m := NewAllTypes(a)
	m.SetFar([]byte("x"))
	flat, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 + 4*32 + 8 + 1; len(flat) != want {
		t.Fatalf("len %d, want %d", len(flat), want)
	}
	fields, size, err := wire.ReadHeader(flat, nil)
	if err != nil || size != 4+4*32+8 || len(fields) != 1 || fields[0].Num != 1000 || fields[0].Lo() != 1 {
		t.Fatalf("ReadHeader: %v %d %v", fields, size, err)
	}
	d := NewAllTypes(a)
	if err := d.DecodeBytes(flat); err != nil || string(d.GetFar()) != "x" {
		t.Fatalf("decode: %v %q", err, d.GetFar())
	}
}
