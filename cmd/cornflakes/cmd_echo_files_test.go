package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEchoFiles runs a tiny `cornflakes echo --json` over memnet and checks
// that it writes echo.json (the same bytes as stdout), echo.csv and the two
// plots to --out, and says so on stderr.
func TestEchoFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "echo")
	var out, errb bytes.Buffer
	code := run([]string{"echo", "--datapath", "memnet", "--json", "--duration", "50ms", "--warmup", "20ms",
		"--shapes", "1x1024", "--approaches", "raw,onecopy", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var res []map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != 2 {
		t.Fatalf("stdout is not a JSON array of 2 results (%v):\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "echo.json"))
	if err != nil || !bytes.Equal(b, out.Bytes()) {
		t.Fatalf("echo.json differs from the --json output (%v):\n%s", err, b)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "echo.csv"))
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); err != nil || len(lines) != 3 || !strings.HasPrefix(lines[0], "approach,datapath,shape,") {
		t.Fatalf("echo.csv (%v):\n%s", err, csv)
	}
	for _, name := range []string{"echo.png", "echo-latency.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if !strings.Contains(errb.String(), "echo: wrote "+filepath.Join(dir, "echo.json")) {
		t.Fatalf("stderr does not name the files:\n%s", errb.String())
	}
}
