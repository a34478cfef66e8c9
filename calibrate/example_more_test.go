package calibrate_test

import (
	"fmt"
	"os"

	"github.com/cornflakes-go/cornflakes/calibrate"
)

// cells is a made-up sweep: scatter-gather loses for small entries and
// wins from 512 bytes per entry on.
var cells = []calibrate.Cell{
	{Entries: 1, TotalBytes: 256, EntryBytes: 256, GainPct: -12.5},
	{Entries: 1, TotalBytes: 1024, EntryBytes: 1024, GainPct: 8.0},
	{Entries: 1, TotalBytes: 4096, EntryBytes: 4096, GainPct: 31.2},
	{Entries: 4, TotalBytes: 256, EntryBytes: 64, GainPct: -40.1},
	{Entries: 4, TotalBytes: 1024, EntryBytes: 256, GainPct: -9.7},
	{Entries: 4, TotalBytes: 4096, EntryBytes: 1024, GainPct: 12.3},
	{Entries: 8, TotalBytes: 4096, EntryBytes: 512, GainPct: 1.5},
}

// Recommend turns a sweep into the copy threshold: the smallest entry size
// from which scatter-gather wins in every measured cell.
func ExampleRecommend() {
	fmt.Println(calibrate.Recommend(cells))

	// One losing cell at 1024 B per entry moves the threshold above it.
	worse := append([]calibrate.Cell{{Entries: 2, TotalBytes: 2048, EntryBytes: 1024, GainPct: -0.5}}, cells...)
	fmt.Println(calibrate.Recommend(worse))

	// When the largest entries lose, there is no threshold: copy everything.
	fmt.Println(calibrate.Recommend(cells[:1]))
	// Output:
	// 512
	// 4096
	// -1
}

// LLC is the last-level cache size that the default working set is a
// multiple of, so that values come from memory, as in a large store.
// The size depends on the machine; the source names where it was read.
func ExampleLLC() {
	size, source := calibrate.LLC() // e.g. 33554432 "sysfs L3"
	fmt.Println(size > 0, source != "")

	// A sweep over a working set of twice the cache instead of
	// WorkingSetFactor times (at most MaxWorkingSet).
	cfg := calibrate.Config{Quick: true, WorkingSet: min(2*size, calibrate.MaxWorkingSet)}
	fmt.Println(cfg.WorkingSet > size)
	// Output:
	// true true
	// true
}

// WriteTable prints a sweep as the grid of gains, then the recommended
// threshold (`cornflakes calibrate` prints it; WriteCSV and WritePNG save
// the same sweep as a spreadsheet and a heatmap).
func ExampleResult_WriteTable() {
	res := &calibrate.Result{
		Datapath: "udp", LLCBytes: 32 << 20, LLCSource: "sysfs L3", WorkingSetBytes: 128 << 20,
		Entries: []int{1, 4, 8}, TotalSizes: []int{256, 1024, 4096},
		Cells: cells, RecommendedThreshold: calibrate.Recommend(cells),
	}
	if err := res.WriteTable(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// scatter-gather vs copy on udp: server CPU per response, gain = copy/sg - 1 (%; >0: scatter-gather wins)
	// LLC 32768 KiB (sysfs L3), working set 128 MiB
	//   entries \ total B    256  1024   4096
	//                   1  -12.5  +8.0  +31.2
	//                   4  -40.1  -9.7  +12.3
	//                   8      -     -   +1.5
	// recommended threshold: 512 bytes per field
}

// WriteCSV writes one row per cell, with Cell's JSON field names as the
// header.
func ExampleResult_WriteCSV() {
	res := &calibrate.Result{Cells: []calibrate.Cell{{
		Entries: 4, TotalBytes: 4096, EntryBytes: 1024,
		CopyNsPerResp: 2400, SGNsPerResp: 2000, CopyRPS: 410000, SGRPS: 480000, GainPct: 20,
		CopyResponses: 41000, SGResponses: 48000, ZeroCopyEntries: 192000,
	}}}
	if err := res.WriteCSV(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// entries,total_bytes,entry_bytes,copy_ns_per_resp,sg_ns_per_resp,copy_rps,sg_rps,sg_gain_pct,copy_responses,sg_responses,zero_copy_entries
	// 4,4096,1024,2400,2000,410000,480000,20,41000,48000,192000
}
