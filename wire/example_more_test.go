package wire_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

// A received message is decoded zero-copy: its fields alias the packet,
// which the arena keeps alive with its own reference until Reset, so the
// receiver releases its reference at once. A large field of the request
// goes into the response without a copy (the echo server's case).
func ExampleDecode() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-decode"})
	if err != nil {
		panic(err)
	}
	a := wire.NewArena()

	// The sender: a message flattened into one buffer.
	req := testmsg.NewItemV1(a)
	req.SetId(42)
	req.SetName("key-42")
	req.SetData(bytes.Repeat([]byte{0xab}, 1024))
	flat, err := wire.Flatten(req, nil)
	if err != nil {
		panic(err)
	}
	_ = a.Reset()

	// The receiver: the packet arrives in registered memory.
	pkt, err := pool.AllocCopy(flat)
	if err != nil {
		panic(err)
	}
	m := testmsg.NewItemV1(a)
	if err := m.Decode(pkt); err != nil {
		panic(err)
	}
	fmt.Println("packet refs after Decode:", pkt.Refs())
	data, p := m.GetData(), pkt.Bytes()
	fmt.Println("data aliases the packet:", &data[0] == &p[len(p)-len(data)])
	_ = pkt.Release() // the arena keeps the packet alive

	name, err := m.GetName()
	fmt.Println(m.GetId(), name, err, len(data))

	resp := testmsg.NewItemV1(a)
	resp.SetId(m.GetId())
	resp.SetData(m.GetData()) // ≥ 512 bytes of the registered packet: zero-copy
	fmt.Printf("response: %+v\n", resp.Sizes())

	if err := a.Reset(); err != nil { // releases the packet
		panic(err)
	}
	fmt.Println("items in use after Reset:", pool.InUse())
	fmt.Println(pool.Close())
	// Output:
	// packet refs after Decode: 2
	// data aliases the packet: true
	// 42 key-42 <nil> 1024
	// response: {Header:24 Copied:0 ZeroCopy:1024 Entries:1}
	// items in use after Reset: 0
	// <nil>
}

// Decoding checks every offset and size against the input: a malformed
// message gives a *DecodeError that says where and why, and matches
// ErrMalformed. It never panics and never reads outside the input.
func ExampleDecodeError() {
	a := wire.NewArena()
	defer a.Reset()
	m := testmsg.NewItemV1(a)
	m.SetId(7)
	m.SetName("ab")
	buf, err := wire.Flatten(m, nil) // 26 bytes, as in the Flatten example
	if err != nil {
		panic(err)
	}

	bad := [][]byte{
		buf[:len(buf)-1],                       // truncated: the name runs past the end
		buf[:10],                               // truncated inside the entries
		append([]byte{0, 1, 0, 0}, buf[4:]...), // 256 bitmap words claimed
	}
	for _, in := range bad {
		err := testmsg.NewItemV1(a).DecodeBytes(in)
		var de *wire.DecodeError
		if errors.As(err, &de) && errors.Is(err, wire.ErrMalformed) {
			fmt.Printf("offset %d, field %d: %s\n", de.Off, de.Field, de.Reason)
		}
	}

	// Arena.Limit bounds what an untrusted message can make decoding
	// allocate: here a list of 1000 nested messages, decoded on first access.
	big := testmsg.NewAllTypes(a)
	kids := big.InitKids(1000)
	for range 1000 {
		kids.Append(testmsg.NewInner(a))
	}
	buf, err = wire.Flatten(big, nil)
	if err != nil {
		panic(err)
	}
	small := wire.NewArena()
	small.Limit = 16 << 10
	d := testmsg.NewAllTypes(small)
	fmt.Println("decode:", d.DecodeBytes(buf))
	_, err = d.GetKids()
	fmt.Println(err)
	fmt.Println(errors.Is(err, wire.ErrMalformed), errors.Is(err, wire.ErrArenaLimit))
	_ = small.Reset()
	// Output:
	// offset 16, field 2: data range out of bounds
	// offset 0, field 0: truncated field entries
	// offset 0, field 0: truncated bitmap
	// decode: <nil>
	// wire: decode: materializing at offset 16 (field 32): wire: arena limit exceeded
	// true true
}

// Strings are checked for UTF-8 when read, not when decoded: a string with
// invalid bytes gives ErrInvalidUTF8 from its getter (String.Get,
// StringList.At), never a string, while the raw bytes stay readable.
func ExampleStringList() {
	a := wire.NewArena()
	defer a.Reset()
	m := testmsg.NewAllTypes(a)
	m.SetNameBytes([]byte("caf\xc3")) // truncated UTF-8
	names := m.InitNames(3)
	names.Append("alpha")
	names.AppendBytes([]byte{'b', 0xff})
	names.Append("γάμμα")
	buf, err := wire.Flatten(m, nil)
	if err != nil {
		panic(err)
	}

	d := testmsg.NewAllTypes(a)
	if err := d.DecodeBytes(buf); err != nil {
		panic(err) // decoding does not look at the strings' bytes
	}
	_, err = d.GetName()
	fmt.Printf("name: %v, raw %q\n", err, d.GetNameBytes())
	l, err := d.GetNames()
	if err != nil {
		panic(err)
	}
	for i := range l.Len() {
		s, err := l.At(i)
		fmt.Printf("%d: %q %v, raw %q\n", i, s, err, l.AtBytes(i))
	}
	// Output:
	// name: wire: string field is not valid UTF-8, raw "caf\xc3"
	// 0: "alpha" <nil>, raw "alpha"
	// 1: "" wire: string field is not valid UTF-8, raw "b\xff"
	// 2: "γάμμα" <nil>, raw "γάμμα"
}

// A list of bytes applies the hybrid rule to every element: small values
// and values outside registered memory are copied, large registered ones
// become zero-copy entries. AppendBuf takes the value from a mem.Buf (the
// caller keeps its reference). A decoded list is read in place.
func ExampleBytesList() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-byteslist"})
	if err != nil {
		panic(err)
	}
	reg, err := pool.AllocCopy(bytes.Repeat([]byte{'r'}, 1024))
	if err != nil {
		panic(err)
	}
	heap := bytes.Repeat([]byte{'h'}, 1024)

	a := wire.NewArena() // Threshold 512
	m := testmsg.NewBufs(a)
	l := m.InitMessages(4)
	l.Append(reg.Bytes()[:100])    // small: copied
	l.Append(reg.Bytes())          // large and registered: zero-copy
	l.Append(heap)                 // large, Go heap: copied
	l.AppendBuf(reg.Slice(0, 600)) // from a Buf: zero-copy, the arena takes its own reference
	for i := range l.Len() {
		fmt.Printf("element %d: %4d bytes, zero-copy %v\n", i, len(l.At(i)), l.IsZeroCopy(i))
	}
	fmt.Printf("%+v\n", m.Sizes())

	buf, err := wire.Flatten(m, nil)
	if err != nil {
		panic(err)
	}
	d := testmsg.NewBufs(a)
	if err := d.DecodeBytes(buf); err != nil {
		panic(err)
	}
	dl, err := d.GetMessages()
	if err != nil {
		panic(err)
	}
	fmt.Println("decoded:", dl.Len(), "elements,", string(dl.At(2)[:3]), len(dl.At(3)))

	_ = a.Reset()
	_ = reg.Release()
	fmt.Println(pool.Close())
	// Output:
	// element 0:  100 bytes, zero-copy false
	// element 1: 1024 bytes, zero-copy true
	// element 2: 1024 bytes, zero-copy false
	// element 3:  600 bytes, zero-copy true
	// {Header:48 Copied:1124 ZeroCopy:1624 Entries:2}
	// decoded: 4 elements, hhh 600
	// <nil>
}

// Sizes shows what the threshold decides: the same three registered values
// (64, 1024 and 4096 bytes) in the default hybrid mode, with Threshold 0
// (every registered value zero-copy) and with CopyAll (everything in the
// head). Head() bytes go into one TX buffer, each entry is one more
// scatter-gather element.
func ExampleSizes() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-sizes"})
	if err != nil {
		panic(err)
	}
	var vals []mem.Buf
	for _, n := range []int{64, 1024, 4096} {
		v, err := pool.AllocCopy(make([]byte, n))
		if err != nil {
			panic(err)
		}
		vals = append(vals, v)
	}

	a := wire.NewArena()
	for _, mode := range []struct {
		name      string
		threshold int
	}{{"hybrid", wire.DefaultThreshold}, {"zero-copy", 0}, {"copy", wire.CopyAll}} {
		a.Threshold = mode.threshold
		m := testmsg.NewBufs(a)
		l := m.InitMessages(len(vals))
		for _, v := range vals {
			l.Append(v.Bytes())
		}
		s := m.Sizes()
		fmt.Printf("%-9s head %4d (header %d + copied %4d), %d entries of %4d bytes, total %d\n",
			mode.name, s.Head(), s.Header, s.Copied, s.Entries, s.ZeroCopy, s.Total())
		_ = a.Reset()
	}
	for _, v := range vals {
		_ = v.Release()
	}
	fmt.Println(pool.Close())
	// Output:
	// hybrid    head  104 (header 40 + copied   64), 2 entries of 5120 bytes, total 5224
	// zero-copy head   40 (header 40 + copied    0), 3 entries of 5184 bytes, total 5224
	// copy      head 5224 (header 40 + copied 5184), 0 entries of    0 bytes, total 5224
	// <nil>
}

// ReadHeader is the schema-less view of a message's fixed part (for tools):
// the present fields and their raw 8-byte entries. AppendHeader writes one.
func ExampleReadHeader() {
	a := wire.NewArena()
	defer a.Reset()
	m := testmsg.NewItemV1(a)
	m.SetId(7)
	m.SetName("ab")
	buf, err := wire.Flatten(m, nil)
	if err != nil {
		panic(err)
	}
	fields, n, err := wire.ReadHeader(buf, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("fixed part:", n, "bytes")
	for _, f := range fields {
		fmt.Printf("field %d: lo %d hi %d\n", f.Num, f.Lo(), f.Hi())
	}
	hdr, err := wire.AppendHeader(nil, fields)
	fmt.Println(bytes.Equal(hdr, buf[:n]), err)
	// Output:
	// fixed part: 24 bytes
	// field 1: lo 7 hi 0
	// field 2: lo 2 hi 24
	// true <nil>
}
