package datapath_test

import (
	"bytes"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// CountSegments is the cost of a plan: the head segment, one per zero-copy
// entry, and one per run of copied entries that follows a zero-copy entry
// (copied entries before the first zero-copy one extend the head).
func ExampleCountSegments() {
	fmt.Println(datapath.CountSegments(4, []int{0, 1, 2, 3})) // head, 0, 1, 2, 3
	fmt.Println(datapath.CountSegments(4, nil))               // head+0+1+2+3
	fmt.Println(datapath.CountSegments(4, []int{2, 3}))       // head+0+1, 2, 3
	fmt.Println(datapath.CountSegments(4, []int{0, 2}))       // head, 0, copy of 1, 2, copy of 3
	// Output:
	// 5
	// 1
	// 3
	// 5
}

// EntryCollector is how a datapath implements SendObject. Collect writes the
// object's head into the TX buffer and takes a reference on each zero-copy
// entry; Gather fits the packet into the segment budget, copying the entries
// that do not stay zero-copy after the head, and returns the scatter-gather
// list for the device. The collector releases its remaining references when
// the send has completed.
func ExampleEntryCollector() {
	values, err := mem.NewPool(mem.PoolConfig{Name: "values"})
	if err != nil {
		panic(err)
	}
	defer values.Close()
	small, _ := values.AllocCopy([]byte("tiny"))
	large, _ := values.AllocCopy(bytes.Repeat([]byte("L"), 1000))
	mid, _ := values.AllocCopy(bytes.Repeat([]byte("m"), 600))
	obj := &dptest.Object{Header: []byte("HDR"), Entries: []mem.Buf{small, large, mid}}

	var c datapath.EntryCollector
	sz := obj.Sizes()
	tx := make([]byte, sz.Head()+sz.ZeroCopy) // room for the head and any copied entry
	if err := c.Collect(obj, sz, tx[:sz.Head()]); err != nil {
		panic(err)
	}
	// The object's entries were borrowed: the application's references may go.
	small.Release()
	large.Release()
	mid.Release()
	fmt.Println("collected:", c.Len(), "entries,", c.Bytes, "bytes")

	sel := datapath.NewSelector(3) // a budget of 3 segments, head included
	sg, txLen, copied, copiedBytes, err := c.Gather(sel, tx, sz.Head(), nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("head segment %q, tx bytes %d, copied %d entry (%d bytes)\n", sg[0], txLen, copied, copiedBytes)
	for _, s := range sg[1:] {
		fmt.Println("zero-copy segment:", len(s), "bytes, registered:", mem.IsRegistered(s))
	}

	// ... the device sends sg; when the send has completed:
	if err := c.Release(); err != nil {
		panic(err)
	}
	fmt.Println("values in use:", values.InUse())
	// Output:
	// collected: 3 entries, 1604 bytes
	// head segment "HDRtiny", tx bytes 7, copied 1 entry (4 bytes)
	// zero-copy segment: 1000 bytes, registered: true
	// zero-copy segment: 600 bytes, registered: true
	// values in use: 0
}

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
