package mem_test

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func newSpace(t *testing.T, cfg mem.SpaceConfig) *mem.Space {
	t.Helper()
	s, err := mem.NewSpace(cfg)
	if err != nil {
		t.Fatalf("NewSpace(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, mem.ErrClosed) {
			t.Errorf("Space.Close: %v", err)
		}
	})
	return s
}

func TestCommittedSpace(t *testing.T) {
	// A fully committed space, as an AF_XDP UMEM would use.
	s := newSpace(t, mem.SpaceConfig{Size: 8 << 20, Commit: true, Hugepages: mem.HugepagesNone, Mlock: true})
	if s.Len() != 8<<20 || s.Base()%mem.SlotSize != 0 {
		t.Fatalf("space: base %#x len %d", s.Base(), s.Len())
	}
	st := s.Stats()
	if st.CommittedBytes != 8<<20 || st.Size != 8<<20 || st.UsedBytes != 0 {
		t.Fatalf("stats: %+v", st)
	}
	// The whole space is writable before any pool exists.
	all := s.Bytes()
	all[0], all[len(all)-1] = 1, 2
	p := memtest.NewPool(t, mem.PoolConfig{Name: "umem", MinClass: 4096, MaxClass: 4096, Space: s, MaxBytes: 8 << 20})
	var bufs []mem.Buf
	for {
		b, err := p.Alloc(4096)
		if errors.Is(err, mem.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		off, ok := s.Offset(b.Bytes())
		if !ok || off%4096 != 0 || off >= 8<<20 {
			t.Fatalf("Offset = %d, %v", off, ok)
		}
		bufs = append(bufs, b)
	}
	if len(bufs) != 2048 {
		t.Fatalf("%d frames from an 8 MiB space, want 2048", len(bufs))
	}
	// Offset and Slice are inverses; Recover works from a UMEM address.
	off, _ := s.Offset(bufs[7].Bytes())
	frame, ok := s.Slice(off, 100)
	if !ok || &frame[0] != &bufs[7].Bytes()[0] {
		t.Fatal("Slice(Offset(p)) != p")
	}
	if r, ok := mem.Recover(frame); !ok {
		t.Fatal("Recover of a frame by its UMEM address failed")
	} else {
		release(t, r)
	}
	for _, bad := range []struct {
		off uint64
		n   int
	}{{8 << 20, 1}, {8<<20 - 1, 2}, {0, -1}, {1 << 63, 1}} {
		if _, ok := s.Slice(bad.off, bad.n); ok {
			t.Errorf("Slice(%d, %d) accepted", bad.off, bad.n)
		}
	}
	if _, ok := s.Offset(make([]byte, 10)); ok {
		t.Fatal("Offset of heap memory")
	}
	if _, ok := s.Offset(nil); ok {
		t.Fatal("Offset of nil")
	}
	if err := s.Close(); !errors.Is(err, mem.ErrInUse) {
		t.Fatalf("Close of a space with live regions = %v", err)
	}
	for _, b := range bufs {
		release(t, b)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.UsedBytes != 0 || st.CommittedBytes != 8<<20 {
		t.Fatalf("after pool close: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, mem.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	// A pool on a closed space cannot grow.
	p2, err := mem.NewPool(mem.PoolConfig{Space: s})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Alloc(1); !errors.Is(err, mem.ErrClosed) || !errors.Is(err, mem.ErrExhausted) {
		t.Fatalf("Alloc in a closed space = %v", err)
	}
}

func TestSpaceFull(t *testing.T) {
	s := newSpace(t, mem.SpaceConfig{Size: 4 << 20, Hugepages: mem.HugepagesNone})
	p := memtest.NewPool(t, mem.PoolConfig{Space: s, MaxClass: 1 << 20})
	a := mustAlloc(t, p, 64)
	b := mustAlloc(t, p, 128)
	_, err := p.Alloc(256)
	var ee *mem.ExhaustedError
	if !errors.As(err, &ee) || !errors.Is(err, mem.ErrSpaceFull) || !errors.Is(err, mem.ErrExhausted) {
		t.Fatalf("Alloc in a full space = %v", err)
	}
	release(t, a)
	release(t, b)
}

func TestSpaceConfigErrors(t *testing.T) {
	for _, cfg := range []mem.SpaceConfig{{Size: -1}, {Size: mem.MaxSpaceSize + 1}, {Hugepages: 42}} {
		if s, err := mem.NewSpace(cfg); !errors.Is(err, mem.ErrConfig) {
			t.Errorf("NewSpace(%+v) = %v", cfg, err)
			if s != nil {
				s.Close()
			}
		}
	}
	d, err := mem.DefaultSpace()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err == nil {
		t.Fatal("closing the default space succeeded")
	}
	if d.Len() != mem.DefaultSpaceSize {
		t.Fatalf("default space size %d", d.Len())
	}
}

func TestTooManySpaces(t *testing.T) {
	var spaces []*mem.Space
	defer func() {
		for _, s := range spaces {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}()
	for range mem.MaxSpaces + 1 {
		s, err := mem.NewSpace(mem.SpaceConfig{Size: 2 << 20})
		if errors.Is(err, mem.ErrTooManySpaces) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		spaces = append(spaces, s)
	}
	t.Fatalf("made %d spaces, limit %d", len(spaces), mem.MaxSpaces)
}

// mappings counts this process's memory mappings.
func mappings(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return bytes.Count(b, []byte("\n"))
}

// TestNoLeaksAcrossPools creates and closes many pools and spaces and
// checks that neither mappings (vm.max_map_count) nor committed memory
// accumulate.
func TestNoLeaksAcrossPools(t *testing.T) {
	d, err := mem.DefaultSpace()
	if err != nil {
		t.Fatal(err)
	}
	// Warm up so lazily created runtime mappings are not counted.
	cycle := func() {
		p, err := mem.NewPool(mem.PoolConfig{Name: "cycle"})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{64, 1000, 5000, 70000, 3 << 20} {
			b := mustAlloc(t, p, n)
			release(t, b)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := mem.NewSpace(mem.SpaceConfig{Size: 4 << 20, Commit: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	before, committed := mappings(t), d.Stats().CommittedBytes
	for range 30 {
		cycle()
	}
	after := mappings(t)
	if after > before+10 {
		t.Fatalf("mappings grew from %d to %d over 30 pool/space cycles", before, after)
	}
	if c := d.Stats().CommittedBytes; c != committed {
		t.Fatalf("default space committed bytes %d -> %d", committed, c)
	}
}

// freeHugepages reads the system's free 2 MiB hugepages.
func freeHugepages() int {
	b, err := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func TestHugepages(t *testing.T) {
	if freeHugepages() < 2 {
		// Explicit hugepages are not reserved on this system (the test never
		// changes vm.nr_hugepages): Required must fail cleanly and Auto must
		// fall back to transparent hugepages.
		s := newSpace(t, mem.SpaceConfig{Size: 4 << 20, Hugepages: mem.HugepagesRequired})
		p := memtest.NewPool(t, mem.PoolConfig{Space: s})
		if _, err := p.Alloc(100); !errors.Is(err, mem.ErrHugepages) {
			t.Fatalf("Alloc with HugepagesRequired and no hugepages = %v", err)
		}
		s2 := newSpace(t, mem.SpaceConfig{Size: 4 << 20})
		p2 := memtest.NewPool(t, mem.PoolConfig{Space: s2})
		b := mustAlloc(t, p2, 100)
		st := p2.Stats().Space
		if st.HugetlbBytes != 0 || st.CommittedBytes != 2<<20 {
			t.Fatalf("fallback stats: %+v", st)
		}
		t.Logf("no explicit hugepages: fallback stats %+v", st)
		release(t, b)
		return
	}
	s := newSpace(t, mem.SpaceConfig{Size: 4 << 20, Hugepages: mem.HugepagesRequired, Mlock: true})
	p := memtest.NewPool(t, mem.PoolConfig{Space: s})
	b := mustAlloc(t, p, 4096)
	copy(b.Bytes(), "huge")
	st := p.Stats().Space
	if st.HugetlbBytes != 2<<20 {
		t.Fatalf("stats with explicit hugepages: %+v", st)
	}
	t.Logf("explicit hugepages: %+v", st)
	release(t, b)
}

func TestDefaultSpaceStats(t *testing.T) {
	p := memtest.NewPool(t)
	b := mustAlloc(t, p, 100)
	defer release(t, b)
	st := p.Stats()
	if st.Space.CommittedBytes < 2<<20 || st.Bytes != 2<<20 || st.Items != (2<<20)/128 {
		t.Fatalf("stats: %+v", st)
	}
	t.Logf("default space: committed %d, hugetlb %d, THP-advised %d, locked %d, mlock errors %d",
		st.Space.CommittedBytes, st.Space.HugetlbBytes, st.Space.THPBytes, st.Space.LockedBytes, st.Space.MlockErrors)
}
