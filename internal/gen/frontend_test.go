package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// pluginEnv makes the test binary act as protoc-gen-go-cornflakes when
// protoc runs it (see TestMain), so the protoc front end is tested with the
// code under test, without building a separate binary.
const pluginEnv = "CORNFLAKES_GEN_TEST_AS_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(pluginEnv) == "1" {
		RunPlugin()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// protocPath returns the protoc binary or skips the test.
func protocPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc not installed (apt-get install protobuf-compiler): skipping the protoc front-end comparison; the protocompile front end is tested without it")
	}
	return p
}

// runProtoc runs protoc with the test binary as the plugin and returns the
// generated files (relative to the output dir) or protoc's stderr as error.
func runProtoc(t *testing.T, importPaths []string, params []string, files ...string) ([]File, error) {
	t.Helper()
	protoc := protocPath(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	args := []string{"--plugin=protoc-gen-go-cornflakes=" + self, "--go-cornflakes_out=" + out}
	for _, ip := range importPaths {
		args = append(args, "-I", ip)
	}
	if len(params) > 0 {
		args = append(args, "--go-cornflakes_opt="+strings.Join(params, ","))
	}
	args = append(args, files...)
	cmd := exec.Command(protoc, args...)
	cmd.Env = append(os.Environ(), pluginEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var got []File
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		got = append(got, File{Name: filepath.ToSlash(rel), Content: b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, nil
}

func sortFiles(fs []File) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
}

// TestRejections checks that every unsupported construct is rejected with
// file:line:col and its name, by both front ends.
func TestRejections(t *testing.T) {
	tests := []struct {
		file string
		want []string // each error line, in order
	}{
		{"extend.proto", []string{
			`extend.proto:7:14: extension range 100 to 199 in message reject.M: not supported`,
			`extend.proto:11:3: extension reject.b: not supported`,
		}},
		{"group.proto", []string{`group.proto:6:3: group field reject.M.g: not supported`}},
		{"service.proto", []string{`service.proto:10:3: streaming method reject.S.Call: not supported`}},
		{"editions.proto", []string{`editions.proto:1:1: edition syntax`}},
		{"wkt.proto", []string{`wkt.proto:8:3: field reject.M.mask of type google.protobuf.FieldMask`}},
		{"collision.proto", []string{`collision.proto:7:3: field reject.M.name_bytes: its accessor GetNameBytes collides with an accessor of field name`}},
		{"names.proto", []string{`names.proto:8:1: message reject.NewM: its generated Go identifier NewM collides with that of message reject.M`}},
		{"many.proto", []string{
			`many.proto:12:3: streaming method reject.S.F: not supported`,
		}},
	}
	dir := filepath.Join("testdata", "reject")
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Run(context.Background(), Config{ImportPaths: []string{dir}, Files: []string{tt.file}})
			if err == nil {
				t.Fatal("accepted; want an error")
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("errors.Is(err, ErrUnsupported) = false for %v", err)
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.File != tt.file || ue.Line == 0 || ue.Col == 0 {
				t.Errorf("want an *UnsupportedError with a position in %s, got %#v", tt.file, ue)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant prefix %s", i, lines[i], w)
				}
			}
		})
	}
}

// TestRejectionsProtoc checks that protoc reports the same positions
// through the plugin (editions are refused by protoc 3.21 itself).
func TestRejectionsProtoc(t *testing.T) {
	protocPath(t)
	dir := filepath.Join("testdata", "reject")
	for _, f := range []string{"extend.proto", "group.proto", "service.proto", "wkt.proto", "collision.proto", "many.proto", "names.proto"} {
		t.Run(f, func(t *testing.T) {
			_, perr := runProtoc(t, []string{dir}, nil, f)
			_, cerr := Run(context.Background(), Config{ImportPaths: []string{dir}, Files: []string{f}})
			if perr == nil || cerr == nil {
				t.Fatalf("want errors from both front ends, got protoc %v, gen %v", perr, cerr)
			}
			for _, line := range strings.Split(cerr.Error(), "\n") {
				if !strings.Contains(perr.Error(), line) {
					t.Errorf("protoc output lacks %q:\n%s", line, perr)
				}
			}
		})
	}
}

// TestSyntaxErrorPosition checks that parse errors of the protocompile front
// end name file:line:col.
func TestSyntaxErrorPosition(t *testing.T) {
	_, err := Run(context.Background(), Config{ImportPaths: []string{filepath.Join("testdata", "reject")}, Files: []string{"syntaxerr.proto"}})
	if err == nil || !strings.HasPrefix(err.Error(), "syntaxerr.proto:7:1: syntax error") {
		t.Fatalf("got %v, want syntaxerr.proto:7:1: syntax error...", err)
	}
}

func TestProtoName(t *testing.T) {
	dir := filepath.Join("testdata", "reject")
	tests := []struct {
		file string
		ips  []string
		want string
		err  string
	}{
		{"group.proto", []string{dir}, "group.proto", ""},
		{filepath.Join(dir, "group.proto"), []string{dir}, "group.proto", ""},
		{filepath.Join(dir, "group.proto"), []string{"testdata"}, "reject/group.proto", ""},
		{filepath.Join(dir, "group.proto"), []string{"."}, "testdata/reject/group.proto", ""},
		{filepath.Join(dir, "group.proto"), []string{filepath.Join("testdata", "golden")}, "", "does not reside within any import path"},
		{"google/protobuf/timestamp.proto", []string{dir}, "google/protobuf/timestamp.proto", ""},
		{"nope.proto", []string{dir}, "", "no such file"},
	}
	for _, tt := range tests {
		got, err := protoName(tt.file, tt.ips)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("protoName(%q, %q) error = %v, want %q", tt.file, tt.ips, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("protoName(%q, %q) = %q, %v; want %q", tt.file, tt.ips, got, err, tt.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	var out bytes.Buffer
	inv, err := ParseArgs([]string{"-I", "a", "--proto_path=b", "--out", "o", "--go_opt", "paths=source_relative", "--go_opt=Mx.proto=example.com/x", "x.proto", "y.proto"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inv.ImportPaths, " "); got != "a b" {
		t.Errorf("ImportPaths = %q", got)
	}
	if got := strings.Join(inv.Params, ","); got != "paths=source_relative,Mx.proto=example.com/x" {
		t.Errorf("Params = %q", got)
	}
	if inv.Out != "o" || strings.Join(inv.Files, " ") != "x.proto y.proto" {
		t.Errorf("Out, Files = %q, %q", inv.Out, inv.Files)
	}
	for _, bad := range [][]string{{}, {"--nope"}, {"--manifest", "m", "x.proto"}} {
		if _, err := ParseArgs(bad, &out); !errors.Is(err, ErrUsage) {
			t.Errorf("ParseArgs(%q) = %v, want ErrUsage", bad, err)
		}
	}
}

func TestUnknownParameter(t *testing.T) {
	_, err := Run(context.Background(), Config{ImportPaths: []string{filepath.Join("testdata", "golden")}, Files: []string{"alltypes.proto"}, Params: []string{"frobnicate=1"}})
	if err == nil || !strings.Contains(err.Error(), `unknown parameter "frobnicate"`) {
		t.Fatalf("got %v, want unknown parameter error", err)
	}
}

func TestReadManifestErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ line, err string }{
		{"-I /abs x.proto", "paths in a manifest are relative"},
		{"--manifest m", "not allowed in a manifest"},
		{"--bogus x.proto", "usage"},
	} {
		p := filepath.Join(dir, "m.txt")
		if err := os.WriteFile(p, []byte("# comment\n\n"+tt.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadManifest(p)
		if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "m.txt:3:") {
			t.Errorf("%q: error %v, want m.txt:3: ... %s", tt.line, err, tt.err)
		}
	}
}
