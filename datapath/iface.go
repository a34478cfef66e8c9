package datapath

import (
	"net"
	"net/netip"
)

// InterfaceAddrs returns the addresses assigned to ifi (IPv4 ones
// unmapped), in the order the kernel lists them; nil when they cannot be
// read.
func InterfaceAddrs(ifi *net.Interface) []netip.Addr {
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// InterfaceOf returns the interface of this host (in the caller's network
// namespace) that holds address a, if any: the interface a datapath bound
// to a sends through (its line rate, its XDP hook), and the sign that a
// peer at a is on this host.
func InterfaceOf(a netip.Addr) (*net.Interface, bool) {
	a = a.Unmap()
	if !a.IsValid() || a.IsUnspecified() {
		return nil, false
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, false
	}
	for i := range ifs {
		for _, ip := range InterfaceAddrs(&ifs[i]) {
			if ip == a {
				return &ifs[i], true
			}
		}
	}
	return nil, false
}
