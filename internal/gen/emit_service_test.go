package gen

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceFrontEndsIdentical: the service stubs of both versions of the
// service test schema (two files that cannot share one protoc run: they
// define the same names) are byte-identical from protoc and cornflakes gen.
func TestServiceFrontEndsIdentical(t *testing.T) {
	protocPath(t)
	dir := filepath.Join("testdata", "services")
	golden := filepath.Join("testdata", "golden")
	for _, name := range []string{"svcv1/greeter.proto", "svcv2/greeter.proto", "svcall/all.proto"} {
		params := []string{"paths=source_relative"}
		want, err := runProtoc(t, []string{golden, dir}, params, name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Run(context.Background(), Config{ImportPaths: []string{golden, dir}, Files: []string{name}, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 1 || len(got) != 1 || want[0].Name != got[0].Name || !bytes.Equal(want[0].Content, got[0].Content) {
			t.Errorf("%s: protoc and cornflakes gen differ:\n%s", name, firstDiff(want[0].Content, got[0].Content))
		}
		if name == "svcall/all.proto" {
			continue
		}
		for _, s := range []string{"type GreeterServer interface", "type UnimplementedGreeterServer struct{}", "func RegisterGreeterServer(",
			"func NewGreeterClient(", "func (c *GreeterClient) SayHello(ctx context.Context, a *wire.Arena, req *HelloRequest) (*HelloReply, error)",
			"var Greeter_ServiceDesc = service.ServiceDesc{", "var Calc_ServiceDesc = service.ServiceDesc{"} {
			if !strings.Contains(string(got[0].Content), s) {
				t.Errorf("%s: the output lacks %q", name, s)
			}
		}
	}
}
