package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCalibrateFiles runs a one-cell `cornflakes calibrate --json` over
// memnet and checks the result on stdout and the files written to --out.
func TestCalibrateFiles(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"calibrate", "--json", "--datapath", "memnet", "--entries", "1", "--sizes", "1024",
		"--rounds", "1", "--phase", "20ms", "--working-set", "1048576", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var res struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Cells) != 1 {
		t.Fatalf("stdout: %v cells, %v\n%s", len(res.Cells), err, out.String())
	}
	for _, ext := range []string{".png", ".txt", ".csv", ".json"} {
		if st, err := os.Stat(filepath.Join(dir, "calibrate-memnet"+ext)); err != nil || st.Size() == 0 {
			t.Errorf("calibrate-memnet%s: %v", ext, err)
		}
	}
}
