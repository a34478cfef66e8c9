package calibrate

import (
	"strings"
	"testing"
	"time"
)

// TestRunShm runs a tiny sweep over shared memory: the working set lives
// in a shared space the server's endpoint sends from, so scatter-gather
// entries go out as descriptors (counted as zero-copy), and every response
// is checked byte for byte.
func TestRunShm(t *testing.T) {
	res, err := Run(Config{Datapath: "shm", Entries: []int{1, 4}, TotalSizes: []int{256, 4096}, WorkingSet: 4 << 20, Rounds: 1, Phase: 30 * time.Millisecond, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 || res.Datapath != "shm" {
		t.Fatalf("%s: %d cells, want 4: %+v", res.Datapath, len(res.Cells), res.Cells)
	}
	for _, c := range res.Cells {
		if c.CopyNsPerResp <= 0 || c.SGNsPerResp <= 0 || c.CopyResponses == 0 || c.SGResponses == 0 {
			t.Fatalf("bad cell %+v", c)
		}
		if c.ZeroCopyEntries == 0 {
			t.Fatalf("no zero-copy entries: the working set is not in the shared space: %+v", c)
		}
	}
	if !strings.Contains(res.WorkingSetNote, "shared space") {
		t.Fatalf("working_set_note %q", res.WorkingSetNote)
	}
}
