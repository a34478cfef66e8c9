package microbench_test

import (
	"fmt"
	"io"
	"time"

	"github.com/cornflakes-go/cornflakes/microbench"
)

// Run measures the selected libraries, shapes and ops and returns one Record per combination;
// WriteJSON prints them as `cornflakes microbench --json` does.
func ExampleRun() {
	shape, err := microbench.ShapeByName("2x2048")
	if err != nil {
		fmt.Println(err)
		return
	}
	recs, err := microbench.Run(microbench.Config{
		Libraries: []microbench.Library{microbench.VTProtobuf(), microbench.FlatBuffers()},
		Shapes:    []microbench.Shape{shape},
		Ops:       []microbench.Op{microbench.OpEcho},
		Budget:    time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		fmt.Println(r.Library, r.Shape, r.Op, r.NsPerOp > 0)
	}
	_ = microbench.WriteJSON(io.Discard, recs) // os.Stdout for the --json form (timings vary)
	// Output:
	// vtprotobuf 2x2048 echo true
	// flatbuffers 2x2048 echo true
}
