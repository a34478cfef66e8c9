package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// This file adds what the AF_XDP datapath and `cornflakes netns` need on
// top of Create: MAC addresses, static neighbour entries (so nothing has to
// run ARP), and removal of every namespace with a prefix.

// MAC returns the Ethernet address of the end's veth interface.
func (e End) MAC() (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := Do(e.NS, func() error {
		ifi, err := net.InterfaceByName(e.If)
		if err != nil {
			return fmt.Errorf("netns: %s in %s: %w", e.If, e.NS, err)
		}
		mac = ifi.HardwareAddr
		return nil
	})
	return mac, err
}

// AddNeighbours installs permanent neighbour entries (IPv4 and IPv6) for
// each end's addresses in the other end's namespace, so packets built by a
// kernel-bypass datapath can be addressed without ARP or NDP.
func (p *Pair) AddNeighbours() error {
	macA, err := p.A.MAC()
	if err != nil {
		return err
	}
	macB, err := p.B.MAC()
	if err != nil {
		return err
	}
	for _, s := range []struct {
		in   End
		peer End
		mac  net.HardwareAddr
	}{{p.A, p.B, macB}, {p.B, p.A, macA}} {
		for _, a := range []string{s.peer.Addr4.String(), s.peer.Addr6.String()} {
			if err := ip("-n", s.in.NS, "neigh", "replace", a, "lladdr", s.mac.String(), "dev", s.in.If, "nud", "permanent"); err != nil {
				return err
			}
		}
	}
	return nil
}

// List returns the namespaces whose names start with prefix + "-" (any
// creator, alive or not).
func List(prefix string) ([]string, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// RemoveAll deletes every namespace List(prefix) returns (deleting a
// namespace deletes its veth and the XDP programs attached to it) and
// returns the names it removed.
func RemoveAll(prefix string) ([]string, error) {
	if strings.ContainsAny(prefix, "/ \t\n") {
		return nil, fmt.Errorf("netns: bad prefix %q", prefix)
	}
	names, err := List(prefix)
	if err != nil {
		return nil, err
	}
	var errs []error
	var done []string
	for _, n := range names {
		if err := ip("netns", "del", n); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, n)
	}
	return done, errors.Join(errs...)
}
