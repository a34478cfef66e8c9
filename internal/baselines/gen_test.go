package baselines

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

// pinnedFlatc is the flatc version the committed FlatBuffers code was generated with; other
// versions generate different (equivalent) code, so the comparison is skipped for them.
const pinnedFlatc = "2.0.8"

// generatorTools are the programs scripts/gen-baselines.sh needs.
var generatorTools = []string{"protoc", "protoc-gen-go", "protoc-gen-go-vtproto", "flatc", "capnp", "capnpc-go"}

// protocVersionLine is the only line allowed to differ: protoc-gen-go records the protoc version.
var protocVersionLine = regexp.MustCompile(`(?m)^// \tprotoc +v.*$`)

// TestGeneratedUpToDate regenerates the baseline code into a temporary directory with
// scripts/gen-baselines.sh and fails when it differs from the committed files in pb/, fb/ and
// capnpb/ (regenerate with scripts/gen-baselines.sh). It is skipped when a tool is missing.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the generators")
	}
	path := os.Getenv("PATH")
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		path += string(os.PathListSeparator) + filepath.Join(strings.TrimSpace(string(gopath)), "bin")
	}
	t.Setenv("PATH", path)
	var missing []string
	for _, tool := range generatorTools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Skipf("generated baseline code not checked: %s not on PATH (see scripts/gen-baselines.sh for how to install them)", strings.Join(missing, ", "))
	}
	if out, err := exec.Command("flatc", "--version").Output(); err != nil || !strings.Contains(string(out), pinnedFlatc) {
		t.Skipf("generated baseline code not checked: flatc %q is not the pinned version %s", strings.TrimSpace(string(out)), pinnedFlatc)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "gen-baselines.sh"), tmp)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-baselines.sh: %v\n%s", err, out)
	}
	for _, dir := range []string{"pb", "fb", "capnpb"} {
		committed := readGoFiles(t, filepath.Join(root, "internal", "baselines", dir))
		fresh := readGoFiles(t, filepath.Join(tmp, "internal", "baselines", dir))
		for name, want := range fresh {
			got, ok := committed[name]
			if !ok {
				t.Errorf("%s/%s is generated but not committed; run scripts/gen-baselines.sh", dir, name)
				continue
			}
			if !bytes.Equal(normalize(got), normalize(want)) {
				t.Errorf("%s/%s is stale; run scripts/gen-baselines.sh", dir, name)
			}
		}
		for name := range committed {
			if _, ok := fresh[name]; !ok {
				t.Errorf("%s/%s is committed but no longer generated; remove it", dir, name)
			}
		}
	}
}

func normalize(b []byte) []byte { return protocVersionLine.ReplaceAll(b, nil) }

// readGoFiles returns the non-test .go files of dir by name.
func readGoFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
