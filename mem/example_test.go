package mem_test

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
)

func ExampleNewPool() {
	p, err := mem.NewPool(mem.PoolConfig{Name: "values", MaxBytes: 64 << 20})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	b, err := p.Alloc(1000) // served from the 1024-byte class
	if err != nil {
		panic(err)
	}
	n := copy(b.Bytes(), "hello, registered memory")
	fmt.Println(string(b.Bytes()[:n]), b.Len(), b.Refs(), p.InUse())
	if err := b.Release(); err != nil {
		panic(err)
	}
	fmt.Println(p.InUse())
	// Output:
	// hello, registered memory 1000 1 1
	// 0
}

func ExampleRecover() {
	p, _ := mem.NewPool(mem.PoolConfig{})
	defer p.Close()
	b, _ := p.AllocCopy([]byte("key=value"))
	defer b.Release()

	// Any interior slice of a live item recovers a new reference...
	v := b.Bytes()[4:]
	r, ok := mem.Recover(v)
	fmt.Println(ok, string(r.Bytes()), r.Refs())
	r.Release()

	// ...while other memory does not.
	_, ok = mem.Recover([]byte("value"))
	fmt.Println(ok)
	// Output:
	// true value 2
	// false
}

func ExampleBuf_Clone() {
	p, _ := mem.NewPool(mem.PoolConfig{})
	defer p.Close()
	b, _ := p.AllocCopy([]byte("payload"))

	// A send that completes later holds its own reference.
	inFlight := b.Clone()
	b.Release()                     // the sender is done with it
	fmt.Println(inFlight.Refs())    // the item stays alive
	fmt.Println(inFlight.Release()) // completion drops the last reference
	err := inFlight.Release()       // a second release is caught
	fmt.Println(errors.Is(err, mem.ErrDoubleRelease))
	// Output:
	// 1
	// <nil>
	// true
}

func ExampleNewSpace() {
	// A fully committed 4 MiB space, e.g. to register as an AF_XDP UMEM,
	// carved into 2048-byte frames.
	s, err := mem.NewSpace(mem.SpaceConfig{Size: 4 << 20, Commit: true})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	frames, _ := mem.NewPool(mem.PoolConfig{Name: "umem", MinClass: 2048, MaxClass: 2048, Space: s, MaxBytes: 4 << 20})
	defer frames.Close()

	f, _ := frames.Alloc(1500)
	off, _ := s.Offset(f.Bytes()) // the frame's UMEM address
	fmt.Println(off%2048 == 0, f.Len())
	f.Release()
	// Output:
	// true 1500
}
