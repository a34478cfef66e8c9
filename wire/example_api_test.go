package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

// DecodeBytes decodes from a plain []byte. Bytes on the Go heap are aliased
// and the caller keeps them alive and unchanged until the arena's Reset;
// bytes in registered memory are held by the arena with a reference of its
// own, so the caller may release its buffer at once.
func ExampleDecodeBytes() {
	a := wire.NewArena()
	m := testmsg.NewItemV1(a)
	m.SetId(7)
	m.SetName("seven")
	flat, err := wire.Flatten(m, nil)
	if err != nil {
		panic(err)
	}

	// From the Go heap: flat must stay untouched until Reset.
	d := testmsg.NewItemV1(a)
	if err := wire.DecodeBytes(d, flat); err != nil { // the same as d.DecodeBytes(flat)
		panic(err)
	}
	name, _ := d.GetName()
	fmt.Println("heap:", d.GetId(), name, "references held:", a.Held())
	_ = a.Reset()

	// From registered memory: the arena takes a reference.
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-decodebytes"})
	if err != nil {
		panic(err)
	}
	pkt, err := pool.AllocCopy(flat)
	if err != nil {
		panic(err)
	}
	r := testmsg.NewItemV1(a)
	if err := r.DecodeBytes(pkt.Bytes()); err != nil {
		panic(err)
	}
	_ = pkt.Release() // the arena's reference keeps the bytes alive
	name, _ = r.GetName()
	fmt.Println("registered:", r.GetId(), name, "references held:", a.Held())
	if err := a.Reset(); err != nil { // drops the last reference
		panic(err)
	}
	fmt.Println(pool.InUse(), pool.Close())
	// Output:
	// heap: 7 seven references held: 0
	// registered: 7 seven references held: 1
	// 0 <nil>
}

// Old and new readers understand each other: an ItemV1 reader skips the
// fields ItemV2 added, and an ItemV2 reader sees them as absent in an
// ItemV1 message (docs/WIRE_FORMAT.md).
func ExampleDecodeBytes_schemaEvolution() {
	a := wire.NewArena()
	defer a.Reset()

	v2 := testmsg.NewItemV2(a)
	v2.SetId(2)
	v2.SetName("new")
	extra := v2.InitExtra(2)
	extra.Append(1)
	extra.Append(-2)
	v2.SetScore(0.5)
	newer, err := wire.Flatten(v2, nil)
	if err != nil {
		panic(err)
	}
	old := testmsg.NewItemV1(a)
	if err := old.DecodeBytes(newer); err != nil {
		panic(err)
	}
	fmt.Println("v1 reads v2:", old)

	v1 := testmsg.NewItemV1(a)
	v1.SetId(1)
	v1.SetName("old")
	older, err := wire.Flatten(v1, nil)
	if err != nil {
		panic(err)
	}
	cur := testmsg.NewItemV2(a)
	if err := cur.DecodeBytes(older); err != nil {
		panic(err)
	}
	fmt.Println("v2 reads v1:", cur, cur.HasExtra(), cur.HasScore())
	// Output:
	// v1 reads v2: ItemV1{id:2 name:"new"}
	// v2 reads v1: ItemV2{id:1 name:"old"} false false
}

// SerializeTo is what a generated Serialize method runs. dst must be exactly
// Sizes().Head() bytes, and the message must not change its layout between
// Sizes and Serialize: both mistakes are reported, nothing is written out
// of place.
func ExampleSerializeTo() {
	a := wire.NewArena()
	defer a.Reset()
	m := testmsg.NewItemV1(a)
	m.SetId(7)
	m.SetName("ab")

	var sga wire.SGA
	sz := m.Sizes()
	err := wire.SerializeTo(m, make([]byte, sz.Head()+1), &sga)
	fmt.Println("dst too long:", errors.Is(err, wire.ErrDstSize))

	m.SetName("abc") // one byte more than Sizes saw
	err = m.Serialize(make([]byte, sz.Head()), &sga)
	fmt.Println("changed since Sizes:", errors.Is(err, wire.ErrModified))

	sz = m.Sizes() // size again after changing the message
	head := make([]byte, sz.Head())
	err = wire.SerializeTo(m, head, &sga)
	fmt.Println(len(head), err)
	// Output:
	// dst too long: true
	// changed since Sizes: true
	// 27 <nil>
}

// Object is what a transport consumes: Sizes says how large the head is,
// Serialize fills it and reports the zero-copy values in wire order. This
// writeObject sends any generated message with one vectored write (writev
// on a TCP connection), the head followed by each value where it lives.
func ExampleObject() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-object"})
	if err != nil {
		panic(err)
	}
	value, err := pool.AllocCopy(bytes.Repeat([]byte{'v'}, 2048))
	if err != nil {
		panic(err)
	}

	writeObject := func(w io.Writer, obj wire.Object) (int64, error) {
		sz := obj.Sizes()
		sga := wire.SGA{Head: make([]byte, sz.Head())}
		if err := obj.Serialize(sga.Head, &sga); err != nil {
			return 0, err
		}
		bufs := net.Buffers{sga.Head}
		for _, e := range sga.Entries { // borrowed: used before the arena's Reset
			bufs = append(bufs, e.Bytes())
		}
		return bufs.WriteTo(w)
	}

	a := wire.NewArena()
	m := testmsg.NewItemV1(a)
	m.SetId(1)
	m.SetDataBuf(value) // 2048 registered bytes: zero-copy
	var stream bytes.Buffer
	n, err := writeObject(&stream, m)
	fmt.Println(n, err, m.Sizes().Total())

	d := testmsg.NewItemV1(a)
	fmt.Println(d.DecodeBytes(stream.Bytes()), d.GetId(), len(d.GetData()))

	_ = a.Reset()
	_ = value.Release()
	fmt.Println(pool.Close())
	// Output:
	// 2072 <nil> 2072
	// <nil> 1 2048
	// <nil>
}

// keepingSink is an EntrySink that keeps the zero-copy values it is given.
type keepingSink struct{ kept []mem.Buf }

// ZeroCopyEntry implements wire.EntrySink: b is borrowed, so it is cloned.
func (s *keepingSink) ZeroCopyEntry(b mem.Buf) error {
	s.kept = append(s.kept, b.Clone())
	return nil
}

// release drops the kept references (when the send has completed).
func (s *keepingSink) release() {
	for _, b := range s.kept {
		_ = b.Release()
	}
	s.kept = s.kept[:0]
}

// An EntrySink receives a message's zero-copy values during Serialize.
// Each Buf is borrowed for the call: a sink that needs the memory later,
// as a datapath does until its send has completed, Clones it, and so the
// value outlives the arena's Reset until the sink releases it.
func ExampleEntrySink() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-entrysink"})
	if err != nil {
		panic(err)
	}
	value, err := pool.AllocCopy(bytes.Repeat([]byte{'z'}, 1024))
	if err != nil {
		panic(err)
	}

	a := wire.NewArena()
	m := testmsg.NewItemV1(a)
	m.SetData(value.Bytes()) // zero-copy: the arena holds a reference
	_ = value.Release()      // the application is done with the value

	var sink keepingSink
	head := make([]byte, m.Sizes().Head())
	if err := m.Serialize(head, &sink); err != nil {
		panic(err)
	}
	_ = a.Reset() // the batch is over, but the send is still in flight
	fmt.Println("kept:", len(sink.kept), "entry, refs", sink.kept[0].Refs(), "in use", pool.InUse())

	sink.release() // the send completed
	fmt.Println("in use:", pool.InUse(), pool.Close())
	// Output:
	// kept: 1 entry, refs 1 in use 1
	// in use: 0 <nil>
}

// An SGA is reused from message to message: SerializeSGA overwrites it and
// keeps its capacity. AppendTo gives the bytes a receiver sees, the same
// as Flatten's.
func ExampleSGA() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-sga-reuse"})
	if err != nil {
		panic(err)
	}
	value, err := pool.AllocCopy(bytes.Repeat([]byte{'x'}, 600))
	if err != nil {
		panic(err)
	}

	a := wire.NewArena()
	var sga wire.SGA
	for id := range uint64(2) {
		m := testmsg.NewItemV1(a)
		m.SetId(id)
		if id == 1 {
			m.SetData(value.Bytes()) // 600 registered bytes: zero-copy
		}
		if err := wire.SerializeSGA(m, &sga); err != nil {
			panic(err)
		}
		flat, _ := wire.Flatten(m, nil)
		fmt.Printf("id %d: head %d, entries %d, total %d, same as Flatten: %v\n",
			id, len(sga.Head), len(sga.Entries), sga.Len(), bytes.Equal(sga.AppendTo(nil), flat))
		_ = a.Reset() // the entries are borrowed: done with them before Reset
	}
	_ = value.Release()
	fmt.Println(pool.Close())
	// Output:
	// id 0: head 4, entries 0, total 4, same as Flatten: true
	// id 1: head 24, entries 1, total 624, same as Flatten: true
	// <nil>
}

// Msg is the interface of every generated message, so code can handle
// messages without knowing their types: here a server decodes each request
// into the message type its request type names, and logs it.
func ExampleMsg() {
	newRequest := map[uint8]func(*wire.Arena) wire.Msg{
		1: func(a *wire.Arena) wire.Msg { return testmsg.NewItemV1(a) },
		2: func(a *wire.Arena) wire.Msg { return testmsg.NewInner(a) },
	}
	a := wire.NewArena()
	defer a.Reset()

	// Two requests as they arrive: a request type and a payload.
	item := testmsg.NewItemV1(a)
	item.SetId(1)
	item.SetName("one")
	p1, _ := wire.Flatten(item, nil)
	inner := testmsg.NewInner(a)
	inner.SetId(9)
	inner.InitTags(1).Append("t")
	p2, _ := wire.Flatten(inner, nil)

	for _, r := range []struct {
		reqType uint8
		payload []byte
	}{{1, p1}, {2, p2}} {
		m := newRequest[r.reqType](a)
		if err := wire.DecodeBytes(m, r.payload); err != nil {
			fmt.Println(r.reqType, err)
			continue
		}
		fmt.Printf("type %d: %v, %d bytes\n", r.reqType, m, m.Sizes().Total())
	}
	// Output:
	// type 1: ItemV1{id:1 name:"one"}, 27 bytes
	// type 2: Inner{id:9 tags:["t"]}, 33 bytes
}

// Every generated String method returns a one-line text form: short bytes
// and strings are quoted (invalid UTF-8 escaped), longer values shown by
// length, enums by name, lists and nested messages in place.
func Example_text() {
	a := wire.NewArena()
	defer a.Reset()
	m := testmsg.NewAllTypes(a)
	m.SetI32(-3)
	m.SetColor(testmsg.Color_BLUE)
	m.SetData(bytes.Repeat([]byte{'d'}, 100)) // longer than 64 bytes: shown by length
	m.SetNameBytes([]byte("caf\xc3"))
	r := m.InitRI32(2)
	r.Append(1)
	r.Append(2)
	kids := m.InitKids(2)
	kids.Append(testmsg.NewInner(a))
	kid := testmsg.NewInner(a)
	kid.SetId(5)
	kids.Append(kid)
	fmt.Println(m)
	// Output:
	// AllTypes{i32:-3 color:BLUE data:<100 bytes> name:"caf\xc3" r_i32:[1 2] kids:[Inner{} Inner{id:5}]}
}

// Generated Equal methods compare floats by bits, so a NaN equals the same
// NaN and -0 differs from +0, unlike ==.
func Example_equal() {
	a := wire.NewArena()
	defer a.Reset()
	x, y := testmsg.NewAllTypes(a), testmsg.NewAllTypes(a)
	x.SetDb(math.NaN())
	y.SetDb(math.NaN())
	fmt.Println(x.GetDb() == y.GetDb(), x.Equal(y))

	x.SetDb(math.Copysign(0, -1)) // -0: present on the wire, unlike 0
	y.SetDb(0)
	fmt.Println(x.GetDb() == y.GetDb(), x.Equal(y))
	// Output:
	// false true
	// true false
}
