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

// ShapeByName parses the shape names of `cornflakes microbench --shapes`.
func ExampleShapeByName() {
	for _, name := range []string{"2x2048", "tree5", "sweep-65536", "google-1-8"} {
		s, err := microbench.ShapeByName(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(s.Name, s.Kind, len(s.Variants), "variant(s), first:", len(s.Variants[0]), "values", s.TotalBytes(0), "bytes")
	}
	// Output:
	// 2x2048 ListBuffers 1 variant(s), first: 2 values 4096 bytes
	// tree5 Tree5 1 variant(s), first: 32 values 4096 bytes
	// sweep-65536 SingleBuffer 1 variant(s), first: 1 values 65536 bytes
	// google-1-8 ListBuffers 64 variant(s), first: 1 values 39 bytes
}
