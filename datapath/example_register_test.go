package datapath_test

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
)

// testnet is a private in-process network behind the kind "testnet": code
// that opens its endpoints by kind name (as the CLI's --datapath flag does)
// runs on it unchanged, apart from memnet's process-wide network.
var testnet = memnet.NewNetwork(memnet.NetworkConfig{Seed: 1, Virtual: true})

// A kind registers itself from an init function, once per process.
func init() {
	datapath.Register("testnet", openTestnet)
}

// openTestnet is the kind's OpenFunc.
func openTestnet(cfg datapath.Config) (datapath.Endpoint, error) {
	ep, err := testnet.Open(cfg, memnet.Options{})
	if err != nil {
		// Not "return ep, err": a nil *memnet.Endpoint in a
		// datapath.Endpoint is a non-nil interface.
		return nil, err
	}
	return ep, nil
}

func ExampleRegister() {
	fmt.Println(slices.Contains(datapath.Kinds(), "testnet"))

	a, err := datapath.Open("testnet", datapath.Config{Local: netip.MustParseAddrPort("10.1.0.1:7")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, err := datapath.Open("testnet", datapath.Config{Local: netip.MustParseAddrPort("10.1.0.2:7")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	_ = a.Send(b.LocalAddr(), []byte("ping"))
	_ = a.Flush()
	pkts := make([]datapath.Packet, 1)
	n, _ := b.Recv(pkts) // no delay: delivered by the next call
	fmt.Printf("%d %s from %v\n", n, pkts[0].Buf.Bytes(), pkts[0].From)
	_ = pkts[0].Buf.Release()
	// Output:
	// true
	// 1 ping from 10.1.0.1:7
}
