package udp_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/mem"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

// recvN receives n packets at ep (waiting at most a second for each) and
// returns their payloads, releasing each received buffer.
func recvN(ep *udp.Endpoint, n int) []string {
	var got []string
	pkts := make([]datapath.Packet, datapath.DefaultBatch)
	for len(got) < n {
		k, err := ep.Recv(pkts)
		if err != nil {
			panic(err)
		}
		for _, p := range pkts[:k] {
			got = append(got, string(p.Buf.Bytes()))
			_ = p.Buf.Release()
		}
		if k == 0 {
			if err := ep.Wait(time.Second); err != nil {
				panic(err)
			}
		}
	}
	return got
}

// openPair opens a sender with cfg (its Addr defaults to loopback) and a
// receiver on loopback; the caller closes both.
func openPair(cfg datapath.Config) (a, b *udp.Endpoint) {
	if !cfg.Local.IsValid() {
		cfg.Local = loopback
	}
	a, err := udp.Open(cfg)
	if err != nil {
		panic(err)
	}
	if b, err = udp.Open(datapath.Config{Local: loopback}); err != nil {
		panic(err)
	}
	return a, b
}

// SendSegments sends values that already lie in registered memory without
// copying them in user space: each is one iovec of the datagram, after the
// copied head. The endpoint holds its own reference on each value until
// the send has completed, which in the default (copying) mode is when
// Flush's sendmmsg returns.
func ExampleEndpoint_SendSegments() {
	// The application's pool outlives the endpoint that sends from it
	// (deferred calls run last first: a.Close, then values.Close).
	values, err := mem.NewPool(mem.PoolConfig{Name: "values"})
	if err != nil {
		panic(err)
	}
	defer values.Close()
	a, b := openPair(datapath.Config{})
	defer a.Close()
	defer b.Close()

	k, _ := values.AllocCopy([]byte("key=k1;"))
	v, _ := values.AllocCopy(bytes.Repeat([]byte("v"), 2000))

	if err := a.SendSegments(b.LocalAddr(), []byte("PUT "), []mem.Buf{k, v}); err != nil {
		panic(err)
	}
	k.Release() // ours; the endpoint keeps the items alive
	v.Release()
	fmt.Println("values in use before Flush:", values.InUse())
	if err := a.Flush(); err != nil {
		panic(err)
	}
	fmt.Println("values in use after Flush:", values.InUse())

	got := recvN(b, 1)[0]
	fmt.Println(got[:11], len(got))
	st := a.Stats()
	fmt.Println("zero-copy:", st.ZeroCopyEntries, st.ZeroCopyBytes, "copied:", st.CopiedEntries, st.CopiedBytes)
	// Output:
	// values in use before Flush: 2
	// values in use after Flush: 0
	// PUT key=k1; 2011
	// zero-copy: 2 2007 copied: 1 4
}

// AppendPacket queues a packet and returns its payload for the caller to
// fill in place: Send without a staging copy. The slice is valid only until
// the next call on the endpoint, so fill it at once.
func ExampleEndpoint_AppendPacket() {
	a, b := openPair(datapath.Config{})
	defer a.Close()
	defer b.Close()

	for i := range 3 {
		p, err := a.AppendPacket(b.LocalAddr(), 8)
		if err != nil {
			panic(err)
		}
		copy(p, fmt.Sprintf("seq=%04d", i)) // fills all 8 bytes: contents are not zeroed
	}
	if err := a.Flush(); err != nil {
		panic(err)
	}
	fmt.Println(recvN(b, 3))
	// Output: [seq=0000 seq=0001 seq=0002]
}

// SyscallStats shows the batching: every packet queued before Flush goes
// out in one sendmmsg. GSO is off here, so that each packet is one message
// on every kernel (with GSO, equal-sized packets to one peer share one).
func ExampleEndpoint_SyscallStats() {
	a, b := openPair(datapath.Config{Options: udp.Options{DisableGSO: true}})
	defer a.Close()
	defer b.Close()

	for i := range 10 {
		if err := a.Send(b.LocalAddr(), []byte{'a' + byte(i)}); err != nil {
			panic(err)
		}
	}
	if err := a.Flush(); err != nil {
		panic(err)
	}
	got := recvN(b, 10)
	sys := a.SyscallStats()
	fmt.Println(len(got), "packets received")
	fmt.Println("sendmmsg calls:", sys.SendCalls, "messages:", sys.SendMsgs, "packets:", a.Stats().TxPackets)
	// Output:
	// 10 packets received
	// sendmmsg calls: 1 messages: 10 packets: 10
}

// Features reports the offloads an endpoint actually uses, which depend on
// the kernel. Through the registry, udp.Options carries the udp-specific
// settings; with both offloads turned off the answer is the same on every
// kernel.
func ExampleEndpoint_Features() {
	ep, err := datapath.Open("udp", datapath.Config{
		Local:   loopback,
		Options: udp.Options{DisableGSO: true, DisableGRO: true},
	})
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	f := ep.(*udp.Endpoint).Features()
	fmt.Printf("GSO %v, GRO %v, MSG_ZEROCOPY %v\n", f.GSO, f.GRO, f.ZeroCopy)
	// Output: GSO false, GRO false, MSG_ZEROCOPY false
}
