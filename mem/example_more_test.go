package mem_test

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Alloc serves a request from the smallest size class that fits it; the
// window is exactly the requested length. Larger requests than the pool's
// largest class fail with ErrTooLarge.
func ExamplePool_Alloc() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "frames", MinClass: 512, MaxClass: 4096})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	b, err := p.Alloc(1500) // an item of the 2048-byte class
	if err != nil {
		panic(err)
	}
	defer b.Release() // runs before p.Close
	fmt.Println(b.Len(), len(b.Bytes()), cap(b.Bytes()))

	_, err = p.Alloc(9000)
	fmt.Println(errors.Is(err, mem.ErrTooLarge), p.MaxSize())
	// Output:
	// 1500 1500 1500
	// true 4096
}

// Stats shows where a pool's memory went, class by class. InUse counts
// items, not references: a Clone keeps the item it shares counted once.
func ExamplePool_Stats() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "values", MinClass: 64, MaxClass: 256})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	small, _ := p.Alloc(10)  // 64-byte class
	large, _ := p.Alloc(200) // 256-byte class
	again := large.Clone()   // a second reference to the same item

	st := p.Stats()
	fmt.Printf("%s: %d items in use, %d regions, %d MiB\n", st.Name, st.InUse, st.Regions, st.Bytes>>20)
	for _, c := range st.Classes {
		fmt.Printf("class %3d B: %d in use, %d allocs, %d regions\n", c.Size, c.InUse, c.Allocs, c.Regions)
	}

	small.Release()
	large.Release()
	again.Release()
	fmt.Println("in use:", p.Stats().InUse)
	// Output:
	// values: 2 items in use, 2 regions, 4 MiB
	// class  64 B: 1 in use, 1 allocs, 1 regions
	// class 128 B: 0 in use, 0 allocs, 0 regions
	// class 256 B: 1 in use, 1 allocs, 1 regions
	// in use: 0
}

// Slice narrows the window of the SAME reference: a parser can hand out a
// field of a received buffer without copying and without counting. Release
// exactly one of the two handles; to keep the field after the buffer is
// released, Clone it first.
func ExampleBuf_Slice() {
	p, err := mem.NewPool(mem.PoolConfig{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	pkt, _ := p.AllocCopy([]byte("GET key42\r\n"))
	key := pkt.Slice(4, 5)
	fmt.Printf("%q refs=%d\n", key.Bytes(), key.Refs())

	kept := key.Clone() // a reference of its own, with key's window
	pkt.Release()       // drops the reference pkt and key shared: key is done
	fmt.Printf("%q refs=%d\n", kept.Bytes(), kept.Refs())
	kept.Release()
	fmt.Println("in use:", p.InUse())
	// Output:
	// "key42" refs=1
	// "key42" refs=1
	// in use: 0
}

// IsRegistered tells whether a slice lies in a live item of registered
// memory, so that it could be sent zero-copy, without taking a reference
// (Recover takes one). It only looks at the address, so it is safe to ask
// even about a slice whose item was released.
func ExampleIsRegistered() {
	p, err := mem.NewPool(mem.PoolConfig{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	b, _ := p.AllocCopy([]byte("registered"))
	v := b.Bytes()
	fmt.Println(mem.IsRegistered(v), mem.IsRegistered(v[2:4]))
	fmt.Println(mem.IsRegistered([]byte("Go heap")), mem.IsRegistered(nil))
	b.Release()
	fmt.Println(mem.IsRegistered(v)) // the item is free now
	// Output:
	// true true
	// false false
	// false
}

// A handle kept after its Release is stale. Once its item has been
// allocated again, Release and Check through the stale handle report a
// *UseAfterReleaseError and change nothing, so the item's new owner is
// unharmed. (Releasing a stale handle whose item is still free reports
// ErrDoubleRelease instead; see Buf.Clone.)
func ExampleUseAfterReleaseError() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "values"})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	old, _ := p.AllocCopy([]byte("old"))
	old.Release()
	cur, _ := p.AllocCopy([]byte("new")) // reuses the item old pointed to
	defer cur.Release()

	err = old.Release() // the bug: a second Release through the old handle
	var uaf *mem.UseAfterReleaseError
	if errors.As(err, &uaf) {
		fmt.Println(uaf.Op, uaf.Pool, uaf.ItemSize, errors.Is(err, mem.ErrUseAfterRelease))
	}
	fmt.Println(old.Check() != nil, cur.Check(), cur.Refs(), string(cur.Bytes()))
	// Output:
	// Release values 64 true
	// true <nil> 1 new
}

// MaxBytes bounds a pool's memory. Here it is one 2 MiB region, which holds
// two items of the 1 MiB class; a third Alloc fails with an
// *ExhaustedError, and Stats counts the failure.
func ExampleExhaustedError() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "big", MinClass: 1 << 20, MaxClass: 1 << 20, MaxBytes: 2 << 20})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	a, _ := p.Alloc(1 << 20)
	b, _ := p.Alloc(1 << 20)
	_, err = p.Alloc(1 << 20)
	var ex *mem.ExhaustedError
	fmt.Println(errors.Is(err, mem.ErrExhausted), errors.As(err, &ex) && ex.Cause == nil)
	fmt.Println(err)

	a.Release() // frees an item: the next Alloc succeeds again
	c, err := p.Alloc(1 << 20)
	fmt.Println(err, p.Stats().Exhaustions)
	b.Release()
	c.Release()
	// Output:
	// true true
	// mem: pool "big" exhausted growing class 1048576 (limit 2097152 bytes)
	// <nil> 1
}

// Close refuses to unmap memory that is still referenced: it returns an
// *InUseError listing the classes with items in use and changes nothing,
// so the owner can release them and close again.
func ExamplePool_Close() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "rx"})
	if err != nil {
		panic(err)
	}
	b, _ := p.Alloc(100)

	err = p.Close()
	fmt.Println(errors.Is(err, mem.ErrInUse))
	fmt.Println(err)

	b.Release()
	fmt.Println(p.Close())
	fmt.Println(errors.Is(p.Close(), mem.ErrClosed))
	// Output:
	// true
	// mem: pool "rx" still has 1 item(s) in use (128 B: 1)
	// <nil>
	// true
}

// SliceTrusted is Slice for a range the caller has already checked against
// the window (a decoder that checked an entry against the buffer's bytes):
// the same narrower window on the same reference, with no second check in
// the unchecked build.
func ExampleBuf_SliceTrusted() {
	p, err := mem.NewPool(mem.PoolConfig{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	pkt, _ := p.AllocCopy([]byte("GET key42\r\n"))
	off, n := 4, 5
	if off+n <= len(pkt.Bytes()) { // checked once, against the bytes
		key := pkt.SliceTrusted(off, n)
		fmt.Printf("%q same window as Slice: %v\n", key.Bytes(), key == pkt.Slice(off, n))
	}
	pkt.Release()
	fmt.Println("in use:", p.InUse())
	// Output:
	// "key42" same window as Slice: true
	// in use: 0
}

// TryClone and TryRelease are the inlinable common cases of Clone and
// Release; a caller falls back to the full call when they decline.
func ExampleBuf_TryClone() {
	p, err := mem.NewPool(mem.PoolConfig{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	b, _ := p.AllocCopy([]byte("payload"))
	held := b
	if !held.TryClone() { // declined (e.g. a Concurrent pool): take the slow path
		held = b.Clone()
	}
	b.Release() // the caller's own reference
	fmt.Printf("%q refs=%d\n", held.Bytes(), held.Refs())
	if !held.TryRelease() { // the last reference: Release frees the item
		held.Release()
	}
	fmt.Println("in use:", p.InUse())
	// Output:
	// "payload" refs=1
	// in use: 0
}
