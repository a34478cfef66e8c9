package wire_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
	"github.com/cornflakes-go/cornflakes/wkt"
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

// A map field has a generated type: entries in
// ascending key order, binary-searched. google.protobuf.Struct is a
// map<string, Value>.
func Example_map() {
	a := wire.NewArena()
	defer a.Reset()
	s := wkt.NewStruct(a)
	m, _ := s.GetFields() // wkt.Struct_FieldsMap
	m.Init("zeta").SetBoolValue(true)
	m.Init("alpha").SetNumberValue(1)
	m.Delete("zeta")
	m.Init("mid").SetStringValue("x")
	var keys []string
	for i := range m.Len() {
		k, _ := m.At(i).GetKey()
		keys = append(keys, k)
	}
	fmt.Println(keys)
	_, ok, _ := m.Get("zeta")
	fmt.Println(m.Len(), ok)
	// Output:
	// [alpha mid]
	// 2 false
}

// Field numbers above MaxFieldNumber are written in the sparse header form:
// the list of present numbers instead of a bitmap.
func ExampleAppendHeader_sparse() {
	p, _ := wire.AppendHeader(nil, []wire.HeaderField{{Num: 1, Entry: 7}, {Num: wire.MaxSparseFieldNumber, Entry: 9}})
	fmt.Printf("% x\n", p[:12])
	fields, n, _ := wire.ReadHeader(p, nil)
	fmt.Println(n, fields)
	// Output:
	// 02 00 00 80 01 00 00 00 ff ff ff 1f
	// 28 [{1 7} {536870911 9}]
}
