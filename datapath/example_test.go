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
