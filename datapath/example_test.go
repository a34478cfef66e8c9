package datapath_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	_ "github.com/cornflakes-go/cornflakes/datapath/memnet" // registers "memnet"
)

// Open picks a datapath by name, as the CLI's --datapath flag does.
func ExampleOpen() {
	ep, err := datapath.Open("memnet", datapath.Config{MaxSegments: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close()
	fmt.Println(ep.MaxSegments(), ep.LocalAddr().IsValid())

	_, err = datapath.Open("carrier-pigeon", datapath.Config{})
	fmt.Println(err != nil)
	// Output:
	// 8 true
	// true
}

// A packet may carry at most 4 segments but the object has 5 zero-copy
// entries. Copied entries keep their place in the byte stream: entry 0 is
// copied right after the head (same segment), entries 2 and 3 are copied
// into one more segment, and the two largest stay zero-copy.
// (Keeping 1, 3 and 4 would need 5 segments: head+0, 1, copy of 2, 3, 4.)
func ExampleSelector() {
	sel := datapath.NewSelector(4)
	sizes := []int{8, 4096, 16, 2048, 1024}
	keep := sel.Select(sizes)
	fmt.Println("zero-copy:", keep, "segments:", datapath.CountSegments(len(sizes), keep))
	// Output: zero-copy: [1 4] segments: 4
}
