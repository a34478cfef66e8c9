package constructs_test

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

// A oneof has a Which accessor and typed setters; setting one member
// clears the others.
func ExampleItem_WhichChoice() {
	a := wire.NewArena()
	defer a.Reset()
	x := constructs.NewItem(a)
	x.SetI32(5)
	x.SetName("n") // clears i32
	fmt.Println(x.WhichChoice() == constructs.Item_Name_case, x.HasI32())
	x.ClearChoice()
	fmt.Println(x.WhichChoice() == constructs.Item_Choice_not_set_case)
	// Output:
	// true false
	// true
}

// A map keeps its entries in ascending key order: Get, Set, Len, Delete,
// and At for iteration.
func ExampleItem_GetByStr() {
	a := wire.NewArena()
	defer a.Reset()
	x := constructs.NewItem(a)
	m, _ := x.GetByStr()
	m.Set("b", []byte("2"))
	m.Set("a", []byte("1"))
	m.Set("c", []byte("3"))
	m.Delete("c")
	v, ok := m.Get("a")
	fmt.Println(m.Len(), string(v), ok)
	for i := range m.Len() {
		k, _ := m.At(i).GetKey()
		fmt.Print(k, " ")
	}
	fmt.Println()
	// Output:
	// 2 1 true
	// a b
}

// A proto2 required field that is missing fails the decode, naming it.
func ExampleReq() {
	a := wire.NewArena()
	defer a.Reset()
	l := constructs.NewLoose(a)
	l.SetName("n")
	p, _ := wire.Flatten(l, nil)
	err := constructs.NewReq(a).DecodeBytes(p)
	fmt.Println(errors.Is(err, wire.ErrRequired))
	fmt.Println(err)
	// Output:
	// true
	// wire: decode: required field gentest.constructs.req.Req.id (1) is missing at offset 0 (field 1): wire: required field missing
}
