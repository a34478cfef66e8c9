package mem_test

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func mustAlloc(t testing.TB, p *mem.Pool, n int) mem.Buf {
	t.Helper()
	b, err := p.Alloc(n)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	return b
}

func release(t testing.TB, b mem.Buf) {
	t.Helper()
	if err := b.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func TestAllocClassSelection(t *testing.T) {
	p := memtest.NewPool(t)
	tests := []struct {
		n, class int
	}{
		{0, 64}, {1, 64}, {63, 64}, {64, 64}, {65, 128}, {128, 128}, {129, 256},
		{1000, 1024}, {1024, 1024}, {1025, 2048}, {4096, 4096}, {9000, 16384},
		{1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {2 << 20, 2 << 20}, {3 << 20, 4 << 20},
		{8 << 20, 8 << 20},
	}
	for _, tc := range tests {
		b := mustAlloc(t, p, tc.n)
		if b.Len() != tc.n || len(b.Bytes()) != tc.n || cap(b.Bytes()) != tc.n {
			t.Errorf("Alloc(%d): Len %d, len %d, cap %d", tc.n, b.Len(), len(b.Bytes()), cap(b.Bytes()))
		}
		if b.Refs() != 1 {
			t.Errorf("Alloc(%d): Refs %d, want 1", tc.n, b.Refs())
		}
		var got int
		for _, c := range p.Stats().Classes {
			if c.InUse == 1 {
				got = c.Size
			}
		}
		if got != tc.class {
			t.Errorf("Alloc(%d): class %d, want %d", tc.n, got, tc.class)
		}
		// The memory is usable end to end.
		if tc.n > 0 {
			bs := b.Bytes()
			bs[0], bs[tc.n-1] = 1, 2
		}
		release(t, b)
	}
	for _, n := range []int{8<<20 + 1, 1 << 40} {
		if _, err := p.Alloc(n); !errors.Is(err, mem.ErrTooLarge) {
			t.Errorf("Alloc(%d) = %v, want ErrTooLarge", n, err)
		}
	}
	if _, err := p.Alloc(-1); !errors.Is(err, mem.ErrInvalidSize) {
		t.Errorf("Alloc(-1) = %v, want ErrInvalidSize", err)
	}
}

func TestPoolConfigErrors(t *testing.T) {
	bad := []mem.PoolConfig{
		{MinClass: 3},
		{MinClass: 100},
		{MinClass: 4},
		{MaxClass: 1000},
		{MinClass: 1024, MaxClass: 512},
		{MaxClass: 2 << 30},
		{RegionSize: 4096},
		{RegionSize: 3 << 20},
		{MaxBytes: -1},
		{MinClass: 8, MaxBytes: 1 << 40},
	}
	for _, cfg := range bad {
		if p, err := mem.NewPool(cfg); !errors.Is(err, mem.ErrConfig) {
			t.Errorf("NewPool(%+v) = %v, want ErrConfig", cfg, err)
			if p != nil {
				p.Close()
			}
		}
	}
}

func TestItemsDistinctAndAligned(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{MaxClass: 4096})
	seen := map[uintptr]bool{}
	var bufs []mem.Buf
	for i := 0; i < 3*(2<<20)/1024; i++ { // three regions of 1 KiB items
		b := mustAlloc(t, p, 1000)
		a := uintptr(unsafe.Pointer(&b.Bytes()[0]))
		if a%1024 != 0 {
			t.Fatalf("item %d at %#x not 1024-aligned", i, a)
		}
		if seen[a] {
			t.Fatalf("item %d at %#x handed out twice", i, a)
		}
		seen[a] = true
		b.Bytes()[999] = byte(i)
		bufs = append(bufs, b)
	}
	for i, b := range bufs {
		if b.Bytes()[999] != byte(i) {
			t.Fatalf("item %d overwritten", i)
		}
		release(t, b)
	}
	st := p.Stats()
	if st.Regions != 3 || st.Classes[4].Regions != 3 || st.Classes[4].Free != st.Classes[4].Items {
		t.Errorf("stats after release: %+v", st)
	}
}

func TestRefcountLifecycle(t *testing.T) {
	p := memtest.NewPool(t)
	a := mustAlloc(t, p, 100)
	copy(a.Bytes(), "hello")
	b := a.Clone()
	if a.Refs() != 2 || b.Refs() != 2 {
		t.Fatalf("after Clone: refs %d %d", a.Refs(), b.Refs())
	}
	s := b.Slice(1, 3)
	if string(s.Bytes()) != "ell" || s.Refs() != 2 {
		t.Fatalf("Slice: %q refs %d", s.Bytes(), s.Refs())
	}
	release(t, a)
	if b.Refs() != 1 || p.InUse() != 1 {
		t.Fatalf("after one release: refs %d in use %d", b.Refs(), p.InUse())
	}
	if string(b.Bytes()[:5]) != "hello" {
		t.Fatalf("data lost while a reference is held: %q", b.Bytes()[:5])
	}
	release(t, s) // s is the same reference as b
	if p.InUse() != 0 || b.Refs() != 0 {
		t.Fatalf("after last release: in use %d refs %d", p.InUse(), b.Refs())
	}
	if err := b.Release(); !errors.Is(err, mem.ErrDoubleRelease) {
		t.Fatalf("double release = %v, want ErrDoubleRelease", err)
	}
	if err := b.Check(); !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Fatalf("Check of released = %v", err)
	}
	// The zero Buf.
	var z mem.Buf
	if !z.IsZero() || z.Len() != 0 || z.Bytes() != nil || z.Refs() != 0 || z.Release() != nil || !z.Clone().IsZero() || z.Check() != nil {
		t.Fatal("zero Buf misbehaves")
	}
	if a.IsZero() {
		t.Fatal("allocated Buf IsZero")
	}
}

func TestSlicePanics(t *testing.T) {
	p := memtest.NewPool(t)
	b := mustAlloc(t, p, 10)
	defer release(t, b)
	for _, r := range [][2]int{{-1, 1}, {0, 11}, {11, 0}, {5, 6}, {1, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Slice(%d, %d) did not panic", r[0], r[1])
				}
			}()
			b.Slice(r[0], r[1])
		}()
	}
	if s := b.Slice(10, 0); s.Len() != 0 {
		t.Error("Slice(10, 0)")
	}
	if s := b.Slice(2, 8).Slice(1, 3); s.Len() != 3 || &s.Bytes()[0] != &b.Bytes()[3] {
		t.Error("nested Slice window wrong")
	}
}

func TestStaleRelease(t *testing.T) {
	p := memtest.NewPool(t)
	a := mustAlloc(t, p, 64)
	pa := &a.Bytes()[0]
	release(t, a)
	b := mustAlloc(t, p, 64) // LIFO: the same item again
	if pa != &b.Bytes()[0] {
		t.Fatal("expected item reuse")
	}
	err := a.Release()
	var ue *mem.UseAfterReleaseError
	if !errors.Is(err, mem.ErrUseAfterRelease) || !errors.As(err, &ue) || ue.Op != "Release" {
		t.Fatalf("stale Release = %v, want *UseAfterReleaseError", err)
	}
	if b.Refs() != 1 {
		t.Fatalf("stale Release changed the new owner's count to %d", b.Refs())
	}
	if err := a.Check(); !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Fatalf("Check(stale) = %v", err)
	}
	if err := b.Check(); err != nil {
		t.Fatalf("Check(live) = %v", err)
	}
	release(t, b)
}

func TestClonePanicsOnReleased(t *testing.T) {
	p := memtest.NewPool(t)
	a := mustAlloc(t, p, 64)
	release(t, a)
	defer func() {
		e, ok := recover().(*mem.UseAfterReleaseError)
		if !ok || e.Op != "Clone" {
			t.Fatalf("Clone of released: recovered %v", e)
		}
		if p.InUse() != 0 {
			t.Fatal("Clone resurrected a free item")
		}
	}()
	a.Clone()
}

func TestRecover(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{MaxClass: 64 << 10})
	a := mustAlloc(t, p, 1024) // class 1024
	b := mustAlloc(t, p, 1024) // next item
	defer release(t, a)
	defer release(t, b)
	full := unsafe.Slice(&a.Bytes()[0], 1024)
	next := unsafe.Slice(&b.Bytes()[0], 1024)
	for _, tc := range []struct {
		name     string
		p        []byte
		ok       bool
		off, len int
	}{
		{"whole", full, true, 0, 1024},
		{"start", full[:1], true, 0, 1},
		{"middle", full[100:200], true, 100, 100},
		{"end", full[1023:], true, 1023, 1},
		{"tail", full[512:], true, 512, 512},
		{"empty", full[10:10], false, 0, 0},
		{"next item", next[5:9], true, 5, 4},
	} {
		r, ok := mem.Recover(tc.p)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v", tc.name, ok)
			continue
		}
		if !ok {
			if !r.IsZero() {
				t.Errorf("%s: non-zero Buf on failure", tc.name)
			}
			continue
		}
		if r.Len() != tc.len || &r.Bytes()[0] != &tc.p[0] {
			t.Errorf("%s: window len %d", tc.name, r.Len())
		}
		if !mem.IsRegistered(tc.p) {
			t.Errorf("%s: IsRegistered false", tc.name)
		}
		// The recovered reference keeps the item alive.
		if r.Refs() != 2 {
			t.Errorf("%s: refs %d, want 2", tc.name, r.Refs())
		}
		release(t, r)
	}
	// Other memory.
	heap := make([]byte, 4096)
	var stack [64]byte
	other, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(other)
	for name, q := range map[string][]byte{"heap": heap, "stack": stack[:], "mmap": other, "string": []byte("literal")} {
		if _, ok := mem.Recover(q); ok || mem.IsRegistered(q) {
			t.Errorf("%s memory recovered", name)
		}
	}
	if _, ok := mem.Recover(nil); ok {
		t.Error("nil recovered")
	}
}

func TestRecoverStraddle(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{MinClass: 256, MaxClass: 256})
	a := mustAlloc(t, p, 256)
	b := mustAlloc(t, p, 256)
	defer release(t, a)
	defer release(t, b)
	lo, hi := &a.Bytes()[0], &b.Bytes()[0]
	if uintptr(unsafe.Pointer(hi)) < uintptr(unsafe.Pointer(lo)) {
		lo = hi
	}
	span := unsafe.Slice(lo, 512)
	if _, ok := mem.Recover(span[200:300]); ok {
		t.Error("slice across two items recovered")
	}
	if _, ok := mem.Recover(span); ok {
		t.Error("two whole items recovered as one")
	}
	if mem.IsRegistered(span[255:257]) {
		t.Error("IsRegistered across items")
	}
}

func TestRecoverFreedAndClosed(t *testing.T) {
	p, err := mem.NewPool(mem.PoolConfig{Name: "closed"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAlloc(t, p, 100)
	b := mustAlloc(t, p, 100)
	addrA := unsafe.Slice(&a.Bytes()[0], 100)
	addrB := unsafe.Slice(&b.Bytes()[0], 100)
	release(t, a)
	if _, ok := mem.Recover(addrA); ok || mem.IsRegistered(addrA) {
		t.Fatal("freed item recovered")
	}
	if !mem.IsRegistered(addrB) {
		t.Fatal("live item not registered")
	}
	if err := p.Close(); !errors.Is(err, mem.ErrInUse) {
		t.Fatalf("Close with an item in use = %v, want ErrInUse", err)
	}
	var iue *mem.InUseError
	if err := p.Close(); !errors.As(err, &iue) || iue.InUse != 1 || len(iue.Classes) != 1 || iue.Classes[0].Size != 128 {
		t.Fatalf("InUseError = %+v", err)
	}
	release(t, b)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); !errors.Is(err, mem.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if mem.IsRegistered(addrB) {
		t.Fatal("closed pool's memory still registered")
	}
	if _, err := p.Alloc(10); !errors.Is(err, mem.ErrClosed) {
		t.Fatalf("Alloc after Close = %v", err)
	}
}

func TestGrowthAndExhausted(t *testing.T) {
	const limit = 3 << 21
	p := memtest.NewPool(t, mem.PoolConfig{Name: "small", MaxBytes: limit, MaxClass: 1 << 20})
	var bufs []mem.Buf
	// 2 MiB regions of 1 MiB items: three regions, six items.
	for i := 0; i < 6; i++ {
		bufs = append(bufs, mustAlloc(t, p, 1<<20))
	}
	_, err := p.Alloc(1 << 20)
	var ee *mem.ExhaustedError
	if !errors.Is(err, mem.ErrExhausted) || !errors.As(err, &ee) || ee.Pool != "small" || ee.Class != 1<<20 || ee.Limit != limit {
		t.Fatalf("Alloc past the limit = %v", err)
	}
	// Other classes cannot grow either: the limit is across classes.
	if _, err := p.Alloc(64); !errors.Is(err, mem.ErrExhausted) {
		t.Fatalf("Alloc(64) past the limit = %v", err)
	}
	st := p.Stats()
	if st.Bytes != limit || st.Regions != 3 || st.InUse != 6 || st.Exhaustions != 2 {
		t.Fatalf("stats: %+v", st)
	}
	// Releasing one item makes it available again without growth.
	release(t, bufs[0])
	bufs[0] = mustAlloc(t, p, 1<<20-5)
	for _, b := range bufs {
		release(t, b)
	}
}

func TestLargeItemsSpanSlots(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{MaxClass: 16 << 20, MaxBytes: 64 << 20})
	a := mustAlloc(t, p, 16<<20)
	bs := a.Bytes()
	bs[0], bs[len(bs)-1] = 7, 9
	for _, off := range []int{0, 3 << 20, 16<<20 - 1} {
		r, ok := mem.Recover(bs[off : off+1])
		if !ok {
			t.Fatalf("Recover at offset %d of a 16 MiB item failed", off)
		}
		release(t, r)
	}
	if st := p.Stats(); st.Regions != 1 || st.Bytes != 16<<20 {
		t.Fatalf("stats: %+v", st)
	}
	release(t, a)
}

func TestAllocCopy(t *testing.T) {
	p := memtest.NewPool(t)
	b, err := p.AllocCopy([]byte("payload"))
	if err != nil || string(b.Bytes()) != "payload" {
		t.Fatalf("AllocCopy: %q %v", b.Bytes(), err)
	}
	release(t, b)
}

func TestHotPathAllocs(t *testing.T) {
	p := memtest.NewPool(t)
	warm := mustAlloc(t, p, 512)
	defer release(t, warm)
	data := warm.Bytes()
	n := testing.AllocsPerRun(1000, func() {
		b, _ := p.Alloc(512)
		c := b.Clone()
		r, _ := mem.Recover(data[10:20])
		_ = r.Release()
		_ = c.Release()
		_ = b.Release()
	})
	if n != 0 {
		t.Fatalf("hot path allocates %v times per op", n)
	}
}

func TestReserve(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{MaxBytes: 8 << 20, MaxClass: 1 << 20})
	if err := p.Reserve(4096, 1000); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	c := st.Classes[6] // 4096
	if c.Size != 4096 || c.Free < 1000 || c.Regions != 2 || c.InUse != 0 {
		t.Fatalf("after Reserve: %+v", c)
	}
	if err := p.Reserve(4096, 1000); err != nil || p.Stats().Regions != 2 {
		t.Fatalf("second Reserve grew again: %v", err)
	}
	if err := p.Reserve(1<<20, 100); !errors.Is(err, mem.ErrExhausted) {
		t.Fatalf("Reserve past MaxBytes = %v", err)
	}
	if err := p.Reserve(2<<20, 1); !errors.Is(err, mem.ErrTooLarge) {
		t.Fatalf("Reserve of a too large size = %v", err)
	}
	// Allocs from the reserved class need no growth.
	before := p.Stats().Regions
	b := mustAlloc(t, p, 3000)
	if p.Stats().Regions != before {
		t.Fatal("Alloc grew a reserved class")
	}
	release(t, b)
}

// TestBufFitsInRegisters guards the shape of Buf: the compiler keeps a
// struct in registers (SSA) only with at most four fields and 4 words. A
// fifth field put every Buf copy through the stack, where the 16-byte
// reload of a just-spilled argument stalled on store forwarding: the
// key-value server's in-process path ran 1.4–1.7x slower and a small RPC
// 1.1–1.4x (docs/PERFORMANCE.md, session 8).
func TestBufFitsInRegisters(t *testing.T) {
	ty := reflect.TypeOf(mem.Buf{})
	if n := ty.NumField(); n > 4 {
		t.Errorf("mem.Buf has %d fields, want at most 4 (SSA-able)", n)
	}
	if s := ty.Size(); s > 4*unsafe.Sizeof(uintptr(0)) {
		t.Errorf("mem.Buf is %d bytes, want at most 4 words", s)
	}
}
