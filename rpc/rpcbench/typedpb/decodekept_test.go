package typedpb

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// decodeBoth decodes in twice, into a new Blob (NewBlob, Decode) in fa and
// into the kept message *kept (_Echo_Blob_DecodeKept) in ka, each arena
// under borrow, and checks that they agree: the same error, the same
// value, the same references held (a zero-copy value's window).
func decodeBoth(t testing.TB, fa, ka *wire.Arena, kept **Blob, in mem.Buf, borrow bool) error {
	t.Helper()
	fa.BorrowInput, ka.BorrowInput = borrow, borrow
	fresh := NewBlob(fa)
	ferr := fresh.Decode(in)
	x, kerr := _Echo_Blob_DecodeKept(*kept, ka, in)
	fa.BorrowInput, ka.BorrowInput = false, false
	if x == nil || (*kept != nil && x != *kept) {
		t.Fatalf("DecodeKept returned %p for kept %p", x, *kept)
	}
	*kept = x
	if (ferr == nil) != (kerr == nil) || (ferr != nil && ferr.Error() != kerr.Error()) {
		t.Fatalf("Decode: %v, DecodeKept: %v", ferr, kerr)
	}
	if ferr == nil && !bytes.Equal(fresh.GetData(), x.GetData()) {
		t.Fatalf("Decode %q, DecodeKept %q", fresh.GetData(), x.GetData())
	}
	if ferr == nil { // bound to its arena's batch: it serializes as the new one
		fb, ferr2 := wire.Flatten(fresh, nil)
		kb, kerr2 := wire.Flatten(x, nil)
		if ferr2 != nil || kerr2 != nil || !bytes.Equal(fb, kb) {
			t.Fatalf("re-serialized: Decode's %x (%v), DecodeKept's %x (%v)", fb, ferr2, kb, kerr2)
		}
	}
	if fa.Held() != ka.Held() {
		t.Fatalf("references held: Decode's arena %d, DecodeKept's %d", fa.Held(), ka.Held())
	}
	return kerr
}

// TestDecodeKept: the fused reuse-and-decode helper of the service stubs
// decodes exactly as NewBlob then Decode do (values, errors, references:
// a value at or above the threshold stays zero-copy), into the one kept
// message whatever it held before, returned on errors too; it allocates
// nothing once the message exists.
func TestDecodeKept(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "decodekept"})
	fa, ka, ba := wire.NewArena(), wire.NewArena(), wire.NewArena()
	defer func() {
		if err := errors.Join(fa.Reset(), ka.Reset(), ba.Reset()); err != nil {
			t.Error(err)
		}
	}()
	var kept *Blob
	big := bytes.Repeat([]byte("zero-copy "), 400)
	values := [][]byte{[]byte("hello"), nil, big, []byte("x"), big[:10], nil}
	seen := map[bool]bool{}
	for round := range 4 {
		borrow := round%2 == 1
		for i, v := range values {
			m := NewBlob(ba)
			if len(v) >= 2048 {
				vb := memtest.Alloc(t, p, v)
				m.SetDataBuf(vb) // registered: zero-copy at the threshold
				memtest.Release(t, vb)
			} else {
				m.SetData(v)
			}
			flat, err := wire.Flatten(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			in := memtest.Alloc(t, p, flat)
			if err := decodeBoth(t, fa, ka, &kept, in, borrow); err != nil {
				t.Fatalf("round %d value %d: %v", round, i, err)
			}
			if !bytes.Equal(kept.GetData(), v) {
				t.Fatalf("round %d value %d: %q", round, i, kept.GetData())
			}
			seen[ka.Held() != 0] = true
			for _, a := range []*wire.Arena{fa, ka, ba} {
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
			}
			if n := in.Refs(); n != 1 {
				t.Fatalf("round %d value %d: the input holds %d references after Reset, want 1", round, i, n)
			}
			memtest.Release(t, in)
		}
	}
	if !seen[true] || !seen[false] {
		t.Fatalf("references held seen %v: both cases must occur", seen)
	}
	// Hostile inputs: the same errors as Decode, the kept message returned
	// and reusable.
	good := NewBlob(ba)
	good.SetData([]byte("payload"))
	flat, err := wire.Flatten(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{
		flat[:3],
		append([]byte{1, 0, 0, 0, 1, 0, 0, 0}, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0), // entry beyond the input
		{2, 0, 0, 0},
		append(append([]byte(nil), flat[:8]...), 0, 0, 0, 0), // entry cut short
	}
	for i, b := range bad {
		in := memtest.Alloc(t, p, b)
		if err := decodeBoth(t, fa, ka, &kept, in, i%2 == 0); err == nil {
			t.Fatalf("bad input %d (%x) decoded", i, b)
		}
		for _, a := range []*wire.Arena{fa, ka} {
			_ = a.Reset()
		}
		memtest.Release(t, in)
	}
	in := memtest.Alloc(t, p, flat)
	defer memtest.Release(t, in)
	if err := decodeBoth(t, fa, ka, &kept, in, true); err != nil || string(kept.GetData()) != "payload" {
		t.Fatalf("after the errors: %v, %q", err, kept.GetData())
	}
	_, _ = fa.Reset(), ka.Reset()
	if mem.Checked { // the checked build records each borrowed input (an allocation)
		return
	}
	allocs := testing.AllocsPerRun(100, func() {
		ka.BorrowInput = true
		if _, err := _Echo_Blob_DecodeKept(kept, ka, in); err != nil {
			t.Fatal(err)
		}
		ka.BorrowInput = false
		_ = ka.Reset()
	})
	if allocs != 0 {
		t.Fatalf("DecodeKept of a kept message allocates %v times", allocs)
	}
}

// FuzzDecodeKept: on any input the fused reuse-and-decode helper agrees
// with NewBlob then Decode (error, value, references), never panics, and
// leaves the input's references as they were after Reset.
func FuzzDecodeKept(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, false)
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'}, true)
	f.Add([]byte{1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 16, 0, 0, 0}, false)
	p := memtest.NewPool(f, mem.PoolConfig{Name: "fuzzkept"})
	fa, ka := wire.NewArena(), wire.NewArena()
	var kept *Blob
	f.Fuzz(func(t *testing.T, data []byte, borrow bool) {
		if len(data) == 0 || len(data) > 1<<16 {
			return
		}
		in, err := p.AllocCopy(data)
		if err != nil {
			t.Skip(err)
		}
		_ = decodeBoth(t, fa, ka, &kept, in, borrow)
		if err := errors.Join(fa.Reset(), ka.Reset()); err != nil {
			t.Fatal(err)
		}
		if n := in.Refs(); n != 1 {
			t.Fatalf("the input holds %d references after Reset, want 1", n)
		}
		if err := in.Release(); err != nil {
			t.Fatal(err)
		}
	})
}
