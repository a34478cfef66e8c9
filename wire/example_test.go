package wire_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

// An arena per batch: build, send, then Reset once, which releases every
// reference the batch's messages hold.
func ExampleArena() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-arena"})
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	value, _ := pool.AllocCopy(make([]byte, 4096)) // a value in registered memory
	a := wire.NewArena()                           // Threshold 512
	for batch := range 2 {
		m := testmsg.NewItemV1(a)
		m.SetId(uint64(batch + 1))
		m.SetName("small, copied")
		m.SetData(value.Bytes()) // large and registered: zero-copy, +1 reference
		fmt.Printf("batch %d: %+v, value refs %d\n", batch, m.Sizes(), value.Refs())
		if err := a.Reset(); err != nil { // releases the reference
			panic(err)
		}
	}
	fmt.Println("after Reset:", value.Refs(), "reference")
	_ = value.Release()
	// Output:
	// batch 0: {Header:32 Copied:13 ZeroCopy:4096 Entries:1}, value refs 2
	// batch 1: {Header:32 Copied:13 ZeroCopy:4096 Entries:1}, value refs 2
	// after Reset: 1 reference
}

// Flatten writes the whole object, zero-copy values included, into one buffer.
func ExampleFlatten() {
	a := wire.NewArena()
	defer a.Reset()
	m := testmsg.NewItemV1(a)
	m.SetId(7)
	m.SetName("ab")
	buf, err := wire.Flatten(m, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes: % x\n", len(buf), buf)

	d := testmsg.NewItemV1(a)
	if err := d.DecodeBytes(buf); err != nil {
		panic(err)
	}
	name, _ := d.GetName()
	fmt.Println(d.GetId(), name)
	// Output:
	// 26 bytes: 01 00 00 00 03 00 00 00 07 00 00 00 00 00 00 00 02 00 00 00 18 00 00 00 61 62
	// 7 ab
}

// SerializeSGA produces the HotOS scatter-gather array: one head buffer, then
// one entry per zero-copy value. The SGA is reused across calls.
func ExampleSerializeSGA() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-sga"})
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	v1, _ := pool.AllocCopy(make([]byte, 2048))
	v2, _ := pool.AllocCopy(make([]byte, 2048))
	defer v1.Release()
	defer v2.Release()

	a := wire.NewArena()
	var sga wire.SGA
	m := testmsg.NewBufs(a)
	l := m.InitMessages(3)
	l.Append(v1.Bytes())
	l.Append([]byte("tiny"))
	l.Append(v2.Bytes())
	if err := wire.SerializeSGA(m, &sga); err != nil {
		panic(err)
	}
	fmt.Println("head", len(sga.Head), "entries", len(sga.Entries), "total", sga.Len())
	_ = a.Reset() // sga.Entries are borrowed: do not use them after this
	// Output: head 44 entries 2 total 4140
}
