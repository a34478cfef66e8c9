package gen

import (
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/pluginpb"
)

// WKTImportPath is the Go package holding the Cornflakes code of the
// well-known types (generated from the copies of google/protobuf/*.proto
// that protocompile ships; see internal/gen/generated.txt). A schema that
// imports one of wktFiles refers to its messages through this package.
const WKTImportPath = "github.com/cornflakes-go/cornflakes/wkt"

// wktFiles are the well-known type files mapped to WKTImportPath.
var wktFiles = []string{
	"google/protobuf/any.proto",
	"google/protobuf/duration.proto",
	"google/protobuf/empty.proto",
	"google/protobuf/struct.proto",
	"google/protobuf/timestamp.proto",
	"google/protobuf/wrappers.proto",
}

// withWKT adds to req's parameters an M mapping of every file of wktFiles
// to WKTImportPath, unless the parameters already map that file. Both
// front ends call it before protogen reads the request, so a schema's
// imports of the well-known types resolve to their Cornflakes code.
func withWKT(req *pluginpb.CodeGeneratorRequest) {
	params := req.GetParameter()
	var add []string
	for _, f := range wktFiles {
		mapped := false
		for _, p := range strings.Split(params, ",") {
			if strings.HasPrefix(p, "M"+f+"=") {
				mapped = true
			}
		}
		if !mapped {
			add = append(add, "M"+f+"="+WKTImportPath+";wkt")
		}
	}
	if len(add) == 0 {
		return
	}
	if params != "" {
		add = append([]string{params}, add...)
	}
	req.Parameter = proto.String(strings.Join(add, ","))
}

// isWKTFile reports whether name is one of wktFiles.
func isWKTFile(name string) bool {
	for _, f := range wktFiles {
		if f == name {
			return true
		}
	}
	return false
}

// stripComments drops the .proto comments of a well-known type file before
// it is generated: protoc's copies carry them and protocompile's (compiled
// without source info) do not, and both front ends must produce the same
// bytes. The generated types keep their one-line doc comments.
func stripComments(f *protogen.File) {
	var msg func(m *protogen.Message)
	enum := func(e *protogen.Enum) {
		e.Comments = protogen.CommentSet{}
		for _, v := range e.Values {
			v.Comments = protogen.CommentSet{}
		}
	}
	msg = func(m *protogen.Message) {
		m.Comments = protogen.CommentSet{}
		for _, fl := range m.Fields {
			fl.Comments = protogen.CommentSet{}
		}
		for _, o := range m.Oneofs {
			o.Comments = protogen.CommentSet{}
		}
		for _, e := range m.Enums {
			enum(e)
		}
		for _, n := range m.Messages {
			msg(n)
		}
	}
	for _, e := range f.Enums {
		enum(e)
	}
	for _, m := range f.Messages {
		msg(m)
	}
}
