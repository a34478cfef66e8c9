package memnet_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
)

// openPair opens two endpoints on n, at 10.0.0.1:1 and 10.0.0.2:2.
func openPair(n *memnet.Network) (a, b *memnet.Endpoint) {
	a, err := n.Open(datapath.Config{Local: netip.MustParseAddrPort("10.0.0.1:1")}, memnet.Options{})
	if err != nil {
		panic(err)
	}
	b, err = n.Open(datapath.Config{Local: netip.MustParseAddrPort("10.0.0.2:2")}, memnet.Options{})
	if err != nil {
		panic(err)
	}
	return a, b
}

// recvAll receives every packet ready at ep and returns their payloads,
// releasing each received buffer.
func recvAll(ep *memnet.Endpoint) []string {
	var got []string
	pkts := make([]datapath.Packet, datapath.DefaultBatch)
	for {
		k, err := ep.Recv(pkts)
		if err != nil {
			panic(err)
		}
		if k == 0 {
			return got
		}
		for _, p := range pkts[:k] {
			got = append(got, string(p.Buf.Bytes()))
			_ = p.Buf.Release()
		}
	}
}

// Seeded faults make every run the same: with loss, duplication and
// reordering, ten numbered packets arrive with gaps (1, 5 and 6 were lost),
// twice (7) or late (0 and 4, held back by Faults.ReorderDelay), and
// NetworkStats accounts for each.
func ExampleFaults() {
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 7, Virtual: true, Faults: memnet.Faults{
		Delay:        10 * time.Microsecond,
		Loss:         0.1,
		Duplicate:    0.1,
		Reorder:      0.2,
		ReorderDelay: 50 * time.Microsecond,
	}})
	a, b := openPair(n)

	for i := range 10 {
		_ = a.Send(b.LocalAddr(), []byte{'0' + byte(i)})
	}
	_ = a.Flush()
	_ = n.Advance(time.Millisecond) // every delivery is due by now
	fmt.Println(recvAll(b))

	st := n.Stats()
	fmt.Printf("sent %d, lost %d, duplicated %d, reordered %d, delivered %d\n",
		st.Sent, st.Lost, st.Duplicated, st.Reordered, st.Delivered)
	_ = a.Close()
	_ = b.Close()
	// Output:
	// [2 3 7 7 8 9 0 4]
	// sent 10, lost 3, duplicated 1, reordered 2, delivered 8
}

// A Filter drops chosen packets at delivery time, here the first packet
// that carries "reply", to exercise a retransmission path.
func ExampleNetwork_SetFilter() {
	n := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	dropped := false
	n.SetFilter(func(from, to netip.AddrPort, payload []byte) bool {
		if !dropped && bytes.HasPrefix(payload, []byte("reply")) {
			dropped = true // runs with the network locked: no Network calls here
			return false
		}
		return true
	})
	a, b := openPair(n)

	_ = b.Send(a.LocalAddr(), []byte("reply 1"))
	_ = b.Send(a.LocalAddr(), []byte("other"))
	_ = b.Send(a.LocalAddr(), []byte("reply 1 (retransmitted)"))
	_ = b.Flush()
	_ = n.Advance(0) // zero-delay packets are due at once
	for _, p := range recvAll(a) {
		fmt.Println(p)
	}
	fmt.Println("filtered:", n.Stats().Filtered)
	_ = a.Close()
	_ = b.Close()
	// Output:
	// other
	// reply 1 (retransmitted)
	// filtered: 1
}

// Partition cuts the network between two sets of addresses, in both
// directions, until Heal: packets sent across the cut are dropped and
// counted.
func ExampleNetwork_Partition() {
	n := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	a, b := openPair(n)

	id := n.Partition(
		[]netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")},
		[]netip.Prefix{netip.MustParsePrefix("10.0.0.2/32")})
	_ = a.Send(b.LocalAddr(), []byte("during"))
	_ = a.Flush()
	_ = n.Advance(0)
	fmt.Println(recvAll(b), n.Stats().PartitionDrops)

	n.Heal(id)
	_ = a.Send(b.LocalAddr(), []byte("after"))
	_ = a.Flush()
	_ = n.Advance(0)
	fmt.Println(recvAll(b), n.Stats().PartitionDrops)
	_ = a.Close()
	_ = b.Close()
	// Output:
	// [] 1
	// [after] 1
}

// SetLinkFaults gives one direction of one link its own faults, for example
// a peer whose replies are all lost while its requests arrive.
func ExampleNetwork_SetLinkFaults() {
	n := memnet.NewNetwork(memnet.NetworkConfig{Virtual: true})
	a, b := openPair(n)
	n.SetLinkFaults(b.LocalAddr().Addr(), a.LocalAddr().Addr(), memnet.Faults{Loss: 1})

	_ = a.Send(b.LocalAddr(), []byte("request"))
	_ = a.Flush()
	_ = n.Advance(0)
	fmt.Println("b got", recvAll(b))
	_ = b.Send(a.LocalAddr(), []byte("reply"))
	_ = b.Flush()
	_ = n.Advance(0)
	fmt.Println("a got", recvAll(a), "lost:", n.Stats().Lost)

	n.ClearLinkFaults()
	_ = b.Send(a.LocalAddr(), []byte("reply"))
	_ = b.Flush()
	_ = n.Advance(0)
	fmt.Println("a got", recvAll(a))
	_ = a.Close()
	_ = b.Close()
	// Output:
	// b got [request]
	// a got [] lost: 1
	// a got [reply]
}
