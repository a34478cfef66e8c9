package gen

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Constructs beyond plain fields (docs/CODEGEN.md "Oneofs, maps, required
// fields, well-known types, Clone"): they are generator-level features over
// the existing wire format. A oneof member is an explicit-presence field
// whose setters clear the other members; a map is a list of entry messages
// kept in key order (emit_map.go); a required field is checked when a
// message is decoded. The wire hooks only gain one call at the end of
// WireDecode (emitDecodeCheck).

// constructs is what a field takes part in.
type constructs struct {
	oneof    *protogen.Oneof // non-synthetic oneof the field is a member of
	isMap    bool
	required bool
}

func fieldConstructs(f *protogen.Field) constructs {
	var c constructs
	if o := f.Oneof; o != nil && !o.Desc.IsSynthetic() {
		c.oneof = o
	}
	c.isMap = f.Desc.IsMap()
	c.required = f.Desc.Cardinality() == protoreflect.Required
	return c
}

// oneofs returns m's real (non-synthetic) oneofs.
func (m *message) oneofs() []*protogen.Oneof {
	var out []*protogen.Oneof
	for _, o := range m.m.Oneofs {
		if !o.Desc.IsSynthetic() {
			out = append(out, o)
		}
	}
	return out
}

// oneofCaseType, oneofNotSet and oneofCase name a oneof's case type and
// constants (protobuf-go's opaque-API names, with an exported case type).
func oneofCaseType(o *protogen.Oneof) string {
	return o.Parent.GoIdent.GoName + "_" + o.GoName + "Case"
}
func oneofNotSet(o *protogen.Oneof) string {
	return o.Parent.GoIdent.GoName + "_" + o.GoName + "_not_set_case"
}
func oneofCase(f *protogen.Field) string {
	return f.Parent.GoIdent.GoName + "_" + f.GoName + "_case"
}

// mapFlag is the struct field recording that a map's key order was checked.
func mapFlag(f *field) string { return "cfMap" + f.goName } // never an "x"+GoName field name

// needsCheck reports whether m's WireDecode ends with a call of wireCheck.
func (m *message) needsCheck() bool {
	for _, f := range m.fields {
		if f.cx.oneof != nil || f.cx.isMap || f.cx.required {
			return true
		}
	}
	return false
}

// emitDecodeCheck ends a WireDecode hook with the construct checks, if any.
func emitDecodeCheck(g *protogen.GeneratedFile, m *message) {
	emitKeepDecodeHook(g, m) // emit_unknown.go
	if m.needsCheck() {
		g.P("x.wireCheck(d)")
	}
}

// genConstructFields adds the struct fields the constructs need.
func genConstructFields(g *protogen.GeneratedFile, m *message) {
	for _, f := range m.fields {
		if f.cx.isMap {
			g.P(mapFlag(f), " bool // key order checked (wire.LoadMap)")
		}
	}
}

// oneofSet emits, in a setter of a oneof member, the clearing of the other
// members.
func oneofSet(g *protogen.GeneratedFile, f *field) {
	if o := f.cx.oneof; o != nil {
		g.P("x.clear", o.GoName, "Except(", f.num, ")")
	}
}

// checkConstructNames rejects accessors of oneofs that collide with field
// accessors or generated methods.
func (m *message) checkConstructNames() error {
	used := map[string]bool{}
	for _, n := range []string{"Sizes", "Serialize", "SerializeSGA", "Decode", "DecodeBytes", "WireCore", "WireSizes", "WireEncode", "WireDecode", "Equal", "String", "Clone"} {
		used[n] = true
	}
	for _, f := range m.fields {
		for _, n := range f.methods() {
			used[n] = true
		}
	}
	for _, o := range m.oneofs() {
		for _, n := range []string{"Which" + o.GoName, "Clear" + o.GoName} {
			if used[n] {
				fd := m.m.Desc.ParentFile()
				return unsupported(fd, fd.SourceLocations().ByDescriptor(o.Desc),
					fmt.Sprintf("oneof %s: its accessor %s collides with another accessor or method", o.Desc.FullName(), n), "rename the oneof")
			}
			used[n] = true
		}
	}
	return nil
}

// genConstructs emits the oneof accessors, the decode check, Clone, and
// the map key methods of map entries.
func genConstructs(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	recv := "func (x *" + name + ") "
	byNum := map[int]*field{}
	for _, f := range m.fields {
		byNum[f.num] = f
	}
	for _, o := range m.oneofs() {
		ct := oneofCaseType(o)
		g.P("// ", ct, " names the member of oneof ", o.Desc.FullName(), " that is set (its field number).")
		g.P("type ", ct, " int32")
		g.P()
		g.P("// Cases of oneof ", o.Desc.FullName(), ".")
		g.P("const (")
		g.P(oneofNotSet(o), " ", ct, " = 0")
		for _, mf := range o.Fields {
			g.P(oneofCase(mf), " ", ct, " = ", mf.Desc.Number())
		}
		g.P(")")
		g.P()
		g.P("// Which", o.GoName, " returns the member of oneof ", o.Desc.Name(), " that is set, or ", oneofNotSet(o), ".")
		g.P(recv, "Which", o.GoName, "() ", ct, " {")
		g.P("switch {")
		for _, mf := range o.Fields {
			g.P("case x.Has", mf.GoName, "():")
			g.P("return ", oneofCase(mf))
		}
		g.P("}")
		g.P("return ", oneofNotSet(o))
		g.P("}")
		g.P()
		g.P("// Clear", o.GoName, " unsets every member of oneof ", o.Desc.Name(), ".")
		g.P(recv, "Clear", o.GoName, "() { x.clear", o.GoName, "Except(0) }")
		g.P()
		g.P("// clear", o.GoName, "Except unsets the members of oneof ", o.Desc.Name(), " other than field keep.")
		g.P(recv, "clear", o.GoName, "Except(keep int) {")
		for _, mf := range o.Fields {
			f := byNum[int(mf.Desc.Number())]
			g.P("if keep != ", f.num, " {")
			switch f.shape {
			case shapeMessage, shapeBytes, shapeString:
				g.P("x.", f.sf, ".Clear()")
			default:
				g.P("x.", f.sf, " = ", zeroValue(f))
			}
			if f.hasBit >= 0 {
				g.P("x.cf.ClearHas(", f.hasBit, ")")
			}
			g.P("}")
		}
		g.P("}")
		g.P()
	}
	if m.needsCheck() {
		w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
		g.P("// wireCheck ends WireDecode: a decoded map's key order is checked again on")
		g.P("// first access; a missing required field or a oneof with more than one")
		g.P("// member set fails the decode.")
		g.P(recv, "wireCheck(d *", w("Decoder"), ") {")
		for _, f := range m.fields {
			if f.cx.isMap {
				g.P("x.", mapFlag(f), " = false")
			}
		}
		g.P("if d.Failed() {")
		g.P("return")
		g.P("}")
		for _, f := range m.fields {
			if f.cx.required {
				g.P("if !x.Has", f.goName, "() {")
				g.P("d.MissingRequired(", f.num, ", ", fmt.Sprintf("%q", f.f.Desc.FullName()), ")")
				g.P("}")
			}
		}
		for _, o := range m.oneofs() {
			g.P("if ", oneofCountExpr(g, o), " > 1 {")
			g.P("d.OneofConflict(", fmt.Sprintf("%q", o.Desc.FullName()), ")")
			g.P("}")
		}
		g.P("}")
		g.P()
	}
	if m.m.Desc.IsMapEntry() {
		genMapEntry(g, m)
	}
	genClone(g, m)
}

// oneofCountExpr is the number of o's members that are set.
func oneofCountExpr(g *protogen.GeneratedFile, o *protogen.Oneof) string {
	s := g.QualifiedGoIdent(wireIdent("CountSet")) + "("
	for i, mf := range o.Fields {
		if i > 0 {
			s += ", "
		}
		s += "x.Has" + mf.GoName + "()"
	}
	return s + ")"
}

// genClone emits Clone.
func genClone(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	g.P("// Clone returns a deep copy of x in arena a, sharing no memory with x (valid")
	g.P("// after x's arena is Reset, until a's Reset). A nil a makes a plain Go heap")
	g.P("// value in a private arena that is never Reset (see wire.Clone).")
	g.P("func (x *", name, ") Clone(a *", wireIdent("Arena"), ") (*", name, ", error) {")
	g.P("return ", wireIdent("Clone"), "(x, a, New", name, ")")
	g.P("}")
	g.P()
}
