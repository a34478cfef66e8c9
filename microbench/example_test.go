package microbench_test

import (
	"errors"
	"fmt"
	"io"
	"os"
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

// A Library prepares one Case per shape and mode; a Case runs the three operations on reused
// state, and Output/Values check what it produced.
func ExampleLibrary() {
	shape, _ := microbench.ShapeByName("4x1024")
	c, err := microbench.FlatBuffers().Prepare(shape, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.Echo(); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := c.Output()
	vals, err := c.Values(out)
	fmt.Println(len(vals), len(vals[0]), err)
	// Output: 4 1024 <nil>
}

// Measure times any function the way every record is timed.
func ExampleMeasure() {
	buf := make([]byte, 4096)
	r, err := microbench.Measure(func() error {
		clear(buf)
		return nil
	}, 5*time.Millisecond)
	fmt.Println(r.N > 0, r.NsPerOp > 0, err)
	// Output: true true <nil>
}

// WriteTable prints records as `cornflakes microbench` does without --json: ratios are to the
// fastest baseline of the same shape and op.
func ExampleWriteTable() {
	recs := []microbench.Record{
		{Library: "vtprotobuf", Shape: "2x2048", Op: "echo", NsPerOp: 100},
		{Library: "cornflakes", Mode: "hybrid", Shape: "2x2048", Op: "echo", NsPerOp: 50},
	}
	if err := microbench.WriteTable(os.Stdout, recs); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 2x2048    op  ns/op  ratio  allocs/op  B/op
	//          vtprotobuf  echo  100.0   1.00        0.0     0
	//   cornflakes/hybrid  echo   50.0   0.50        0.0     0
}

// The names accepted by --libraries, --shapes and --ops.
func ExampleLibraryNames() {
	fmt.Println(microbench.LibraryNames())
	fmt.Println(len(microbench.ShapeNames()), microbench.ShapeNames()[0])
	op, err := microbench.ParseOp("echo")
	fmt.Println(op, err)
	_, err = microbench.ParseOp("encode")
	fmt.Println(errors.Is(err, microbench.ErrUnknownOp))
	// Output:
	// [cornflakes protobuf vtprotobuf flatbuffers capnp]
	// 22 1x1024
	// echo <nil>
	// true
}

// CheckFilters validates "library" and "library/mode" filters before a run.
func ExampleCheckFilters() {
	libs := microbench.Libraries()
	fmt.Println(microbench.CheckFilters(libs, []string{"vtprotobuf", "cornflakes/hybrid"}))
	fmt.Println(microbench.CheckFilters(libs, []string{"cornflakes/fast"}) != nil)
	// Output:
	// <nil>
	// true
}
