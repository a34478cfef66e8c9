package cf_test

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// The generated Decode<Msg>(a, b) functions make the message and decode
// into it (New and Decode fused, with the fast start and without the
// message's own checks). These tests hold them to the Decoder path
// (wire.Decode into a message made by New) on valid, truncated, corrupted
// and fuzzed inputs from registered memory, under every threshold and with
// or without BorrowInput, for the batch's first input (the inlined start)
// and a second one (BeginDecode).

type fusedCase struct {
	name string
	run  func(a *wire.Arena, b mem.Buf) fusedResult
}

// fusedResult: x decoded from b with Decode<Msg> (error errX), y with
// wire.Decode into a new message (errY); eq compares them (nil when
// Decode<Msg> broke its contract, described by errX).
type fusedResult struct {
	x, y       wire.Msg
	errX, errY error
	eq         func() bool
}

func fusedOf[T interface {
	wire.Msg
	Equal(T) bool
	comparable
}](name string, dec func(*wire.Arena, mem.Buf) (T, error), mk func(*wire.Arena) T) fusedCase {
	return fusedCase{name, func(a *wire.Arena, b mem.Buf) fusedResult {
		x, errX := dec(a, b)
		y := mk(a)
		errY := wire.Decode(y, b)
		var zero T
		if errX != nil && x != zero {
			return fusedResult{x, y, errors.New("Decode<Msg> returned a message with its error " + errX.Error()), errY, nil}
		}
		// A list is loaded lazily: when its elements are out of range both
		// fail at access, with the same error in String.
		return fusedResult{x, y, errX, errY, func() bool { return x.Equal(y) || x.String() == y.String() }}
	}}
}

var fusedCases = []fusedCase{
	fusedOf("SingleBuffer", cf.DecodeSingleBuffer, cf.NewSingleBuffer),
	fusedOf("ListBuffers", cf.DecodeListBuffers, cf.NewListBuffers),
	fusedOf("Tree1", cf.DecodeTree1, cf.NewTree1),
	fusedOf("Tree2", cf.DecodeTree2, cf.NewTree2),
	fusedOf("Tree5", cf.DecodeTree5, cf.NewTree5),
}

// checkFusedDecode decodes p, copied into registered memory of pool (the
// zero Buf when p is empty), twice per batch with each Decode<Msg> and
// with the Decoder path, and fails unless they agree: the same error text
// (and no message from Decode<Msg>), or equal messages. Every reference
// returns at Reset.
func checkFusedDecode(t *testing.T, pool *mem.Pool, p []byte, limit, thr int, borrow bool) {
	t.Helper()
	var b mem.Buf
	if len(p) != 0 {
		b = memtest.Alloc(t, pool, p)
		defer memtest.Release(t, b)
	}
	for _, c := range fusedCases {
		a := wire.NewArena()
		a.Limit, a.Threshold, a.BorrowInput = limit, thr, borrow
		for i := range 2 { // the batch's first input (the inlined start), then a second
			r := c.run(a, b)
			x, y, errX, errY, eq := r.x, r.y, r.errX, r.errY, r.eq
			switch {
			case eq == nil:
				t.Fatalf("%s, input %d: %v", c.name, i, errX)
			case (errX == nil) != (errY == nil):
				t.Fatalf("%s, input %d: Decode<Msg> error %v, Decoder path error %v", c.name, i, errX, errY)
			case errX != nil && errX.Error() != errY.Error():
				t.Fatalf("%s, input %d: Decode<Msg> error %q, Decoder path error %q", c.name, i, errX, errY)
			case errX == nil && !eq():
				t.Fatalf("%s, input %d: Decode<Msg> and Decoder path differ:\n%s\n%s", c.name, i, x, y)
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if a.Held() != 0 || (!b.IsZero() && b.Refs() != 1) {
			t.Fatalf("%s: after Reset the arena holds %d references, the input has %d", c.name, a.Held(), b.Refs())
		}
	}
}

// TestFusedDecodeMatchesDecoder compares Decode<Msg> with the Decoder path
// on valid messages, every truncation of them and single-byte corruptions,
// at thresholds below, between and above the values' sizes, borrowing the
// input or not.
func TestFusedDecodeMatchesDecoder(t *testing.T) {
	pool := memtest.NewPool(t)
	for _, p := range directDecodeSeeds(t) {
		for _, thr := range []int{0, 4, wire.DefaultThreshold, wire.CopyAll} {
			for _, borrow := range []bool{false, true} {
				for n := 0; n <= len(p); n++ {
					checkFusedDecode(t, pool, p[:n], 0, thr, borrow)
				}
			}
		}
		q := make([]byte, len(p))
		for i := range p {
			for _, v := range []byte{0, 1, 4, 0x7f, 0xff} {
				copy(q, p)
				q[i] = v
				checkFusedDecode(t, pool, q, 0, 4, false)
				checkFusedDecode(t, pool, q, 1, 0, true) // the arena Limit (every nested message over it)
			}
		}
	}
}

// TestFusedDecodeRefusals: a nil arena is ErrNoArena and the zero Buf is
// Decode's error, with no message.
func TestFusedDecodeRefusals(t *testing.T) {
	if x, err := cf.DecodeSingleBuffer(nil, mem.Buf{}); x != nil || !errors.Is(err, wire.ErrNoArena) {
		t.Errorf("DecodeSingleBuffer(nil, …) = %v, %v; want nil, ErrNoArena", x, err)
	}
	if x, err := cf.DecodeTree5(nil, mem.Buf{}); x != nil || !errors.Is(err, wire.ErrNoArena) {
		t.Errorf("DecodeTree5(nil, …) = %v, %v; want nil, ErrNoArena", x, err)
	}
	a := wire.NewArena()
	defer a.Reset()
	// The zero Buf: what Decode reports for it.
	x, errX := cf.DecodeSingleBuffer(a, mem.Buf{})
	errY := cf.NewSingleBuffer(a).Decode(mem.Buf{})
	if (errX == nil) != (errY == nil) || (errX != nil && (x != nil || errX.Error() != errY.Error())) {
		t.Errorf("zero Buf: Decode<Msg> %v, %v; Decode %v", x, errX, errY)
	}
}

// TestFusedDecodeAllocs: Decode<Msg> allocates nothing in steady state.
func TestFusedDecodeAllocs(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	m := cf.NewListBuffers(a)
	l := m.InitMessages(2)
	l.Append(make([]byte, 600))
	l.Append([]byte("short"))
	p, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := memtest.Alloc(t, pool, p)
	defer memtest.Release(t, b)
	for _, borrow := range []bool{false, true} {
		a.BorrowInput = borrow
		n := testing.AllocsPerRun(100, func() {
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
			x, err := cf.DecodeListBuffers(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := x.GetMessages(); err != nil || l.Len() != 2 {
				t.Fatal(l, err)
			}
		})
		if n != 0 {
			t.Errorf("borrow %v: %v allocs/op, want 0", borrow, n)
		}
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
}

// FuzzFusedDecode is TestFusedDecodeMatchesDecoder over arbitrary inputs.
func FuzzFusedDecode(f *testing.F) {
	for _, p := range directDecodeSeeds(f) {
		f.Add(p, false, uint8(4), false)
	}
	f.Fuzz(func(t *testing.T, p []byte, limit bool, thr uint8, borrow bool) {
		pool := memtest.NewPool(t)
		l := 16 << 20
		if limit {
			l = 1
		}
		checkFusedDecode(t, pool, p, l, int(thr), borrow)
	})
}

// TestFusedDecodeThresholdChanges: a Threshold changed between batches of
// one arena decides the next batch's zero-copy values (Decode<Msg>'s start
// sets the arena's embedded record up again), with and without
// BorrowInput, and every reference taken returns at Reset.
func TestFusedDecodeThresholdChanges(t *testing.T) {
	const leaf = "a leaf of 22 bytes ..."
	for _, borrow := range []bool{false, true} {
		pool := memtest.NewPool(t)
		a := wire.NewArena()
		a.BorrowInput = borrow
		m := cf.NewSingleBuffer(a)
		m.SetMessage([]byte(leaf))
		p, err := wire.Flatten(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := memtest.Alloc(t, pool, p)
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		for batch, thr := range []int{4, 4, 1 << 20, 1 << 20, 0, 4} {
			a.Threshold = thr
			d, err := cf.DecodeSingleBuffer(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(d.GetMessage()); got != leaf {
				t.Fatalf("borrow %v, batch %d: value %q", borrow, batch, got)
			}
			if sz, zc := d.Sizes(), thr <= len(leaf); (sz.Entries == 1) != zc {
				t.Errorf("borrow %v, batch %d, threshold %d: decoded %+v, zero-copy want %v", borrow, batch, thr, sz, zc)
			}
			held := 1
			if borrow {
				held = 0
			}
			if got := a.Held(); got != held {
				t.Errorf("borrow %v, batch %d: arena holds %d references, want %d", borrow, batch, got, held)
			}
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
			if got := a.Held(); got != 0 || b.Refs() != 1 {
				t.Fatalf("borrow %v, batch %d: after Reset the arena holds %d, the input has %d references", borrow, batch, got, b.Refs())
			}
		}
		memtest.Release(t, b)
	}
}
