package xdp_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Example opens an endpoint in a namespace of a test topology and sends a
// value allocated in its UMEM without copying it.
func Example() {
	// Needs root (the example has no Output line, so `go test` only compiles it).
	if err := xdp.Available(); err != nil {
		fmt.Println(err)
		return
	}
	pair, err := netns.Create(netns.Config{Prefix: "cfxdpex"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pair.Close()
	if err := pair.AddNeighbours(); err != nil {
		fmt.Println(err)
		return
	}
	var ep *xdp.Endpoint
	err = netns.Do(pair.A.NS, func() (err error) {
		ep, err = xdp.Open(datapath.Config{Local: netip.AddrPortFrom(pair.A.Addr4, 9000), Options: xdp.Options{Interface: pair.A.If, UMEMSize: 16 << 20}})
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close()
	value, _ := ep.Pool().AllocCopy([]byte("a value in registered memory"))
	_ = ep.SendSegments(netip.AddrPortFrom(pair.B.Addr4, 9000), []byte("hdr"), []mem.Buf{value})
	_ = value.Release() // the endpoint holds its own reference until completion
	_ = ep.Flush()
	fmt.Println("sent zero-copy:", ep.Stats().ZeroCopyEntries == 1)
}

// ExampleEndpoint_Mode requires zero-copy where the NIC supports it and
// otherwise falls back to copy mode explicitly, logging which mode the
// measurements will run in.
func ExampleEndpoint_Mode() {
	if err := xdp.Available(); err != nil {
		fmt.Println(err)
		return
	}
	pair, err := netns.Create(netns.Config{Prefix: "cfxdpex"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pair.Close()
	var ep *xdp.Endpoint
	err = netns.Do(pair.A.NS, func() error {
		opts := xdp.Options{Interface: pair.A.If, UMEMSize: 16 << 20, Bind: xdp.BindZeroCopy}
		cfg := datapath.Config{Local: netip.AddrPortFrom(pair.A.Addr4, 0), Options: opts}
		ep, err = xdp.Open(cfg)
		if errors.Is(err, xdp.ErrNoZeroCopy) { // veth: no XSK zero-copy
			opts.Bind = xdp.BindCopy
			cfg.Options = opts
			ep, err = xdp.Open(cfg)
		}
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close()
	fmt.Println("xdp bind mode:", ep.Mode()) // "copy" on veth
}
