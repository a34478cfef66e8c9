package kvpb_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// A client builds a PutM request in its arena and serializes it; the
// server decodes it lazily and zero-copy: keys and values alias the
// received bytes.
func ExampleNewReq() {
	client := wire.NewArena()
	defer client.Reset()
	req := kvpb.NewReq(client)
	keys := req.InitKeys(2) // room for 2 elements
	keys.Append([]byte("user1"))
	keys.Append([]byte("user2"))
	vals := req.InitVals(2)
	vals.Append([]byte("one"))
	vals.Append([]byte("two"))
	packet, err := wire.Flatten(req, nil) // one contiguous buffer
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(packet), "bytes:", req)

	server := wire.NewArena()
	defer server.Reset() // the decoded fields are valid until then
	got := kvpb.NewReq(server)
	if err := got.DecodeBytes(packet); err != nil {
		fmt.Println(err)
		return
	}
	ks, err := got.GetKeys() // decoded on first access, bounds-checked
	if err != nil {
		fmt.Println(err)
		return
	}
	vs, err := got.GetVals()
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range ks.Len() {
		fmt.Printf("%s=%s\n", ks.At(i), vs.At(i))
	}
	fmt.Println("index:", got.GetIndex(), "equal to the request:", got.Equal(req))
	k := ks.At(0) // not a copy: it points into packet
	fmt.Println("aliases the packet:", &k[0] == &packet[bytes.Index(packet, k)])

	// Untrusted input is bounds-checked: a truncated packet is an error,
	// from Decode or from the getter that loads the broken list.
	bad := kvpb.NewReq(server)
	err = bad.DecodeBytes(packet[:40])
	if err == nil {
		_, err = bad.GetKeys()
	}
	fmt.Println(errors.Is(err, wire.ErrMalformed), err)
	// Output:
	// 72 bytes: Req{keys:["user1" "user2"] vals:["one" "two"]}
	// user1=one
	// user2=two
	// index: 0 equal to the request: true
	// aliases the packet: true
	// true wire: decode: list region out of range or overlapping at offset 16 (field 2)
}

// The server answers a Get with a value that lives in registered memory
// (the store's). At or above the arena's threshold (512 B by default) the
// value is not copied: it is one zero-copy scatter-gather entry, held by a
// reference until the arena is Reset. Below it, values are copied into
// the head.
func ExampleNewResp() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-kvpb-store"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := pool.Close(); err != nil { // fails if a reference leaked
			fmt.Println(err)
		}
	}()
	stored, err := pool.AllocCopy(bytes.Repeat([]byte("v"), 4096)) // a stored value
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stored.Release() // the store's own reference

	a := wire.NewArena()
	resp := kvpb.NewResp(a) // status 0 (ok) is the default
	resp.SetValBuf(stored)  // the arena takes its own reference
	fmt.Printf("%+v, refs %d\n", resp.Sizes(), stored.Refs())

	var sga wire.SGA // what the datapath sends: a head, then the entries
	if err := wire.SerializeSGA(resp, &sga); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("head", len(sga.Head), "entries", len(sga.Entries), "total", sga.Len())
	if err := a.Reset(); err != nil { // end of the batch: drops the arena's references
		fmt.Println(err)
	}
	fmt.Println("after Reset: refs", stored.Refs())

	small := kvpb.NewResp(a) // a GetList answer of small values: all copied
	l := small.InitVals(2)
	l.Append([]byte("tiny"))
	l.Append(stored.Bytes()[:100])
	fmt.Printf("%+v, refs %d\n", small.Sizes(), stored.Refs())
	_ = a.Reset()
	// Output:
	// {Header:16 Copied:0 ZeroCopy:4096 Entries:1}, refs 2
	// head 16 entries 1 total 4112
	// after Reset: refs 1
	// {Header:32 Copied:104 ZeroCopy:0 Entries:0}, refs 1
}

// The receive path: a packet in registered memory (a datapath's receive
// buffer) decoded with Decode. The arena holds a reference on the buffer
// instead of copying it, so the value stays valid until Reset even after
// the caller releases its own reference.
func ExampleResp_Decode() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-kvpb-rx"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := pool.Close(); err != nil {
			fmt.Println(err)
		}
	}()

	// The sender's side: a GetM answer with two values.
	tx := wire.NewArena()
	m := kvpb.NewResp(tx)
	vals := m.InitVals(2)
	vals.Append([]byte("first"))
	vals.Append([]byte("second"))
	packet, err := wire.Flatten(m, nil)
	_ = tx.Reset()
	if err != nil {
		fmt.Println(err)
		return
	}
	rx, err := pool.AllocCopy(packet) // as received
	if err != nil {
		fmt.Println(err)
		return
	}

	a := wire.NewArena()
	resp := kvpb.NewResp(a)
	if err := resp.Decode(rx); err != nil {
		fmt.Println(err)
		_ = rx.Release()
		_ = a.Reset()
		return
	}
	fmt.Println("refs on the packet:", rx.Refs())
	_ = rx.Release() // the receiver's own reference; the arena still holds one
	l, err := resp.GetVals()
	if err != nil {
		fmt.Println(err)
	} else {
		fmt.Printf("status %d: %s, %s (in registered memory: %v)\n",
			resp.GetStatus(), l.At(0), l.At(1), mem.IsRegistered(l.At(1)))
	}
	fmt.Println("held:", a.Held())
	_ = a.Reset() // releases the packet
	fmt.Println("held after Reset:", a.Held())
	// Output:
	// refs on the packet: 2
	// status 0: first, second (in registered memory: true)
	// held: 1
	// held after Reset: 0
}
