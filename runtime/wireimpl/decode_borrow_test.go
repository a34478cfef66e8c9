package wireimpl

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestBorrowInput checks Arena.BorrowInput: BeginDecode (the batch's first
// input, then a second input outside it, then one inside it) and
// StartDecode take no reference on the caller's input and the arena holds
// none, the records alias the input and carry the caller's window; without
// BorrowInput the same decodes take one reference per input, released at
// Reset.
func TestBorrowInput(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	in1, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer in1.Release()
	in2, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Release()
	for _, b := range []mem.Buf{in1, in2} { // an empty message: one bitmap word, no field
		clear(b.Bytes())
		b.Bytes()[0] = 1
	}
	for _, borrow := range []bool{true, false} {
		a := NewArena()
		a.BorrowInput = borrow
		var c Core
		c.Init(a)
		want := 2 // the caller's reference and the arena's
		if borrow {
			want = 1
		}
		s1, err := c.BeginDecode(in1)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := c.BeginDecode(in2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.BeginDecode(in2.Slice(8, 16)); err != nil { // shares in2's hold
			t.Fatal(err)
		}
		if _, err := c.StartDecode(in1.Slice(0, 32)); err != nil { // shares nothing: in2 was last
			t.Fatal(err)
		}
		if &s1.data[0] != &in1.Bytes()[0] || s1.buf.Bytes()[0] != in1.Bytes()[0] || &s2.data[0] != &in2.Bytes()[0] {
			t.Errorf("borrow %v: the records do not alias the inputs", borrow)
		}
		if got := in1.Refs(); got != want+bool2int(!borrow) {
			t.Errorf("borrow %v: input 1 has %d references, want %d", borrow, got, want+bool2int(!borrow))
		}
		if got := in2.Refs(); got != want {
			t.Errorf("borrow %v: input 2 has %d references, want %d", borrow, got, want)
		}
		if err := a.Reset(); err != nil {
			t.Fatalf("borrow %v: Reset: %v", borrow, err)
		}
		if in1.Refs() != 1 || in2.Refs() != 1 {
			t.Errorf("borrow %v: after Reset %d and %d references, want 1 and 1", borrow, in1.Refs(), in2.Refs())
		}
	}
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBorrowInputReleasedEarly checks the checked build's check of
// BorrowInput's promise: an input released before the arena's Reset makes
// Reset fail with an error wrapping *mem.UseAfterReleaseError (once: the
// next batch is clean); an input kept until Reset does not. The unchecked
// build does not check.
func TestBorrowInputReleasedEarly(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	a := NewArena()
	a.BorrowInput = true
	var c Core
	in, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	c.Init(a)
	if _, err := c.BeginDecode(in); err != nil {
		t.Fatal(err)
	}
	if err := a.Reset(); err != nil {
		t.Fatalf("input kept: Reset = %v", err)
	}
	c.Init(a)
	if _, err := c.BeginDecode(in); err != nil {
		t.Fatal(err)
	}
	if err := in.Release(); err != nil {
		t.Fatal(err)
	}
	err = a.Reset()
	var ue *mem.UseAfterReleaseError
	if mem.Checked && !errors.As(err, &ue) {
		t.Errorf("input released before Reset: Reset = %v, want a *mem.UseAfterReleaseError", err)
	}
	if !mem.Checked && err != nil {
		t.Errorf("unchecked build: Reset = %v", err)
	}
	if err := a.Reset(); err != nil {
		t.Errorf("next batch: Reset = %v", err)
	}
}

// TestBeginDecodeThreshold checks that each batch's record follows the
// arena's Threshold at the decode, also when it changes between batches
// of one arena (BeginDecode's common case rewrites the embedded record's
// threshold fields only when Threshold changed).
func TestBeginDecodeThreshold(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	in, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	clear(in.Bytes())
	in.Bytes()[0] = 1 // an empty message
	a := NewArena()
	for _, thr := range []int{512, 512, 16, 0, 0, 1, 64, 64, 16} {
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		a.Threshold = thr
		var c Core
		c.Init(a)
		src, err := c.BeginDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		if src.thr != thr || src.cpBelow != thr || src.zcFrom != max(thr, 1) {
			t.Errorf("Threshold %d: record has thr %d, cpBelow %d, zcFrom %d", thr, src.thr, src.cpBelow, src.zcFrom)
		}
		// A 32-byte value is read zero-copy exactly when it reaches the threshold.
		binary.LittleEndian.PutUint64(in.Bytes()[8:], 16<<32|32)
		if _, _, zc, ok := src.BytesRange(8); !ok || zc != (32 >= max(thr, 1)) {
			t.Errorf("Threshold %d: BytesRange of a 32-byte value: zc %v ok %v", thr, zc, ok)
		}
	}
	if err := a.Reset(); err != nil { // releases the arena's reference on in
		t.Fatal(err)
	}
}
