package gen

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const strconvPkg = protogen.GoImportPath("strconv")

// generateFile emits <name>.cornflakes.go for f.
func generateFile(p *protogen.Plugin, f *protogen.File) error {
	g := p.NewGeneratedFile(f.GeneratedFilenamePrefix+Suffix, f.GoImportPath)
	g.P(Header)
	g.P("// source: ", f.Desc.Path())
	g.P()
	g.P("package ", f.GoPackageName)
	g.P()
	for _, e := range f.Enums {
		genEnum(g, e)
	}
	for _, m := range f.Messages {
		if err := genMessageTree(g, m); err != nil {
			return err
		}
	}
	return nil
}

// genEnum emits an enum as a named int32 with one constant per value and a
// String method.
func genEnum(g *protogen.GeneratedFile, e *protogen.Enum) {
	leading(g, e.Comments, fmt.Sprintf("%s is the enum %s.", e.GoIdent.GoName, e.Desc.FullName()))
	g.P("type ", e.GoIdent, " int32")
	g.P()
	g.P("// Values of ", e.GoIdent, ".")
	g.P("const (")
	for _, v := range e.Values {
		g.P(v.Comments.Leading, v.GoIdent, " ", e.GoIdent, " = ", v.Desc.Number(), trailing(v.Comments.Trailing))
	}
	g.P(")")
	g.P()
	g.P("// String returns the value's name, or its number when it has none.")
	g.P("func (v ", e.GoIdent, ") String() string {")
	g.P("switch v {")
	seen := map[protoreflect.EnumNumber]bool{}
	for _, v := range e.Values {
		if seen[v.Desc.Number()] {
			continue // alias (allow_alias): the first name wins
		}
		seen[v.Desc.Number()] = true
		g.P("case ", v.Desc.Number(), ":")
		g.P("return ", fmt.Sprintf("%q", v.Desc.Name()))
	}
	g.P("}")
	g.P("return ", strconvPkg.Ident("Itoa"), "(int(v))")
	g.P("}")
	g.P()
}

// leading prints the .proto leading comments of a declaration as its Go doc
// comment, or def when there are none.
func leading(g *protogen.GeneratedFile, c protogen.CommentSet, def string) {
	if c.Leading != "" {
		g.P(strings.TrimSuffix(c.Leading.String(), "\n"))
		return
	}
	g.P("// ", def)
}

func trailing(c protogen.Comments) string {
	s := strings.TrimSpace(c.String())
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return " " + s
}
