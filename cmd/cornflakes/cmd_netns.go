package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"

	// Links the AF_XDP datapath into the CLI, so every command that opens
	// datapaths by name (datapath.Open) accepts "xdp".
	_ "github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
)

// netnsPrefix is the default name prefix of namespaces made by `cornflakes
// netns up` (distinct from the prefixes tests use, whose leftover cleanup
// would otherwise remove them).
const netnsPrefix = "cfxdp"

func init() {
	register(&command{
		name:    "netns",
		summary: "create (up) or remove (down) network namespaces joined by a veth pair, for the xdp datapath",
		run:     runNetns,
	})
}

type netnsEnd struct {
	Namespace string `json:"namespace"`
	Interface string `json:"interface"`
	IPv4      string `json:"ipv4"`
	IPv6      string `json:"ipv6"`
	MAC       string `json:"mac"`
}

func runNetns(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down" && args[0] != "list") {
		fmt.Fprintln(stderr, "usage: cornflakes netns up|down|list [flags]")
		fmt.Fprintln(stderr, "  up    create two namespaces joined by a veth pair (addresses, MTU, static neighbours)")
		fmt.Fprintln(stderr, "  down  remove every namespace whose name starts with the prefix")
		fmt.Fprintln(stderr, "  list  list them")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errUsage
	}
	sub := args[0]
	fs := flag.NewFlagSet("netns "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	prefix := fs.String("prefix", netnsPrefix, "namespace name prefix")
	mtu := fs.Int("mtu", 1500, "MTU of the veth pair (up)")
	net4 := fs.String("net4", "10.77.0.0/24", "IPv4 network of the link: side a gets .1, side b .2 (up)")
	net6 := fs.String("net6", "fd77:cf::/64", "IPv6 network of the link (up)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "netns %s: unexpected arguments %v\n", sub, fs.Args())
		return errUsage
	}
	if err := netns.Available(); err != nil {
		return err
	}
	switch sub {
	case "down":
		removed, err := netns.RemoveAll(*prefix)
		if *asJSON {
			if jerr := json.NewEncoder(stdout).Encode(map[string]any{"removed": nonNil(removed)}); jerr != nil {
				return jerr
			}
		} else {
			for _, n := range removed {
				fmt.Fprintln(stdout, "removed", n)
			}
		}
		return err
	case "list":
		names, err := netns.List(*prefix)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(map[string]any{"namespaces": nonNil(names)})
		}
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	p4, err := netip.ParsePrefix(*net4)
	if err != nil {
		return fmt.Errorf("--net4: %w", err)
	}
	p6, err := netip.ParsePrefix(*net6)
	if err != nil {
		return fmt.Errorf("--net6: %w", err)
	}
	pair, err := netns.Create(netns.Config{Prefix: *prefix, MTU: *mtu, Net4: p4, Net6: p6})
	if err != nil {
		return err
	}
	if err := pair.AddNeighbours(); err != nil {
		_ = pair.Close()
		return err
	}
	var ends []netnsEnd
	for _, e := range []netns.End{pair.A, pair.B} {
		mac, err := e.MAC()
		if err != nil {
			_ = pair.Close()
			return err
		}
		ends = append(ends, netnsEnd{e.NS, e.If, e.Addr4.String(), e.Addr6.String(), mac.String()})
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"mtu": *mtu, "a": ends[0], "b": ends[1]})
	}
	for i, e := range ends {
		fmt.Fprintf(stdout, "%c: namespace %s interface %s %s %s mac %s\n", 'a'+i, e.Namespace, e.Interface, e.IPv4, e.IPv6, e.MAC)
	}
	fmt.Fprintf(stderr, "remove with: cornflakes netns down --prefix %s\n", *prefix)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
