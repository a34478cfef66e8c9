package calibrate_test

import (
	"fmt"
	"os"
	"time"

	"github.com/cornflakes-go/cornflakes/calibrate"
)

// A tiny sweep over the in-memory datapath; the real one is
// `cornflakes calibrate --datapath udp`.
func ExampleRun() {
	res, err := calibrate.Run(calibrate.Config{Datapath: "memnet", Entries: []int{1, 8}, TotalSizes: []int{512, 8192}, WorkingSet: 4 << 20, Rounds: 1, Phase: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Cells), "cells")
	_ = res.WriteTable(os.Stderr) // the grid and the recommended threshold
	// Output: 4 cells
}
