package alltypes_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestWireWriteFlat checks the in-place writer of flat messages
// (wireimpl.FlatWriter) against WireSerializeSGA on random messages of
// every flat alltypes shape (thresholds 0, 512 and CopyAll, values partly
// in registered memory): a message without zero-copy entries is written
// with exactly the SGA's head bytes, into a dst of exactly that length and
// no shorter; a message with one declines (-1), as does any message after
// its arena's Reset. Both outcomes must occur (the test fails otherwise).
func TestWireWriteFlat(t *testing.T) {
	pool := memtest.NewPool(t)
	r := rand.New(rand.NewPCG(3, 5))
	written, declined := 0, 0
	buf := make([]byte, 1<<16)
	for iter := range 300 {
		a := wire.NewArena()
		a.Threshold = []int{0, 512, wire.CopyAll}[iter%3]
		g := &gen{r: r, a: a, pool: pool, t: t}
		msgs := []msg{g.scalars(), g.optionals(), alltypes.NewEmpty(a)}
		for i, x := range msgs {
			fw, ok := x.(wireimpl.FlatWriter)
			if !ok {
				t.Fatalf("case %d (%T) is not a wireimpl.FlatWriter", i, x)
			}
			var sga wire.SGA
			if err := wire.SerializeSGA(x, &sga); err != nil {
				t.Fatal(err)
			}
			for j := range buf {
				buf[j] = 0xAA
			}
			n := fw.WireWriteFlat(buf)
			if len(sga.Entries) != 0 {
				if n != -1 {
					t.Fatalf("iter %d case %d: %d zero-copy entries, WireWriteFlat wrote %d bytes", iter, i, len(sga.Entries), n)
				}
				declined++
				continue
			}
			if n != len(sga.Head) || !bytes.Equal(buf[:n], sga.Head) {
				t.Fatalf("iter %d case %d: WireWriteFlat wrote %d bytes %x, the SGA's head is %x", iter, i, n, buf[:max(n, 0)], sga.Head)
			}
			written++
			if m := fw.WireWriteFlat(buf[:n]); m != n {
				t.Fatalf("iter %d case %d: into exactly %d bytes: %d", iter, i, n, m)
			}
			for _, short := range []int{0, 3, 4, 7, 8, n / 2, n - 1} {
				if short >= 0 && short < n {
					if m := fw.WireWriteFlat(buf[:short]); m != -1 {
						t.Fatalf("iter %d case %d: %d-byte message into %d bytes: %d", iter, i, n, short, m)
					}
				}
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		for i, x := range msgs {
			if n := x.(wireimpl.FlatWriter).WireWriteFlat(buf); n != -1 {
				t.Fatalf("iter %d case %d: after Reset: %d", iter, i, n)
			}
			if err := wire.SerializeSGA(x, &wire.SGA{}); !errors.Is(err, wire.ErrArenaReset) {
				t.Fatalf("iter %d case %d: SerializeSGA after Reset: %v", iter, i, err)
			}
		}
		for _, b := range g.held {
			memtest.Release(t, b)
		}
	}
	if written < 100 || declined < 20 {
		t.Fatalf("written %d, declined %d: both paths must be exercised", written, declined)
	}
}

// TestWireWriteFlatBorrowedModified: in the checked build a borrowed value
// modified before the write makes WireWriteFlat decline, and
// WireSerializeSGA reports it; unchecked, the modified value is written.
func TestWireWriteFlatBorrowedModified(t *testing.T) {
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	x := alltypes.NewScalars(a)
	v := []byte("borrowed value")
	x.SetDataBorrowed(v)
	buf := make([]byte, 256)
	if n := x.WireWriteFlat(buf); n <= 0 {
		t.Fatalf("unmodified: %d", n)
	}
	v[0] = 'B'
	n := x.WireWriteFlat(buf)
	if mem.Checked {
		if n != -1 {
			t.Fatalf("checked build, modified borrowed value: WireWriteFlat wrote %d bytes", n)
		}
		if err := wire.SerializeSGA(x, &wire.SGA{}); err == nil {
			t.Fatal("checked build, modified borrowed value: SerializeSGA reported nothing")
		}
		return
	}
	if n <= 0 || !bytes.Contains(buf[:n], v) {
		t.Fatalf("unchecked build: %d bytes %x", n, buf[:max(n, 0)])
	}
}
