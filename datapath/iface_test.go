package datapath_test

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
)

func TestInterfaceOf(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true}, // mapped: the same address
		{"0.0.0.0", false},
		{"192.0.2.1", false}, // TEST-NET-1: on no interface
	} {
		ifi, ok := datapath.InterfaceOf(netip.MustParseAddr(tc.addr))
		if ok != tc.ok {
			t.Errorf("InterfaceOf(%s): found %v, want %v", tc.addr, ok, tc.ok)
			continue
		}
		if ok && !containsAddr(datapath.InterfaceAddrs(ifi), netip.MustParseAddr(tc.addr).Unmap()) {
			t.Errorf("InterfaceOf(%s) = %s, whose addresses %v do not hold it", tc.addr, ifi.Name, datapath.InterfaceAddrs(ifi))
		}
	}
	if _, ok := datapath.InterfaceOf(netip.Addr{}); ok {
		t.Error("InterfaceOf(invalid address) found an interface")
	}
}

func containsAddr(as []netip.Addr, a netip.Addr) bool {
	for _, b := range as {
		if b == a {
			return true
		}
	}
	return false
}

// InterfaceOf finds the interface holding a local address: the one a
// datapath bound to it sends through.
func ExampleInterfaceOf() {
	ifi, ok := datapath.InterfaceOf(netip.MustParseAddr("127.0.0.1"))
	fmt.Println(ok, ifi.Flags&net.FlagLoopback != 0)
	// Output: true true
}
