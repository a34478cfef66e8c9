package driver_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
)

// counterEndpoint stands for a datapath's endpoint type.
type counterEndpoint struct {
	g driver.Guard
	n int
}

func (e *counterEndpoint) Count() error {
	if err := e.g.Enter(); err != nil {
		return err
	}
	defer e.g.Exit()
	e.n++
	return nil
}

func (e *counterEndpoint) Close() error {
	if err := e.g.Enter(); err != nil {
		return err
	}
	defer e.g.ExitClosed()
	// ... release every reference, free the endpoint's resources ...
	return nil
}

// Guard is how a datapath makes its endpoint refuse overlapping calls
// from two goroutines, and every call after Close. Each method brackets
// its work with Enter and Exit; Close ends with ExitClosed.
func ExampleGuard() {
	var ep counterEndpoint
	fmt.Println(ep.Count())

	_ = ep.g.Enter() // as if another goroutine were inside a call now
	fmt.Println(errors.Is(ep.Count(), datapath.ErrConcurrentUse))
	ep.g.Exit()

	fmt.Println(ep.Count(), ep.n)
	fmt.Println(ep.Close())
	fmt.Println(errors.Is(ep.Count(), datapath.ErrClosed), ep.g.Closed())
	// Output:
	// <nil>
	// true
	// <nil> 2
	// <nil>
	// true true
}

// CountSegments is the cost of a plan: the head segment, one per zero-copy
// entry, and one per run of copied entries that follows a zero-copy entry
// (copied entries before the first zero-copy one extend the head).
func ExampleCountSegments() {
	fmt.Println(driver.CountSegments(4, []int{0, 1, 2, 3})) // head, 0, 1, 2, 3
	fmt.Println(driver.CountSegments(4, nil))               // head+0+1+2+3
	fmt.Println(driver.CountSegments(4, []int{2, 3}))       // head+0+1, 2, 3
	fmt.Println(driver.CountSegments(4, []int{0, 2}))       // head, 0, copy of 1, 2, copy of 3
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

	var c driver.EntryCollector
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

	sel := driver.NewSelector(3) // a budget of 3 segments, head included
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

// A packet may carry at most 4 segments but the object has 5 zero-copy
// entries. Copied entries keep their place in the byte stream: entry 0 is
// copied right after the head (same segment), entries 2 and 3 are copied
// into one more segment, and the two largest stay zero-copy.
// (Keeping 1, 3 and 4 would need 5 segments: head+0, 1, copy of 2, 3, 4.)
func ExampleSelector() {
	sel := driver.NewSelector(4)
	sizes := []int{8, 4096, 16, 2048, 1024}
	keep := sel.Select(sizes)
	fmt.Println("zero-copy:", keep, "segments:", driver.CountSegments(len(sizes), keep))
	// Output: zero-copy: [1 4] segments: 4
}
