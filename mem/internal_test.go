package mem

import (
	"errors"
	"testing"
)

// TestCheckedConcurrentUse: in the checked build, entering a single-goroutine
// pool while another call is inside it panics with ErrConcurrentUse.
func TestCheckedConcurrentUse(t *testing.T) {
	if !checked {
		t.Skip("needs -tags cfcheck")
	}
	p, err := NewPool(PoolConfig{Name: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b, err := p.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	p.busy.Store(1) // as if another goroutine were inside Alloc
	for name, f := range map[string]func(){
		"Alloc":   func() { _, _ = p.Alloc(10) },
		"Release": func() { _ = b.Clone().Release(); _ = b.Release() },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, ErrConcurrentUse) {
					t.Errorf("%s during another call: recovered %v", name, err)
				}
			}()
			f()
		}()
	}
	p.busy.Store(0)
	if err := b.Check(); err == nil {
		t.Fatal("the interrupted release left a live handle")
	}
}

// TestSlotReuse: slots freed by a closed pool are reused first.
func TestSlotReuse(t *testing.T) {
	s, err := NewSpace(SpaceConfig{Size: 16 << 20, Hugepages: HugepagesNone})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := -1
	for range 5 {
		p, err := NewPool(PoolConfig{Space: s, MaxClass: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := p.Alloc(100)
		b, err := p.Alloc(4 << 20) // two slots
		if err != nil {
			t.Fatal(err)
		}
		if first < 0 {
			first = a.r.slot
		} else if a.r.slot != first {
			t.Fatalf("region at slot %d, want reuse of %d", a.r.slot, first)
		}
		if b.r.nslots != 2 || s.slots[b.r.slot+1].Load() != b.r {
			t.Fatal("multi-slot region not published in both slots")
		}
		_ = a.Release()
		_ = b.Release()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		for i := range s.slots {
			if s.slots[i].Load() != nil {
				t.Fatalf("slot %d still published after Close", i)
			}
		}
	}
	if st := s.Stats(); st.CommittedBytes != 0 || st.UsedBytes != 0 || st.LockedBytes != 0 {
		t.Fatalf("stats after all pools closed: %+v", st)
	}
}
