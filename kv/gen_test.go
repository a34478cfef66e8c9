package kv

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pinnedFlatc is the flatc version the committed FlatBuffers code was
// generated with (as for internal/baselines).
const pinnedFlatc = "2.0.8"

var protocVersionLine = regexp.MustCompile(`(?m)^// \tprotoc +v.*$`)

// TestGeneratedUpToDate regenerates the baseline serializers' code with
// scripts/gen-kv.sh into a temporary directory and fails when it differs
// from kv/internal/{kvpbgo,kvfb,kvcapnp}. The Cornflakes code is covered by
// internal/gen's staleness test (internal/gen/generated.txt). Skipped when a
// tool is missing or flatc is not the pinned version.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the generators")
	}
	path := os.Getenv("PATH")
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		path += string(os.PathListSeparator) + filepath.Join(strings.TrimSpace(string(gopath)), "bin")
	}
	t.Setenv("PATH", path)
	for _, tool := range []string{"protoc", "protoc-gen-go", "protoc-gen-go-vtproto", "flatc", "capnp", "capnpc-go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("generated code not checked: %s not on PATH (see scripts/gen-kv.sh)", tool)
		}
	}
	if out, err := exec.Command("flatc", "--version").Output(); err != nil || !strings.Contains(string(out), pinnedFlatc) {
		t.Skipf("generated code not checked: flatc %q is not the pinned version %s", strings.TrimSpace(string(out)), pinnedFlatc)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "gen-kv.sh"), tmp)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-kv.sh: %v\n%s", err, out)
	}
	for _, dir := range []string{"kvpbgo", "kvfb", "kvcapnp"} {
		committed := goFiles(t, filepath.Join(root, "kv", "internal", dir))
		fresh := goFiles(t, filepath.Join(tmp, "kv", "internal", dir))
		for name, want := range fresh {
			got, ok := committed[name]
			switch {
			case !ok:
				t.Errorf("%s/%s is generated but not committed; run scripts/gen-kv.sh", dir, name)
			case !bytes.Equal(protocVersionLine.ReplaceAll(got, nil), protocVersionLine.ReplaceAll(want, nil)):
				t.Errorf("%s/%s is stale; run scripts/gen-kv.sh", dir, name)
			}
		}
		for name := range committed {
			if _, ok := fresh[name]; !ok {
				t.Errorf("%s/%s is committed but no longer generated; remove it", dir, name)
			}
		}
	}
}

func goFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.Base(p)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
