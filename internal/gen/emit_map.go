package gen

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Map fields (docs/CODEGEN.md "Maps"). `map<K, V> x = n` is stored and
// sent as `repeated XEntry x = n` (the entry message protobuf defines:
// K key = 1, V value = 2), kept in ascending key order by wire.Map. The
// parent's struct field is a wire.MessageList of entries, so the wire hooks
// treat it as any list of messages; the generated API is a per-field map
// type with Get, Set, Len, Delete and At.

// mapTypeName is the generated map type of map field f.
func mapTypeName(m *message, f *field) string {
	return m.m.GoIdent.GoName + "_" + f.goName + "Map"
}

// mapKeyType is the Go type of a map key kind.
func mapKeyType(k protoreflect.Kind) string {
	if k == protoreflect.StringKind {
		return "string"
	}
	return scalars[k].goType
}

// genMapEntry emits the wire.MapEntry methods of a map entry message.
func genMapEntry(g *protogen.GeneratedFile, m *message) {
	key := m.fields[0]
	kt := mapKeyType(key.kind)
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	g.P("// WireMapKey implements wire.MapEntry.")
	if key.kind == protoreflect.StringKind {
		g.P(recv, "WireMapKey() string { return ", wireIdent("MapStringKey"), "(&x.", key.sf, ") }")
	} else {
		g.P(recv, "WireMapKey() ", kt, " { return x.", key.sf, " }")
	}
	g.P()
	g.P("// WireSetMapKey implements wire.MapEntry.")
	g.P(recv, "WireSetMapKey(k ", kt, ") { x.Set", key.goName, "(k) }")
	g.P()
}

// genMapAccessors emits the accessors of map field f of m and its map type.
func genMapAccessors(g *protogen.GeneratedFile, m *message, f *field) {
	entry := f.f.Message
	et := "*" + g.QualifiedGoIdent(entry.GoIdent)
	newEntry := newFunc(g, f)
	keyF, valF := entry.Fields[0], entry.Fields[1]
	kt := mapKeyType(keyF.Desc.Kind())
	mt := mapTypeName(m, f)
	wm := g.QualifiedGoIdent(wireIdent("Map")) + "[" + kt + ", " + et + "]"
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	what := fmt.Sprintf("the map %s = %d", f.name, f.num)

	g.P("// Get", f.goName, " returns ", what, " (decoding it and checking its key order on")
	g.P("// first access).")
	g.P(recv, "Get", f.goName, "() (", mt, ", error) {")
	g.P("l, err := ", wireIdent("LoadMap"), "[", kt, ", ", et, "](x.cf.Arena(), &x.", f.sf, ", ", newEntry, ", &x.", mapFlag(f), ")")
	g.P("return ", mt, "{l}, err")
	g.P("}")
	g.P()
	g.P("// Has", f.goName, " reports whether ", what, " is not empty.")
	g.P(recv, "Has", f.goName, "() bool { return x.", f.sf, ".Len() != 0 }")
	g.P()
	g.P("// Clear", f.goName, " empties ", what, ".")
	g.P(recv, "Clear", f.goName, "() {")
	g.P("x.", f.sf, ".Init(x.cf.Arena(), 0)")
	g.P("x.", mapFlag(f), " = true")
	g.P("}")
	g.P()

	// The map type.
	g.P("// ", mt, " is ", what, " of ", m.m.Desc.FullName(), ": entries in ascending key")
	g.P("// order (the iteration order of At and the wire order). It is valid until the")
	g.P("// arena's Reset.")
	g.P("type ", mt, " struct{ m ", wm, " }")
	g.P()
	r := "func (m " + mt + ") "
	g.P("// Len returns the number of entries.")
	g.P(r, "Len() int { return m.m.Len() }")
	g.P()
	g.P("// At returns entry i in ascending key order (0 <= i < Len()).")
	g.P(r, "At(i int) ", et, " { return m.m.At(i) }")
	g.P()
	g.P("// Entry returns the entry of key k, adding one (value unset) if there is none.")
	g.P(r, "Entry(k ", kt, ") ", et, " { return m.m.Entry(k) }")
	g.P()
	g.P("// Delete removes key k and reports whether it was present.")
	g.P(r, "Delete(k ", kt, ") bool { return m.m.Delete(k) }")
	g.P()
	g.P("// List returns the entries as a list (for the generated String method).")
	wl := g.QualifiedGoIdent(apiIdent("MessageList")) + "[" + et + "]"
	g.P(r, "List() *", wl, " { return (*", wl, ")(m.m.List()) }")
	g.P()
	g.P("// Equal reports whether both maps hold equal entries (by eq).")
	g.P(r, "Equal(o ", mt, ", eq func(", et, ", ", et, ") bool) bool { return m.m.Equal(o.m, eq) }")
	g.P()

	vn := valF.GoName
	switch {
	case valF.Desc.Kind() == protoreflect.MessageKind:
		vt := "*" + g.QualifiedGoIdent(valF.Message.GoIdent)
		g.P("// Get returns the value of key k (nil when the entry has none) and whether k")
		g.P("// is present, decoding the value on first access.")
		g.P(r, "Get(k ", kt, ") (", vt, ", bool, error) {")
		g.P("e, ok := m.m.Find(k)")
		g.P("if !ok {")
		g.P("return nil, false, nil")
		g.P("}")
		g.P("v, err := e.Get", vn, "()")
		g.P("return v, true, err")
		g.P("}")
		g.P()
		g.P("// Set sets the value of key k to v (a message of the same arena).")
		g.P(r, "Set(k ", kt, ", v ", vt, ") { m.m.Entry(k).Set", vn, "(v) }")
		g.P()
		g.P("// Init sets the value of key k to a new empty message and returns it.")
		g.P(r, "Init(k ", kt, ") ", vt, " { return m.m.Entry(k).Init", vn, "() }")
		g.P()
	case valF.Desc.Kind() == protoreflect.StringKind:
		g.P("// Get returns the value of key k and whether k is present (UTF-8 checked:")
		g.P("// wire.ErrInvalidUTF8).")
		g.P(r, "Get(k ", kt, ") (string, bool, error) {")
		g.P("e, ok := m.m.Find(k)")
		g.P("if !ok {")
		g.P(`return "", false, nil`)
		g.P("}")
		g.P("v, err := e.Get", vn, "()")
		g.P("return v, true, err")
		g.P("}")
		g.P()
		g.P("// Set sets the value of key k (hybrid: copied below the arena's threshold,")
		g.P("// else zero-copy when v lies in registered memory).")
		g.P(r, "Set(k ", kt, ", v string) { m.m.Entry(k).Set", vn, "(v) }")
		g.P()
		g.P("// SetBuf sets the value of key k from a registered buffer (zero-copy at or")
		g.P("// above the threshold; the caller keeps b).")
		g.P(r, "SetBuf(k ", kt, ", b ", memPkg.Ident("Buf"), ") { m.m.Entry(k).Set", vn, "Buf(b) }")
		g.P()
	case valF.Desc.Kind() == protoreflect.BytesKind:
		g.P("// Get returns the value of key k (aliasing) and whether k is present.")
		g.P(r, "Get(k ", kt, ") ([]byte, bool) {")
		g.P("e, ok := m.m.Find(k)")
		g.P("if !ok {")
		g.P("return nil, false")
		g.P("}")
		g.P("return e.Get", vn, "(), true")
		g.P("}")
		g.P()
		g.P("// Set sets the value of key k (hybrid: copied below the arena's threshold,")
		g.P("// else zero-copy when v lies in registered memory).")
		g.P(r, "Set(k ", kt, ", v []byte) { m.m.Entry(k).Set", vn, "(v) }")
		g.P()
		g.P("// SetBuf sets the value of key k from a registered buffer (zero-copy at or")
		g.P("// above the threshold; the caller keeps b).")
		g.P(r, "SetBuf(k ", kt, ", b ", memPkg.Ident("Buf"), ") { m.m.Entry(k).Set", vn, "Buf(b) }")
		g.P()
	default:
		var vt string
		if valF.Desc.Kind() == protoreflect.EnumKind {
			vt = g.QualifiedGoIdent(valF.Enum.GoIdent)
		} else {
			vt = scalars[valF.Desc.Kind()].goType
		}
		g.P("// Get returns the value of key k and whether k is present.")
		g.P(r, "Get(k ", kt, ") (", vt, ", bool) {")
		g.P("e, ok := m.m.Find(k)")
		g.P("if !ok {")
		g.P("var zero ", vt)
		g.P("return zero, false")
		g.P("}")
		g.P("return e.Get", vn, "(), true")
		g.P("}")
		g.P()
		g.P("// Set sets the value of key k.")
		g.P(r, "Set(k ", kt, ", v ", vt, ") { m.m.Entry(k).Set", vn, "(v) }")
		g.P()
	}
}
