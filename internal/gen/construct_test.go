package gen

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAccepted: the constructs that used to be rejected (oneof, nested
// oneof, map, proto2 required, a well-known type import) generate code,
// identical through both front ends when protoc is installed.
func TestAccepted(t *testing.T) {
	dir := filepath.Join("testdata", "accept")
	for _, f := range []string{"oneof.proto", "nested_oneof.proto", "map.proto", "required.proto", "wkt.proto", "fieldnum.proto"} {
		t.Run(f, func(t *testing.T) {
			ips := []string{dir}
			got, err := Run(context.Background(), Config{ImportPaths: ips, Files: []string{f}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("generated %d files", len(got))
			}
			if f == "wkt.proto" && !bytes.Contains(got[0].Content, []byte(`"github.com/cornflakes-go/cornflakes/wkt"`)) {
				t.Error("the Timestamp import is not mapped to package wkt")
			}
			if _, err := exec.LookPath("protoc"); err != nil {
				return
			}
			want, err := runProtoc(t, ips, nil, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != 1 || want[0].Name != got[0].Name || !bytes.Equal(want[0].Content, got[0].Content) {
				t.Errorf("protoc and cornflakes gen differ:\n%s", firstDiff(want[0].Content, got[0].Content))
			}
		})
	}
}

// TestWKTFrontEnds: the well-known types generate identically from
// protocompile's copies and from protoc's, and an explicit M parameter
// overrides the built-in mapping.
func TestWKTFrontEnds(t *testing.T) {
	params := []string{"module=github.com/cornflakes-go/cornflakes"}
	got, err := Run(context.Background(), Config{Files: wktFiles, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(wktFiles) {
		t.Fatalf("generated %d files", len(got))
	}
	for _, f := range got {
		if !strings.HasPrefix(f.Name, "wkt/") {
			t.Errorf("generated %s, want it in wkt/", f.Name)
		}
	}
	over, err := Run(context.Background(), Config{ImportPaths: []string{filepath.Join("testdata", "accept")}, Files: []string{"wkt.proto"},
		Params: []string{"Mgoogle/protobuf/timestamp.proto=example.com/mine;mine"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(over[0].Content, []byte(`"example.com/mine"`)) {
		t.Error("an explicit M parameter does not override the well-known type mapping")
	}
	protocPath(t)
	want, err := runProtoc(t, nil, params, wktFiles...)
	if err != nil {
		t.Fatal(err)
	}
	sortFiles(want)
	sortFiles(got)
	for i := range want {
		if want[i].Name != got[i].Name || !bytes.Equal(want[i].Content, got[i].Content) {
			t.Errorf("%s: protoc and cornflakes gen differ:\n%s", got[i].Name, firstDiff(want[i].Content, got[i].Content))
		}
	}
}
