package datapath_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/wire"
)

// plainEndpoint hides every method of an Endpoint beyond the interface,
// like a datapath that does not implement HybridThresholder.
type plainEndpoint struct{ datapath.Endpoint }

// HybridThreshold tells an application from which field size its datapath
// sends a value zero-copy rather than copying it next to the header; the
// application sets its arenas' threshold from it. Datapaths that do not
// report one get wire.DefaultThreshold.
func ExampleHybridThreshold() {
	ep, err := datapath.Open("memnet", datapath.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close()

	a := wire.NewArena()
	a.Threshold = datapath.HybridThreshold(ep)
	fmt.Println(a.Threshold)
	fmt.Println(datapath.HybridThreshold(plainEndpoint{ep}) == wire.DefaultThreshold)
	// Output:
	// 512
	// true
}

// Stats.Add sums the counters of several endpoints, for example one per core.
func ExampleStats_Add() {
	var total datapath.Stats
	for _, st := range []datapath.Stats{
		{TxPackets: 10, TxBytes: 1000, ZeroCopyEntries: 4},
		{TxPackets: 5, TxBytes: 700, Drops: 1},
	} {
		total.Add(st)
	}
	fmt.Println(total.TxPackets, total.TxBytes, total.ZeroCopyEntries, total.Drops)
	// Output: 15 1700 4 1
}
