package wireimpl

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestResetChecksBorrowedAfterReleases checks the order of Reset's work in
// the checked build: the arena's own references are released before the
// borrowed inputs are checked, so an input released before Reset is
// reported even when the arena also held a reference on its item (Hold)
// that kept it live until then. Every reference returns either way.
func TestResetChecksBorrowedAfterReleases(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	a := NewArena()
	a.BorrowInput = true
	in, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	var c Core
	c.Init(a)
	if _, err := c.BeginDecode(in); err != nil {
		t.Fatal(err)
	}
	a.Hold(in.Clone())
	if err := in.Release(); err != nil { // the promise broken; the item stays live through Hold
		t.Fatal(err)
	}
	err = a.Reset()
	var ue *mem.UseAfterReleaseError
	if mem.Checked && !errors.As(err, &ue) {
		t.Errorf("input released before Reset, item held: Reset = %v, want a *mem.UseAfterReleaseError", err)
	}
	if !mem.Checked && err != nil {
		t.Errorf("unchecked build: Reset = %v", err)
	}
	if a.Held() != 0 || p.InUse() != 0 {
		t.Errorf("after Reset: arena holds %d, pool has %d in use", a.Held(), p.InUse())
	}
}
