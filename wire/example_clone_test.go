package wire_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

// Clone copies a message out of its arena: into another arena, or (nil)
// into plain Go memory that outlives every Reset.
func ExampleClone() {
	a := wire.NewArena()
	m := testmsg.NewItemV1(a)
	m.SetId(7)
	m.SetName("seven")

	b := wire.NewArena()
	inB, err := wire.Clone(m, b, testmsg.NewItemV1)
	if err != nil {
		fmt.Println(err)
		return
	}
	heap, err := wire.Clone(m, nil, testmsg.NewItemV1)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = a.Reset() // m is gone; the clones are not

	fmt.Println(inB)
	fmt.Println(heap)
	_ = b.Reset()
	fmt.Println(heap.GetId())
	// Output:
	// ItemV1{id:7 name:"seven"}
	// ItemV1{id:7 name:"seven"}
	// 7
}
