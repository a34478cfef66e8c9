package gen

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifestPath is the list of every generator run whose output is
// committed; see docs/CODEGEN.md.
const manifestPath = "generated.txt"

// TestGeneratedUpToDate regenerates every committed generated file listed
// in generated.txt and fails if any differs from the file on disk. It also
// fails if the repository holds a file with the generated-code header that
// no manifest entry produces (a schema someone forgot to list).
func TestGeneratedUpToDate(t *testing.T) {
	root, err := FindModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ReadManifest(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	produced := map[string]bool{}
	for _, e := range entries {
		files, stale, err := Compare(context.Background(), e.Config.Rooted(root))
		if err != nil {
			t.Errorf("%s:%d: cornflakes gen %s: %v", manifestPath, e.Line, e.Args, err)
			continue
		}
		for _, f := range files {
			produced[filepath.Join(root, e.Out, filepath.FromSlash(f.Name))] = true
		}
		for _, s := range stale {
			rel, _ := filepath.Rel(root, s.Path)
			t.Errorf("stale generated file %s (%s): it is not what `cornflakes gen %s` produces now.\nRegenerate with: go run ./cmd/cornflakes gen --manifest internal/gen/generated.txt", rel, s.Reason, e.Args)
		}
	}

	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || produced[p] {
			return nil
		}
		if isGenerated(t, p) {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s has the header %q but no entry of internal/gen/%s produces it: add the `cornflakes gen` line for its .proto (see docs/CODEGEN.md) or delete the file", rel, Header, manifestPath)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isGenerated reports whether the file's first line is [Header].
func isGenerated(t *testing.T, p string) bool {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	return sc.Scan() && sc.Text() == Header
}
