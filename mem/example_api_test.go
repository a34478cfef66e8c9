package mem_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cornflakes-go/cornflakes/mem"
)

// PoolConfig chooses the size classes (powers of two), the region size and
// a memory limit; the zero value takes the defaults. An invalid
// configuration is refused with ErrConfig.
func ExamplePoolConfig() {
	p, err := mem.NewPool(mem.PoolConfig{
		Name:     "rx",
		MinClass: 2048,    // one class per power of two...
		MaxClass: 8192,    // ...up to jumbo frames
		MaxBytes: 8 << 20, // at most four 2 MiB regions
	})
	if err != nil {
		panic(err)
	}
	st := p.Stats()
	fmt.Println(p.Name(), p.MaxSize(), len(st.Classes), st.MaxBytes>>20, p.Concurrent())
	fmt.Println(p.Close())

	_, err = mem.NewPool(mem.PoolConfig{MinClass: 1500})
	fmt.Println(errors.Is(err, mem.ErrConfig))
	fmt.Println(err)
	// Output:
	// rx 8192 3 8 false
	// <nil>
	// true
	// mem: invalid configuration: MinClass 1500 is not a power of two in [8, 1073741824]
}

// Concurrent makes a pool whose Bufs may be cloned and released on any
// goroutine: here workers release the buffers the main goroutine handed
// them. A pool without it belongs to one goroutine at a time.
func ExamplePoolConfig_concurrent() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "shared", Concurrent: true})
	if err != nil {
		panic(err)
	}
	work := make(chan mem.Buf)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for b := range work {
				_ = b.Release() // on the worker's goroutine
			}
		})
	}
	for i := range 100 {
		b, err := p.AllocCopy([]byte{byte(i)})
		if err != nil {
			panic(err)
		}
		work <- b // ownership moves to the worker
	}
	close(work)
	wg.Wait()
	fmt.Println(p.Concurrent(), p.InUse(), p.Close())
	// Output: true 0 <nil>
}

// PoolStats is a snapshot of a pool's memory. Reserve grows a class ahead
// of time, so that the first Allocs on a latency-sensitive path do not
// map memory; the stats show the region it added.
func ExamplePoolStats() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "tx", MinClass: 2048, MaxClass: 2048})
	if err != nil {
		panic(err)
	}
	if err := p.Reserve(1500, 100); err != nil {
		panic(err)
	}
	st := p.Stats()
	fmt.Printf("%s: %d region of %d MiB, %d items, %d in use, limit %d MiB\n",
		st.Name, st.Regions, st.Bytes>>20, st.Items, st.InUse, st.MaxBytes>>20)

	if err := p.Close(); err != nil {
		panic(err)
	}
	fmt.Println("closed:", p.Stats().Closed)
	// Output:
	// tx: 1 region of 2 MiB, 1024 items, 0 in use, limit 1024 MiB
	// closed: true
}

// ClassStats shows how one size class is used. Allocs keeps counting while
// Items stays put: released items are reused from the free list.
func ExampleClassStats() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "values", MinClass: 64, MaxClass: 1024})
	if err != nil {
		panic(err)
	}
	classOf := func(size int) mem.ClassStats {
		for _, c := range p.Stats().Classes {
			if c.Size >= size {
				return c
			}
		}
		return mem.ClassStats{}
	}

	for range 1000 {
		b, err := p.Alloc(300) // the 512-byte class
		if err != nil {
			panic(err)
		}
		_ = b.Release()
	}
	held, _ := p.Alloc(300)
	c := classOf(300)
	fmt.Printf("class %d: %d allocs, %d items (%d free, %d in use), %d region of %d KiB\n",
		c.Size, c.Allocs, c.Items, c.Free, c.InUse, c.Regions, c.Bytes>>10)
	_ = held.Release()
	fmt.Println(p.Close())
	// Output:
	// class 512: 1001 allocs, 4096 items (4095 free, 1 in use), 1 region of 2048 KiB
	// <nil>
}

// A Space is one address range that pools carve regions from. Offset and
// Slice translate between its memory and offsets in it, as an AF_XDP socket
// names frames of its UMEM. A space cannot close while pools use it.
func ExampleSpace() {
	s, err := mem.NewSpace(mem.SpaceConfig{Size: 2 << 20, Commit: true, Hugepages: mem.HugepagesNone})
	if err != nil {
		panic(err)
	}
	frames, err := mem.NewPool(mem.PoolConfig{Name: "umem", MinClass: 4096, MaxClass: 4096, Space: s})
	if err != nil {
		panic(err)
	}
	f, err := frames.AllocCopy([]byte("frame"))
	if err != nil {
		panic(err)
	}
	off, ok := s.Offset(f.Bytes())
	fmt.Println("offset in the space:", ok, off%4096)
	back, ok := s.Slice(off, f.Len()) // what a descriptor {off, len} points at
	fmt.Println(ok, string(back), frames.Space() == s)

	fmt.Println("close with a pool:", errors.Is(s.Close(), mem.ErrInUse))
	_ = f.Release()
	if err := frames.Close(); err != nil {
		panic(err)
	}
	fmt.Println(s.Close())
	// Output:
	// offset in the space: true 0
	// true frame true
	// close with a pool: true
	// <nil>
}

// SpaceConfig.Size is rounded up to whole 2 MiB slots; Config reports the
// effective configuration.
func ExampleSpaceConfig() {
	s, err := mem.NewSpace(mem.SpaceConfig{Size: 5 << 20, Hugepages: mem.HugepagesNone})
	if err != nil {
		panic(err)
	}
	cfg := s.Config()
	fmt.Println(cfg.Size>>20, "MiB", s.Len() == int(cfg.Size), cfg.Commit, cfg.Hugepages)
	fmt.Println(s.Close())

	_, err = mem.NewSpace(mem.SpaceConfig{Size: -1})
	fmt.Println(errors.Is(err, mem.ErrConfig))
	// Output:
	// 6 MiB true false none
	// <nil>
	// true
}

// SpaceStats follows a space's memory: without Commit, a region is
// committed when a pool grows and decommitted when the pool closes.
// (Which page sizes back it, HugetlbBytes and THPBytes, depends on the
// machine.)
func ExampleSpaceStats() {
	s, err := mem.NewSpace(mem.SpaceConfig{Size: 16 << 20, Hugepages: mem.HugepagesNone})
	if err != nil {
		panic(err)
	}
	show := func(when string) {
		st := s.Stats()
		fmt.Printf("%-13s size %2d MiB, used %d MiB, committed %d MiB\n",
			when, st.Size>>20, st.UsedBytes>>20, st.CommittedBytes>>20)
	}
	show("empty:")
	p, err := mem.NewPool(mem.PoolConfig{Name: "values", Space: s})
	if err != nil {
		panic(err)
	}
	b, err := p.Alloc(1000)
	if err != nil {
		panic(err)
	}
	show("one item:")
	_ = b.Release()
	if err := p.Close(); err != nil {
		panic(err)
	}
	show("pool closed:")
	fmt.Println(s.Close())
	// Output:
	// empty:        size 16 MiB, used 0 MiB, committed 0 MiB
	// one item:     size 16 MiB, used 2 MiB, committed 2 MiB
	// pool closed:  size 16 MiB, used 0 MiB, committed 0 MiB
	// <nil>
}

// HugepageMode picks the page size of a space's memory. HugepagesAuto (the
// default space's) uses explicit hugepages when the kernel has some
// reserved; HugepagesRequired fails with ErrHugepages when it has none.
func ExampleHugepageMode() {
	fmt.Println(mem.HugepagesAuto, mem.HugepagesTransparent, mem.HugepagesNone, mem.HugepagesRequired)

	s, err := mem.NewSpace(mem.SpaceConfig{Size: 2 << 20, Hugepages: mem.HugepagesTransparent})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Config().Hugepages, s.Close())
	// Output:
	// auto transparent none required
	// transparent <nil>
}

// InUseError is what Pool.Close reports while items are still allocated:
// a leak check can name the pool and the classes that leak, and the owner
// can release them and close again.
func ExampleInUseError() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "requests", MinClass: 64, MaxClass: 4096})
	if err != nil {
		panic(err)
	}
	small, _ := p.Alloc(10)
	big1, _ := p.Alloc(3000)
	big2, _ := p.Alloc(3000)

	err = p.Close()
	var iu *mem.InUseError
	if errors.As(err, &iu) {
		fmt.Printf("pool %q: %d items in use\n", iu.Pool, iu.InUse)
		for _, c := range iu.Classes {
			fmt.Printf("  class %d B: %d\n", c.Size, c.InUse)
		}
	}
	for _, b := range []mem.Buf{small, big1, big2} {
		_ = b.Release()
	}
	fmt.Println(p.Close())
	// Output:
	// pool "requests": 3 items in use
	//   class 64 B: 1
	//   class 4096 B: 2
	// <nil>
}
