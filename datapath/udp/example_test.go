package udp_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Two endpoints on loopback: a header plus a zero-copy segment from
// registered memory goes out as one datagram; the receiver gets it in a
// registered buffer it must release.
func ExampleOpen() {
	a, err := udp.Open(datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := udp.Open(datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	value, err := a.Pool().AllocCopy([]byte("world"))
	if err != nil {
		panic(err)
	}
	// The endpoint clones value; we may release ours right away.
	if err := a.SendSegments(b.LocalAddr(), []byte("hello "), []mem.Buf{value}); err != nil {
		panic(err)
	}
	value.Release()
	if err := a.Flush(); err != nil {
		panic(err)
	}

	pkts := make([]datapath.Packet, 8)
	for {
		n, err := b.Recv(pkts)
		if err != nil {
			panic(err)
		}
		if n == 0 {
			b.Wait(time.Second)
			continue
		}
		fmt.Printf("%s\n", pkts[0].Buf.Bytes())
		pkts[0].Buf.Release()
		return
	}
	// Output: hello world
}

// TimelyParams tells the RPC layer the delay scales of kernel UDP, which
// replace eRPC's RDMA-class constants when congestion control is on. On
// loopback there is no line rate, and datapath.UnlimitedLinkRate stands in
// for it.
func ExampleEndpoint_TimelyParams() {
	ep, err := udp.Open(datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close()
	p := datapath.TimelyParamsOf(ep)
	fmt.Println(p.MinRTT, p.TLow, p.LinkRate*8/1e9, "Gbit/s")
	// Output: 10µs 500µs 100 Gbit/s
}
