package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// MaxLeaves bounds the leaves of a Hub (one /24 of addresses).
const MaxLeaves = 250

// Hub is a star of network namespaces: a hub namespace holding a bridge,
// and leaf namespaces each joined to the bridge by a veth pair, with IPv4
// addresses in one /24 and permanent neighbour entries between all leaves
// (no ARP needed). It is for running several endpoints of a kernel-bypass
// datapath in one process, one per leaf. Its methods are safe for
// concurrent use.
type Hub struct {
	// NS is the hub namespace.
	NS   string
	base string
	mtu  int
	net4 netip.Prefix

	mu     sync.Mutex
	leaves []End
	macs   []string
	closed bool
}

// NewHub creates the hub namespace and its bridge. cfg.Prefix, MTU and
// Net4 apply (defaults as for Create, except Net4 10.98.0.0/24); Net6 is
// not used.
func NewHub(cfg Config) (*Hub, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "/ \t\n") {
		return nil, fmt.Errorf("netns: bad prefix %q", cfg.Prefix)
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if !cfg.Net4.IsValid() {
		cfg.Net4 = netip.MustParsePrefix("10.98.0.0/24")
	}
	if !cfg.Net4.Addr().Is4() || cfg.Net4.Bits() > 24 {
		return nil, fmt.Errorf("netns: hub network %v must be an IPv4 /24 or larger", cfg.Net4)
	}
	base := fmt.Sprintf("%s-%d-%d", cfg.Prefix, os.Getpid(), seq.Add(1))
	h := &Hub{NS: base + "-hub", base: base, mtu: cfg.MTU, net4: cfg.Net4.Masked()}
	for _, s := range [][]string{
		{"netns", "add", h.NS},
		{"-n", h.NS, "link", "set", "lo", "up"},
		{"-n", h.NS, "link", "add", "br0", "mtu", strconv.Itoa(cfg.MTU), "type", "bridge"},
		{"-n", h.NS, "link", "set", "br0", "up"},
	} {
		if err := ip(s...); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// AddLeaf creates one more leaf namespace joined to the bridge and returns
// it (interface cfveth0, the next address of the hub's network).
func (h *Hub) AddLeaf() (End, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return End{}, errors.New("netns: hub closed")
	}
	i := len(h.leaves) + 1
	if i > MaxLeaves {
		return End{}, fmt.Errorf("netns: hub has %d leaves (limit %d)", i-1, MaxLeaves)
	}
	a := h.net4.Addr()
	for range i {
		a = a.Next()
	}
	e := End{NS: fmt.Sprintf("%s-%d", h.base, i), If: "cfveth0", Addr4: a}
	port := fmt.Sprintf("cfp%d", i)
	mtu := strconv.Itoa(h.mtu)
	steps := [][]string{
		{"netns", "add", e.NS},
		{"-n", e.NS, "link", "add", e.If, "mtu", mtu, "type", "veth", "peer", "name", port, "mtu", mtu, "netns", h.NS},
		{"-n", h.NS, "link", "set", port, "master", "br0"},
		{"-n", h.NS, "link", "set", port, "up"},
		{"-n", e.NS, "link", "set", "lo", "up"},
		{"-n", e.NS, "addr", "add", netip.PrefixFrom(a, h.net4.Bits()).String(), "dev", e.If},
		{"-n", e.NS, "link", "set", e.If, "up"},
	}
	fail := func(err error) (End, error) {
		if _, serr := os.Stat("/run/netns/" + e.NS); serr == nil {
			_ = ip("netns", "del", e.NS)
		}
		return End{}, err
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return fail(err)
		}
	}
	mac, err := e.MAC()
	if err != nil {
		return fail(err)
	}
	for j, o := range h.leaves {
		if err := ip("-n", e.NS, "neigh", "replace", o.Addr4.String(), "lladdr", h.macs[j], "dev", e.If, "nud", "permanent"); err != nil {
			return fail(err)
		}
		if err := ip("-n", o.NS, "neigh", "replace", e.Addr4.String(), "lladdr", mac.String(), "dev", o.If, "nud", "permanent"); err != nil {
			return fail(err)
		}
	}
	h.leaves = append(h.leaves, e)
	h.macs = append(h.macs, mac.String())
	return e, nil
}

// Leaves returns the leaves created so far.
func (h *Hub) Leaves() []End {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]End(nil), h.leaves...)
}

// Close deletes every leaf and the hub namespace. It is safe to call more
// than once.
func (h *Hub) Close() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	names := []string{h.NS}
	for _, l := range h.leaves {
		names = append(names, l.NS)
	}
	for _, ns := range names {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			continue
		}
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
