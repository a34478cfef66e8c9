package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestRPCBenchJSON runs `cornflakes rpcbench --json` over memnet for one
// sweep and checks the documented record fields and the files written.
func TestRPCBenchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"rpcbench", "--json", "--quick", "--datapath", "memnet", "--tests", "factor", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("stdout is not one JSON array: %v\n%s", err, out.String())
	}
	factors := 0
	for _, r := range recs {
		for _, k := range []string{"test", "variant", "datapath", "value", "unit"} {
			if _, ok := r[k]; !ok {
				t.Errorf("record lacks %q: %v", k, r)
			}
		}
		if r["test"] == "factor" && r["unit"] == "rps" {
			factors++
		}
	}
	if factors == 0 {
		t.Fatalf("no factor records in %v", recs)
	}
	for _, name := range []string{"rpcbench.json", "rpcbench.csv", "factor.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "loss_bw.png")); err == nil {
		t.Errorf("loss_bw.png written for a run without loss_bw")
	}
}

// An --out that cannot be created fails the command, after the results
// reached stdout.
func TestRPCBenchBadOut(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"rpcbench", "--json", "--quick", "--datapath", "memnet", "--tests", "factor", "--out", filepath.Join(file, "sub")}, &out, &errb)
	if code == 0 {
		t.Fatalf("exit 0 with an --out under a regular file; stderr:\n%s", errb.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil || len(recs) == 0 {
		t.Fatalf("the results did not reach stdout: %v\n%s", err, out.String())
	}
}
