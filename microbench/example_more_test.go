package microbench_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cornflakes-go/cornflakes/microbench"
)

// WriteJSON prints records as `cornflakes microbench --json` does: numbers
// rounded to two decimals, and each record's time over the fastest
// baseline's of the same shape and op (vs_best_baseline; absent when the
// run measured no baseline for it).
func ExampleWriteJSON() {
	recs := []microbench.Record{
		{Library: "cornflakes", Mode: "hybrid", Shape: "2x2048", Op: "echo", NsPerOp: 412.346},
		{Library: "protobuf", Shape: "2x2048", Op: "echo", NsPerOp: 1500, AllocsPerOp: 3, BytesPerOp: 4224},
		{Library: "vtprotobuf", Shape: "2x2048", Op: "echo", NsPerOp: 600},
		{Library: "cornflakes", Mode: "copy", Shape: "tree5", Op: "decode", NsPerOp: 2000.004},
	}
	if err := microbench.WriteJSON(os.Stdout, recs); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [
	// {"library":"cornflakes","mode":"hybrid","shape":"2x2048","op":"echo","ns_per_op":412.35,"allocs_per_op":0,"bytes_per_op":0,"vs_best_baseline":0.69},
	// {"library":"protobuf","mode":"","shape":"2x2048","op":"echo","ns_per_op":1500,"allocs_per_op":3,"bytes_per_op":4224,"vs_best_baseline":2.5},
	// {"library":"vtprotobuf","mode":"","shape":"2x2048","op":"echo","ns_per_op":600,"allocs_per_op":0,"bytes_per_op":0,"vs_best_baseline":1},
	// {"library":"cornflakes","mode":"copy","shape":"tree5","op":"decode","ns_per_op":2000,"allocs_per_op":0,"bytes_per_op":0}
	// ]
}

// WriteFiles leaves a run behind: microbench.json (as WriteJSON),
// microbench.csv with the same records, and one PNG per op measured.
func ExampleWriteFiles() {
	dir, err := os.MkdirTemp("", "microbench-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	recs := []microbench.Record{
		{Library: "cornflakes", Mode: "hybrid", Shape: "2x2048", Op: "serialize", NsPerOp: 250},
		{Library: "vtprotobuf", Shape: "2x2048", Op: "serialize", NsPerOp: 500},
		{Library: "cornflakes", Mode: "hybrid", Shape: "2x2048", Op: "echo", NsPerOp: 400},
		{Library: "vtprotobuf", Shape: "2x2048", Op: "echo", NsPerOp: 800},
	}
	paths, err := microbench.WriteFiles(filepath.Join(dir, "out"), recs)
	if err != nil {
		panic(err)
	}
	for _, p := range paths {
		fmt.Println(filepath.Base(p))
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "microbench.csv"))
	if err != nil {
		panic(err)
	}
	fmt.Print(string(csv))
	// Output:
	// microbench.json
	// microbench.csv
	// microbench-serialize.png
	// microbench-echo.png
	// library,mode,shape,op,ns_per_op,allocs_per_op,bytes_per_op,vs_best_baseline
	// cornflakes,hybrid,2x2048,serialize,250,0,0,0.5
	// vtprotobuf,,2x2048,serialize,500,0,0,1
	// cornflakes,hybrid,2x2048,echo,400,0,0,0.5
	// vtprotobuf,,2x2048,echo,800,0,0,1
}

// ShapeNames lists every shape of a full run, in order: N values of M
// bytes, the Google distribution (1..K-1 values per message, 64 messages
// drawn), the tree, and the single-value size sweep.
func ExampleShapeNames() {
	for _, name := range microbench.ShapeNames() {
		s, err := microbench.ShapeByName(name)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-12s %-12s %2d variant(s)\n", name, s.Kind, len(s.Variants))
	}
	// Output:
	// 1x1024       SingleBuffer  1 variant(s)
	// 2x2048       ListBuffers   1 variant(s)
	// 4x1024       ListBuffers   1 variant(s)
	// 1x4096       SingleBuffer  1 variant(s)
	// 1x8192       SingleBuffer  1 variant(s)
	// 8x512        ListBuffers   1 variant(s)
	// google-1     ListBuffers  64 variant(s)
	// google-1-4   ListBuffers  64 variant(s)
	// google-1-8   ListBuffers  64 variant(s)
	// google-1-16  ListBuffers  64 variant(s)
	// tree5        Tree5         1 variant(s)
	// sweep-64     SingleBuffer  1 variant(s)
	// sweep-128    SingleBuffer  1 variant(s)
	// sweep-256    SingleBuffer  1 variant(s)
	// sweep-512    SingleBuffer  1 variant(s)
	// sweep-1024   SingleBuffer  1 variant(s)
	// sweep-2048   SingleBuffer  1 variant(s)
	// sweep-4096   SingleBuffer  1 variant(s)
	// sweep-8192   SingleBuffer  1 variant(s)
	// sweep-16384  SingleBuffer  1 variant(s)
	// sweep-32768  SingleBuffer  1 variant(s)
	// sweep-65536  SingleBuffer  1 variant(s)
}

// The Cornflakes library in each of its modes: every op run once on a
// prepared case, the output checked against the shape's values, and the
// case closed, which releases its registered memory.
func ExampleCornflakes() {
	shape, err := microbench.ShapeByName("2x2048")
	if err != nil {
		panic(err)
	}
	want := shape.Values()[0]
	lib := microbench.Cornflakes()
	for _, mode := range lib.Modes() {
		c, err := lib.Prepare(shape, mode)
		if err != nil {
			panic(err)
		}
		for _, op := range microbench.Ops() {
			if err := op.Run(c); err != nil {
				panic(err)
			}
		}
		out, err := c.Output() // the message the echo produced
		if err != nil {
			panic(err)
		}
		got, err := c.Values(out)
		ok := err == nil && len(got) == len(want)
		for i := range got {
			ok = ok && bytes.Equal(got[i], want[i])
		}
		fmt.Println(lib.Name(), mode, len(out), "bytes, values ok:", ok, "close:", c.Close())
	}
	// Output:
	// cornflakes hybrid 4128 bytes, values ok: true close: <nil>
	// cornflakes copy 4128 bytes, values ok: true close: <nil>
	// cornflakes zerocopy 4128 bytes, values ok: true close: <nil>
}
