package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMicrobenchFiles runs a one-shape, one-op `cornflakes microbench --out dir` and checks the
// files it writes and reports: the JSON as printed on stdout, the CSV and the op's plot only.
func TestMicrobenchFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mb") // created by the command
	var out, errb bytes.Buffer
	code := run([]string{"microbench", "--json", "--benchtime", "5ms", "--shapes", "1x1024",
		"--libraries", "cornflakes/hybrid,vtprotobuf", "--ops", "echo", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	for _, name := range []string{"microbench.json", "microbench.csv", "microbench-echo.png"} {
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
		if !strings.Contains(errb.String(), path) {
			t.Errorf("stderr does not report %s:\n%s", path, errb.String())
		}
	}
	for _, name := range []string{"microbench-serialize.png", "microbench-decode.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s written for a run of echo only", name)
		}
	}
	if !strings.Contains(errb.String(), "microbench: wrote ") {
		t.Errorf("no \"microbench: wrote\" line on stderr:\n%s", errb.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "microbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, out.Bytes()) {
		t.Errorf("microbench.json differs from the --json output:\n%s\nstdout:\n%s", b, out.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(b, &recs); err != nil || len(recs) != 2 {
		t.Errorf("microbench.json: %d records, err %v; want 2", len(recs), err)
	}
	csvb, err := os.ReadFile(filepath.Join(dir, "microbench.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(csvb)), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "library,mode,shape,op,ns_per_op,") {
		t.Errorf("microbench.csv:\n%s\nwant a header and 2 rows", csvb)
	}
}

// An --out that cannot be created fails the command, after the records reached stdout.
func TestMicrobenchFilesBadOut(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"microbench", "--benchtime", "1ms", "--shapes", "1x1024", "--libraries", "vtprotobuf",
		"--ops", "decode", "--out", filepath.Join(file, "sub")}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "vtprotobuf") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 with the table on stdout", code, out.String(), errb.String())
	}
}
