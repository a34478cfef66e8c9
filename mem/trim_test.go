package mem_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

// rss is the process's resident set in bytes (/proc/self/statm).
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n * int64(os.Getpagesize())
}

// TestTrimReturnsMemory: after a burst of large items is released, two
// Trims (one to notice, one to act) give the regions' memory back to the
// OS: the pool's committed bytes drop to zero and so does the RSS the
// burst added; the next Allocs commit regions again and work.
func TestTrimReturnsMemory(t *testing.T) {
	p, err := mem.NewPool(mem.PoolConfig{Name: "trim"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	const item, n = 1 << 20, 64
	before := rss(t)
	bufs := make([]mem.Buf, n)
	for i := range bufs {
		if bufs[i], err = p.Alloc(item); err != nil {
			t.Fatal(err)
		}
		b := bufs[i].Bytes()
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
	}
	peak := rss(t)
	if p.Trim(0) != 0 {
		t.Fatal("Trim decommitted regions in use")
	}
	for _, b := range bufs {
		if err := b.Release(); err != nil {
			t.Fatal(err)
		}
	}
	st := p.Stats()
	if st.UsedBytes != 0 || st.CommittedBytes != st.Bytes || st.Bytes < n*item {
		t.Fatalf("after release: %+v", st)
	}
	if got := p.Trim(1 << 62); got != 0 {
		t.Fatalf("a Trim before the idle time decommitted %d bytes", got)
	}
	const region = 2 << 20 // two 1 MiB items per region; the class keeps one region
	if got := p.Trim(0); got != st.Bytes-region {
		t.Fatalf("second Trim decommitted %d bytes, want %d", got, st.Bytes-region)
	}
	st = p.Stats()
	if st.CommittedBytes != region || st.DecommittedBytes != st.Bytes-region || st.Decommits == 0 {
		t.Fatalf("after Trim: %+v", st)
	}
	after := rss(t)
	t.Logf("RSS before %d MiB, peak %d MiB, after Trim %d MiB", before>>20, peak>>20, after>>20)
	if peak-after < n*item*3/4 { // all but the kept region
		t.Fatalf("RSS fell by %d MiB of the burst's %d MiB", (peak-after)>>20, n*item>>20)
	}
	// Reuse: the regions come back, zeroed or poisoned, and usable.
	for i := range bufs {
		if bufs[i], err = p.Alloc(item); err != nil {
			t.Fatal(err)
		}
		bufs[i].Bytes()[item-1] = 1
	}
	st = p.Stats()
	if st.Recommits == 0 || st.Bytes != st.CommittedBytes || st.UsedBytes != n*item {
		t.Fatalf("after reuse: %+v", st)
	}
	for _, b := range bufs {
		if err := b.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrimKeepsBusyRegions: a region allocated from between two Trims,
// or holding an item, is not decommitted; an idle one is, only after idle.
func TestTrimKeepsBusyRegions(t *testing.T) {
	p, err := mem.NewPool(mem.PoolConfig{Name: "trim-busy"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a, err := p.Alloc(100) // one small-class region, held
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Alloc(1 << 20) // one large-class region
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Release()
	p.Trim(1 << 62)
	c, _ := p.Alloc(1 << 20) // touched between the Trims
	_ = c.Release()
	if got := p.Trim(1); got != 0 {
		t.Fatalf("decommitted %d bytes of regions used since the last Trim", got)
	}
	if got := p.Trim(1 << 62); got != 0 {
		t.Fatalf("decommitted %d bytes before the idle time", got)
	}
	if got := p.Trim(0); got != 0 {
		t.Fatal("the only region of a class was decommitted")
	}
	d, _ := p.Alloc(1 << 20) // a second region of the large class
	e, _ := p.Alloc(1 << 20)
	f, _ := p.Alloc(1 << 20)
	for _, b := range []mem.Buf{d, e, f} {
		_ = b.Release()
	}
	p.Trim(0)
	if got := p.Trim(0); got != 2<<20 {
		t.Fatalf("decommitted %d bytes, want one idle 2 MiB region (the other is kept)", got)
	}
	if st := p.Stats(); st.UsedBytes != 128 || st.CommittedBytes == 0 {
		t.Fatalf("the held item's region must stay: %+v", st)
	}
	_ = a.Release()
}

// Pool.Trim gives the memory of regions idle for a while back to the OS;
// an owner calls it periodically.
func ExamplePool_Trim() {
	p, _ := mem.NewPool(mem.PoolConfig{Name: "example-trim"})
	defer p.Close()
	var burst [4]mem.Buf
	for i := range burst {
		burst[i], _ = p.Alloc(4 << 20) // one 4 MiB region each
	}
	for _, b := range burst {
		_ = b.Release()
	}
	p.Trim(0) // notices the idle regions
	freed := p.Trim(0)
	st := p.Stats()
	fmt.Println(freed>>20, "MiB returned; committed", st.CommittedBytes>>20, "MiB (one region kept), used", st.UsedBytes)
	// Output: 12 MiB returned; committed 4 MiB (one region kept), used 0
}
