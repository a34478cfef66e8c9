package memnet_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Two endpoints on a virtual-time network with a 10 µs one-way delay: a
// serialize-and-send with one zero-copy entry, delivered when the clock
// reaches the arrival time.
func Example() {
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1, Virtual: true, Faults: memnet.Faults{Delay: 10 * time.Microsecond}})
	a, _ := n.Open(datapath.Config{Local: netip.MustParseAddrPort("10.0.0.1:1")}, memnet.Options{})
	b, _ := n.Open(datapath.Config{Local: netip.MustParseAddrPort("10.0.0.2:2")}, memnet.Options{})

	pool, _ := mem.NewPool(mem.PoolConfig{Name: "values"})
	val, _ := pool.AllocCopy([]byte("zero-copy value"))
	obj := &dptest.Object{Header: []byte("[hdr]"), Entries: []mem.Buf{val}}
	_ = a.SendObject(b.LocalAddr(), []byte("pkt:"), obj)
	_ = val.Release() // a holds its own reference until the send completes
	_ = a.Flush()

	pkts := make([]datapath.Packet, 8)
	k, _ := b.Recv(pkts)
	fmt.Println("before the delay:", k)
	_ = n.Advance(10 * time.Microsecond)
	k, _ = b.Recv(pkts)
	fmt.Printf("after: %d %q from %v\n", k, pkts[0].Buf.Bytes(), pkts[0].From)
	_ = pkts[0].Buf.Release()

	_ = a.Close() // releases the completed send's references
	_ = b.Close()
	fmt.Println("values in use:", pool.InUse())
	_ = pool.Close()
	// Output:
	// before the delay: 0
	// after: 1 "pkt:[hdr]zero-copy value" from 10.0.0.1:1
	// values in use: 0
}

// The process-default network behind datapath.Open("memnet", ...).
func ExampleOpen() {
	a, _ := datapath.Open("memnet", datapath.Config{})
	b, _ := datapath.Open("memnet", datapath.Config{})
	_ = a.Send(b.LocalAddr(), []byte("hello"))
	_ = a.Flush()
	pkts := make([]datapath.Packet, 1)
	for {
		if k, _ := b.Recv(pkts); k == 1 {
			break
		}
		_ = b.Wait(time.Millisecond)
	}
	fmt.Printf("%s\n", pkts[0].Buf.Bytes())
	_ = pkts[0].Buf.Release()
	_ = a.Close()
	_ = b.Close()
	// Output: hello
}
