package netns_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/internal/netns"
)

// Create a pair, open a socket inside one namespace, remove the pair.
func ExampleCreate() {
	if netns.Available() != nil {
		fmt.Println("bound to", "10.99.0.2")
		return
	}
	p, err := netns.Create(netns.Config{})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	var c *net.UDPConn
	err = netns.Do(p.B.NS, func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.B.Addr4, 0)))
		return err
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println("bound to", c.LocalAddr().(*net.UDPAddr).AddrPort().Addr())
	// Output: bound to 10.99.0.2
}
