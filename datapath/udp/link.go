package udp

import (
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// linkRate returns the line rate in bytes/s of the interface that holds
// addr, or 0 when unknown.
func linkRate(addr netip.Addr) float64 {
	if addr.IsLoopback() {
		return datapath.UnlimitedLinkRate
	}
	if ifc, ok := datapath.InterfaceOf(addr); ok {
		return ifaceSpeed(ifc.Name)
	}
	return 0
}

// ifaceSpeed reads the speed of interface name in bytes/s (0 if unknown).
func ifaceSpeed(name string) float64 {
	b, err := os.ReadFile("/sys/class/net/" + name + "/speed")
	if err != nil {
		return 0
	}
	mbit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || mbit <= 0 {
		return 0
	}
	return float64(mbit) * 1e6 / 8
}
