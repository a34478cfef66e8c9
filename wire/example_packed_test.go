package wire_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

// SetBuf makes a list of floats in registered memory the list's elements
// without copying: at or above the arena's threshold it is sent as one
// zero-copy entry, and a reader views it in place as a []float32.
func ExampleScalarList_SetBuf() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-packed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	buf, err := pool.Alloc(4 * 256)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := buf.Bytes()
	for i := range 256 {
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(float32(i)/2))
	}

	a := wire.NewArena()
	l := testmsg.NewAllTypes(a).InitRFl(0) // repeated float r_fl
	if err := l.SetBuf(buf); err != nil {
		fmt.Println(err)
		return
	}
	_ = buf.Release() // the arena holds its own reference until Reset
	fmt.Println(l.Len(), l.At(3), l.IsZeroCopy())
	l.SetAt(3, 9) // copies into the arena first: registered memory is never written
	fmt.Println(l.At(3), l.IsZeroCopy())
	_ = a.Reset()
	// Output:
	// 256 1.5 true
	// 9 false
}
