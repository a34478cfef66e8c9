package cf_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Decoding a received buffer with the generated DecodeSingleBuffer: the
// message is made in the arena and decoded zero-copy in one call; it and
// its values are valid until the arena's Reset.
func ExampleDecodeSingleBuffer() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example"})
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	a := wire.NewArena()

	// A received message, in registered memory.
	m := cf.NewSingleBuffer(a)
	m.SetMessage([]byte("hello"))
	p, err := wire.Flatten(m, nil)
	if err != nil {
		panic(err)
	}
	in, err := pool.AllocCopy(p)
	if err != nil {
		panic(err)
	}
	defer in.Release() // after the arena's Reset: the decoded value aliases it

	x, err := cf.DecodeSingleBuffer(a, in)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(x.GetMessage()))

	_, err = cf.DecodeSingleBuffer(a, mem.Buf{})
	fmt.Println(err != nil)
	if err := a.Reset(); err != nil {
		panic(err)
	}
	// Output:
	// hello
	// true
}
