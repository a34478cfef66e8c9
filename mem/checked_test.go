package mem_test

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// expectUseAfterRelease runs f and checks that, in the checked build, it
// panics with a *UseAfterReleaseError for op (and, otherwise, that it does
// not panic when mayRunUnchecked).
func expectUseAfterRelease(t *testing.T, op string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		v := recover()
		if !mem.Checked {
			if v != nil {
				t.Fatalf("%s panicked in the normal build: %v", op, v)
			}
			return
		}
		e, ok := v.(*mem.UseAfterReleaseError)
		if !ok || e.Op != op || !errors.Is(e, mem.ErrUseAfterRelease) {
			t.Fatalf("%s: recovered %#v, want *UseAfterReleaseError", op, v)
		}
	}()
	f()
}

func TestCheckedUseAfterRelease(t *testing.T) {
	if !mem.Checked {
		t.Skip("needs -tags cfcheck")
	}
	p := memtest.NewPool(t)
	a := mustAlloc(t, p, 100)
	copy(a.Bytes(), "secret")
	r := a.Slice(0, 6)
	release(t, a)
	expectUseAfterRelease(t, "Bytes", func() { _ = r.Bytes() })
	expectUseAfterRelease(t, "Slice", func() { _ = r.Slice(0, 1) })
	expectUseAfterRelease(t, "Clone", func() { _ = r.Clone() })
	if err := r.Release(); !errors.Is(err, mem.ErrDoubleRelease) {
		t.Fatalf("double release = %v", err)
	}
	// Reallocate the same item: the stale handle is still caught.
	b := mustAlloc(t, p, 100)
	expectUseAfterRelease(t, "Bytes", func() { _ = r.Bytes() })
	if err := r.Release(); !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Fatalf("stale release = %v", err)
	}
	release(t, b)
}

func TestCheckedPoison(t *testing.T) {
	if !mem.Checked {
		t.Skip("needs -tags cfcheck")
	}
	p := memtest.NewPool(t)
	a := mustAlloc(t, p, 100)
	bs := a.Bytes()
	for i := range bs {
		if bs[i] != mem.PoisonByte {
			t.Fatalf("fresh item byte %d = %#x, want poison", i, bs[i])
		}
	}
	copy(bs, "secret data")
	release(t, a)
	// The released item is poisoned: a stale slice reads poison, not data.
	for i := range 11 {
		if bs[i] != mem.PoisonByte {
			t.Fatalf("released item byte %d = %#x, want poison", i, bs[i])
		}
	}
	// A write after release is detected when the item is handed out again.
	bs[3] = 'x'
	defer func() {
		e, ok := recover().(*mem.UseAfterReleaseError)
		if !ok || e.Op != "Alloc" {
			t.Fatalf("write after release not detected: %v", e)
		}
	}()
	b, _ := p.Alloc(100)
	_ = b.Release()
	t.Fatal("Alloc did not panic")
}
