package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportGraph: the light generator command builds none of the
// benchmark dependencies (issue 24 point 7): a user who runs it from their
// own module (go run, go tool) adds only the generator's modules to go.mod.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	mods := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		mods[m] = true
	}
	for m := range mods {
		for _, bad := range []string{"gonum", "capnproto", "capnp", "flatbuffers", "ebpf", "grpc", "vtprotobuf", "msgp", "go-redis", "prometheus", "progressbar"} {
			if strings.Contains(m, bad) {
				t.Errorf("module %s (%s) in the import graph", m, bad)
			}
		}
	}
	allowed := map[string]bool{"github.com/cornflakes-go/cornflakes": true, "github.com/bufbuild/protocompile": true,
		"google.golang.org/protobuf": true, "golang.org/x/sync": true, "golang.org/x/sys": true}
	for m := range mods {
		if !allowed[m] {
			t.Errorf("unexpected module %s in the import graph (allowed: %v)", m, allowed)
		}
	}
}

// TestGenWithoutProtoc: with arguments the command generates like
// `cornflakes gen`: messages and service stubs for a .proto with a
// service; bad arguments are a usage error.
func TestGenWithoutProtoc(t *testing.T) {
	dir := t.TempDir()
	proto := `syntax = "proto3";
package hello;
option go_package = "example.com/hello";
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; bytes blob = 2; }
service Greeter { rpc SayHello(HelloRequest) returns (HelloReply); }
`
	if err := os.WriteFile(filepath.Join(dir, "hello.proto"), []byte(proto), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-I", dir, "--out", dir, "--go_opt", "paths=source_relative", filepath.Join(dir, "hello.proto")}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	src, err := os.ReadFile(filepath.Join(dir, "hello.cornflakes.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"type GreeterServer interface", "func (c *GreeterClient) SayHello(", "func (c *GreeterClient) SayHelloAsync(", "func NewHelloReply("} {
		if !bytes.Contains(src, []byte(w)) {
			t.Errorf("generated code lacks %q", w)
		}
	}
	stderr.Reset()
	if code := run([]string{"--nosuchflag"}, &stderr); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if code := run([]string{"-I", dir, filepath.Join(dir, "missing.proto")}, &stderr); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
