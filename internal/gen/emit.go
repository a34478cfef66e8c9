package gen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const strconvPkg = protogen.GoImportPath("strconv")

// generateFile emits <name>.cornflakes.go for f. The file is generated with
// protogen (which resolves and names the imports), then its import block is
// tidied (see tidyImports) and the result replaces it.
func generateFile(p *protogen.Plugin, f *protogen.File) error {
	name := f.GeneratedFilenamePrefix + Suffix
	g := p.NewGeneratedFile(name, f.GoImportPath)
	if err := emitFile(g, f); err != nil {
		return err
	}
	raw, err := g.Content()
	if err != nil {
		return err
	}
	g.Skip()
	tidy, err := tidyImports(raw)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	_, err = p.NewGeneratedFile(name, f.GoImportPath).Write(tidy)
	return err
}

// emitFile writes the whole file for f into g.
func emitFile(g *protogen.GeneratedFile, f *protogen.File) error {
	g.P(Header)
	g.P("// source: ", f.Desc.Path())
	g.P()
	g.P("package ", f.GoPackageName)
	g.P()
	if len(f.Messages) > 0 {
		genVersionCheck(g)
	}
	for _, e := range f.Enums {
		genEnum(g, e)
	}
	for _, m := range f.Messages {
		if err := genMessageTree(g, m); err != nil {
			return err
		}
	}
	genServices(g, f)
	return nil
}

// tidyImports rewrites the import block protogen produced (every import
// explicitly named, one sorted list) the way gofmt'd hand-written code looks:
// a name only where it differs from the last path element, the standard
// library first, then a blank line and the other imports. The result is
// formatted with go/format.
func tidyImports(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var decl *ast.GenDecl
	for _, d := range file.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			decl = gd
			break
		}
	}
	if decl == nil {
		return format.Source(src)
	}
	var std, other []string
	for _, spec := range decl.Specs {
		is := spec.(*ast.ImportSpec)
		p, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			return nil, err
		}
		line := is.Path.Value
		if is.Name != nil && is.Name.Name != path.Base(p) {
			line = is.Name.Name + " " + line
		}
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	var b bytes.Buffer
	b.WriteString("import (\n")
	for _, l := range std {
		b.WriteString("\t" + l + "\n")
	}
	if len(std) > 0 && len(other) > 0 {
		b.WriteString("\n")
	}
	for _, l := range other {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString(")")
	start, end := fset.Position(decl.Pos()).Offset, fset.Position(decl.End()).Offset
	out := append(append(append([]byte(nil), src[:start]...), b.Bytes()...), src[end:]...)
	return format.Source(out)
}

// genEnum emits an enum as a named int32 with one constant per value and a
// String method.
func genEnum(g *protogen.GeneratedFile, e *protogen.Enum) {
	docComment(g, e.Comments, fmt.Sprintf("%s is the enum %s.", e.GoIdent.GoName, e.Desc.FullName()))
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

// docComment prints the doc comment of a generated type: the sentence
// first, then the .proto leading comments as a second paragraph.
func docComment(g *protogen.GeneratedFile, c protogen.CommentSet, first string) {
	g.P("// ", first)
	if lc := strings.TrimSuffix(c.Leading.String(), "\n"); lc != "" {
		g.P("//")
		g.P(lc)
	}
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
