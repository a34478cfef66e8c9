package datapath_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Kinds lists the datapaths linked into the program, e.g. for a flag's
// help text; Open accepts each of them.
func ExampleKinds() {
	kinds := datapath.Kinds()
	fmt.Println(slices.Contains(kinds, "memnet"), slices.IsSorted(kinds))
	usage := "--datapath: one of " + strings.Join(kinds, ", ")
	fmt.Println(strings.HasPrefix(usage, "--datapath: one of "))
	// Output:
	// true true
	// true
}

// InterfaceAddrs lists an interface's addresses, e.g. to pick the local
// address a datapath binds to on a given NIC.
func ExampleInterfaceAddrs() {
	lo, ok := datapath.InterfaceOf(netip.MustParseAddr("127.0.0.1"))
	if !ok {
		fmt.Println("no loopback interface")
		return
	}
	addrs := datapath.InterfaceAddrs(lo)
	fmt.Println(slices.Contains(addrs, netip.MustParseAddr("127.0.0.1")))
	// Output: true
}

// Config holds the options every kind understands, plus the kind's own in
// Options. Here the application supplies the pool for the endpoint's
// buffers: it closes that pool itself, after the endpoint.
func ExampleConfig() {
	net := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-config", MinClass: 2048, MaxClass: 2048})
	if err != nil {
		panic(err)
	}
	ep, err := datapath.Open("memnet", datapath.Config{
		Local:       netip.MustParseAddrPort("10.2.0.1:9000"),
		Pool:        pool,
		Batch:       8,
		MaxPayload:  1500,
		MaxSegments: 4,
		Options:     memnet.Options{Network: net, RxRing: 16},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(ep.LocalAddr(), ep.MaxPayload(), ep.MaxSegments())
	err = ep.Send(ep.LocalAddr(), make([]byte, 1501))
	fmt.Println(errors.Is(err, datapath.ErrTooLarge))

	fmt.Println(ep.Close())
	fmt.Println(pool.InUse(), pool.Close())
	// Output:
	// 10.2.0.1:9000 1500 4
	// true
	// <nil>
	// 0 <nil>
}

// The three ways to send: Send copies, SendSegments sends registered
// memory zero-copy behind a copied head, and SendObject serializes a
// message straight into the packet. Segments and object values are
// borrowed for the call only: the endpoint takes its own references until
// the send completes, so the application may release its own at once.
// Every received packet is released by the receiver.
func ExampleEndpoint() {
	net := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	open := func() datapath.Endpoint {
		ep, err := net.Open(datapath.Config{}, memnet.Options{})
		if err != nil {
			panic(err)
		}
		return ep
	}
	a, b := open(), open()
	values, err := mem.NewPool(mem.PoolConfig{Name: "example-endpoint"})
	if err != nil {
		panic(err)
	}

	_ = a.Send(b.LocalAddr(), []byte("copy: hello"))

	v, _ := values.AllocCopy(bytes.Repeat([]byte{'z'}, 1000))
	_ = a.SendSegments(b.LocalAddr(), []byte("segs:"), []mem.Buf{v})
	_ = v.Release() // the endpoint holds its own reference

	arena := wire.NewArena()
	req := kvpb.NewReq(arena)
	req.InitKeys(1).AppendString("k1")
	_ = a.SendObject(b.LocalAddr(), []byte("objt:"), req) // a head, then the message
	_ = arena.Reset()
	_ = a.Flush()

	pkts := make([]datapath.Packet, datapath.DefaultBatch)
	// A bounded receive loop: on a virtual network without delay, a packet
	// is delivered by the next call of any endpoint.
	n := 0
	for try := 0; n < 3 && try < 100; try++ {
		k, err := b.Recv(pkts[n:3])
		n += k
		if err != nil {
			break
		}
	}
	for _, p := range pkts[:n] {
		data := p.Buf.Bytes()
		fmt.Printf("%q, %d bytes, from a: %v\n", data[:5], len(data), p.From == a.LocalAddr())
		_ = p.Buf.Release()
	}

	fmt.Println(a.Close(), b.Close())
	fmt.Println(values.Close())
	// Output:
	// "copy:", 11 bytes, from a: true
	// "segs:", 1005 bytes, from a: true
	// "objt:", 31 bytes, from a: true
	// <nil> <nil>
	// <nil>
}

// A Packet's Buf is a reference the receiver owns. A message decoded from
// it zero-copy aliases the packet, and the arena takes its own reference,
// so the packet can be released at once; the arena's Reset frees it.
func ExamplePacket() {
	net := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	cli, err := net.Open(datapath.Config{}, memnet.Options{})
	if err != nil {
		panic(err)
	}
	srv, err := net.Open(datapath.Config{Local: netip.MustParseAddrPort("10.3.0.1:53")}, memnet.Options{})
	if err != nil {
		panic(err)
	}

	a := wire.NewArena()
	for _, key := range []string{"alpha", "beta"} {
		req := kvpb.NewReq(a)
		req.InitKeys(1).AppendString(key)
		_ = cli.SendObject(srv.LocalAddr(), nil, req)
	}
	_ = a.Reset()
	_ = cli.Flush()

	pkts := make([]datapath.Packet, 8) // reused from batch to batch
	// A bounded receive loop: on a virtual network without delay, a packet
	// is delivered by the next call of any endpoint.
	n := 0
	for try := 0; n < 2 && try < 100; try++ {
		k, err := srv.Recv(pkts[n:2])
		n += k
		if err != nil {
			break
		}
	}
	for i := range pkts[:n] {
		p := &pkts[i]
		req := kvpb.NewReq(a)
		err := req.Decode(p.Buf) // the arena takes its own reference
		_ = p.Buf.Release()      // so the receiver's may go now
		if err != nil {
			fmt.Println(err)
			continue
		}
		keys, _ := req.GetKeys()
		fmt.Printf("key %q from the client: %v\n", keys.At(0), p.From == cli.LocalAddr())
	}
	_ = a.Reset() // releases the packets

	fmt.Println(cli.Close(), srv.Close())
	// Output:
	// key "alpha" from the client: true
	// key "beta" from the client: true
	// <nil> <nil>
}

// Stats counts what an endpoint did: packets and bytes both ways, and
// how the bytes left, copied into TX buffers or zero-copy from where they
// live.
func ExampleStats() {
	net := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	a, err := net.Open(datapath.Config{}, memnet.Options{})
	if err != nil {
		panic(err)
	}
	b, err := net.Open(datapath.Config{}, memnet.Options{})
	if err != nil {
		panic(err)
	}
	values, err := mem.NewPool(mem.PoolConfig{Name: "example-stats"})
	if err != nil {
		panic(err)
	}
	v, _ := values.AllocCopy(make([]byte, 4000))

	_ = a.Send(b.LocalAddr(), make([]byte, 100)) // one copied entry
	// A copied 20-byte head and two zero-copy segments (borrowed: the
	// endpoint clones each, so one item may back both).
	_ = a.SendSegments(b.LocalAddr(), make([]byte, 20), []mem.Buf{v, v.Slice(0, 1000)})
	_ = v.Release()
	_ = a.Flush()
	pkts := make([]datapath.Packet, 2)
	// A bounded receive loop: on a virtual network without delay, a packet
	// is delivered by the next call of any endpoint.
	n := 0
	for try := 0; n < len(pkts) && try < 100; try++ {
		k, err := b.Recv(pkts[n:])
		n += k
		if err != nil {
			break
		}
	}
	for _, p := range pkts[:n] {
		_ = p.Buf.Release()
	}

	tx, rx := a.Stats(), b.Stats()
	fmt.Printf("a sent %d packets, %d bytes: %d copied entries (%d bytes), %d zero-copy (%d bytes)\n",
		tx.TxPackets, tx.TxBytes, tx.CopiedEntries, tx.CopiedBytes, tx.ZeroCopyEntries, tx.ZeroCopyBytes)
	fmt.Printf("b received %d packets, %d bytes, %d drops\n", rx.RxPackets, rx.RxBytes, rx.Drops)

	fmt.Println(a.Close(), b.Close(), values.Close())
	// Output:
	// a sent 2 packets, 5120 bytes: 2 copied entries (120 bytes), 2 zero-copy (5000 bytes)
	// b received 2 packets, 5120 bytes, 0 drops
	// <nil> <nil> <nil>
}

// calibratedEndpoint wraps an endpoint with the hybrid threshold measured
// for its NIC by `cornflakes calibrate`.
type calibratedEndpoint struct {
	datapath.Endpoint
	threshold int
}

// HybridThreshold implements datapath.HybridThresholder.
func (c calibratedEndpoint) HybridThreshold() int { return c.threshold }

// An endpoint that implements HybridThresholder tells applications from
// which size a value goes zero-copy; HybridThreshold asks it, and the
// application sets its arenas' Threshold accordingly.
func ExampleHybridThresholder() {
	ep, err := datapath.Open("memnet", datapath.Config{})
	if err != nil {
		panic(err)
	}
	_, ok := ep.(datapath.HybridThresholder)
	fmt.Println("memnet reports one:", ok, datapath.HybridThreshold(ep))

	a := wire.NewArena()
	a.Threshold = datapath.HybridThreshold(calibratedEndpoint{ep, 1024})
	fmt.Println("calibrated:", a.Threshold)
	fmt.Println(ep.Close())
	// Output:
	// memnet reports one: true 512
	// calibrated: 1024
	// <nil>
}
