package gen

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata/golden/*.golden files with the generator's current output")

// goldenProtos lists testdata/golden/**/*.proto relative to testdata/golden.
func goldenProtos(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("testdata", "golden")
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".proto") {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden protos: %v", err)
	}
	return names
}

// TestGolden compares the generator's output for every
// testdata/golden/**/*.proto with the .golden file next to it. Run
// `go test ./internal/gen -run TestGolden -update` to accept a change, and
// review the diff.
func TestGolden(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	for _, name := range goldenProtos(t) {
		t.Run(name, func(t *testing.T) {
			files, err := Run(context.Background(), Config{ImportPaths: []string{dir}, Files: []string{name}, Params: []string{"paths=source_relative"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 1 || files[0].Name != strings.TrimSuffix(name, ".proto")+Suffix {
				t.Fatalf("generated %d files (%v), want one named %s", len(files), files, strings.TrimSuffix(name, ".proto")+Suffix)
			}
			golden := filepath.Join(dir, strings.TrimSuffix(name, ".proto")+".golden")
			if *update {
				if err := os.WriteFile(golden, files[0].Content, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(files[0].Content, want) {
				t.Errorf("output for %s differs from %s; run `go test ./internal/gen -run TestGolden -update` and review the diff.\n%s", name, golden, firstDiff(want, files[0].Content))
			}
		})
	}
}

// firstDiff describes the first differing line of two texts.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return "(no line differs)"
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// TestFrontEndsIdentical runs protoc with the plugin and the in-process
// front end on the same inputs and requires byte-identical output.
func TestFrontEndsIdentical(t *testing.T) {
	protocPath(t)
	dir := filepath.Join("testdata", "golden")
	for _, params := range [][]string{{"paths=source_relative"}, nil, {"module=github.com/cornflakes-go/cornflakes"}} {
		names := goldenProtos(t)
		want, err := runProtoc(t, []string{dir}, params, names...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Run(context.Background(), Config{ImportPaths: []string{dir}, Files: names, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		sortFiles(want)
		sortFiles(got)
		if len(want) != len(got) || len(got) != len(names) {
			t.Fatalf("params %q: protoc generated %d files, gen %d, want %d", params, len(want), len(got), len(names))
		}
		for i := range want {
			if want[i].Name != got[i].Name {
				t.Errorf("params %q: file %d: protoc %s, gen %s", params, i, want[i].Name, got[i].Name)
			}
			if !bytes.Equal(want[i].Content, got[i].Content) {
				t.Errorf("params %q: %s differs between protoc and cornflakes gen:\n%s", params, want[i].Name, firstDiff(want[i].Content, got[i].Content))
			}
		}
	}
	// The benchmark schema too.
	bench := filepath.Join("..", "benchschema")
	want, err := runProtoc(t, []string{bench}, nil, "bench.proto")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(context.Background(), Config{ImportPaths: []string{bench}, Files: []string{"bench.proto"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 1 || len(got) != 1 || want[0].Name != got[0].Name || !bytes.Equal(want[0].Content, got[0].Content) {
		t.Errorf("bench.proto: protoc and cornflakes gen differ")
	}
}
