package gen

import (
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The one-pass SerializeSGA (runtime/wireimpl/fast_encode_onepass.go,
// docs/CODEGEN.md "One-pass SerializeSGA"): a message on the direct path
// with a nested message field, and no list anywhere below it, gets
//
//	func (x *T) wireEnc1(w *wireimpl.OnePass, hdr, cp, zc, depth int) (int, int, int)
//
// which writes x's header at hdr and its nested messages' headers after it
// (the nested messages' own wireEnc1, or inline for a leaf, a message of
// scalars, bytes and strings, and for the level above the leaves), its values at the provisional cursors cp and
// zc, and returns the advanced cursors. WireSerializeSGA tries it first and
// falls back to the two-pass path when OnePass.Finish reports false; the
// two-pass path raises the arena's provisional base (Core.OnePassBase).

// onePassMessage reports whether no message reachable from m through its
// message fields (m included) has a list field (seen: messages already
// checked, assumed eligible so that recursive types terminate).
func onePassMessage(m *protogen.Message, seen map[protoreflect.FullName]bool) bool {
	if seen == nil {
		seen = map[protoreflect.FullName]bool{}
	}
	if seen[m.Desc.FullName()] {
		return true
	}
	seen[m.Desc.FullName()] = true
	for _, f := range m.Fields {
		if f.Desc.IsList() {
			return false
		}
		if f.Desc.Kind() == protoreflect.MessageKind && !onePassMessage(f.Message, seen) {
			return false
		}
	}
	return true
}

// onePass reports whether m gets wireEnc1 and tries the one pass in its
// WireSerializeSGA: on the direct path, with a nested message field (not
// flat), and no list below it.
func (m *message) onePass() bool {
	return m.directEncode() && !m.flatEncode() && onePassMessage(m.m, nil)
}

// emitOnePassSGA emits the first lines of m's WireSerializeSGA: the one
// pass, returning when it succeeds (the caller emits the fallback).
func emitOnePassSGA(g *protogen.GeneratedFile) {
	g.P("var w1 ", g.QualifiedGoIdent(wireIdent("OnePass")))
	g.P("if x.cf.StartOnePass(&w1, sga) {")
	g.P("hdr, cp, zc := x.wireEnc1(&w1, 0, w1.Base(), 0, 0)")
	g.P("if w1.Finish(hdr, cp, zc) {")
	g.P("return nil")
	g.P("}")
	g.P("}")
}

// genOnePassHook emits m's wireEnc1.
func genOnePassHook(g *protogen.GeneratedFile, m *message) {
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	g.P("// wireEnc1 writes x at the cursors for the one-pass WireSerializeSGA and returns")
	g.P("// them advanced (nested messages at depth+1).")
	g.P(recv, "wireEnc1(w *", w("OnePass"), ", hdr, cp, zc, depth int) (int, int, int) {")
	emitFlatPresence(g, m)
	g.P("at, end := w.Begin1(hdr, b0, n)")
	g.P("if at < 0 {")
	g.P("return hdr, cp, zc")
	g.P("}")
	g.P("hdr = end")
	for _, f := range m.fields {
		if f.shape == shapeMessage {
			g.P("if v := x.", f.sf, ".Loaded(); v != nil && w.Nested(&v.cf, depth+1) {")
			emitOnePassNested(g, f, "v", "at", 1)
			g.P("at += ", w("EntrySize"))
			g.P("}")
			continue
		}
		emitOnePassValue(g, f, "x", "at")
	}
	g.P("w.Check(at, end)")
	g.P("return hdr, cp, zc")
	g.P("}")
	g.P()
}

// emitOnePassValue emits the entry of the scalar, bytes or string field f of
// the message held in v, at the entry offset held in at, and its advance.
func emitOnePassValue(g *protogen.GeneratedFile, f *field, v, at string) {
	g.P("if ", present(g, f, v), " {")
	switch f.shape {
	case shapeScalar:
		g.P("w.PutU64(", at, ", ", u64Of(g, f, v+"."+f.sf), ")")
	case shapeBytes:
		g.P("cp, zc = w.Bytes(", at, ", cp, zc, &", v, ".", f.sf, ")")
	case shapeString:
		g.P("cp, zc = w.String(", at, ", cp, zc, &", v, ".", f.sf, ")")
	}
	g.P(at, " += ", g.QualifiedGoIdent(wireIdent("EntrySize")))
	g.P("}")
}

// emitOnePassNested emits the header of the present nested message of field
// f held in v at the header cursor, and its {size, offset} entry at `at`,
// at nesting level lvl below the message whose wireEnc1 is emitted: a
// message inlineOf returns (a leaf, or the level above the leaves) inline,
// a leaf of one bytes field first by the inlined LeafFits and Leaf1Put;
// any other message by its wireEnc1.
func emitOnePassNested(g *protogen.GeneratedFile, f *field, v, at string, lvl int) {
	lm := inlineOf(f)
	if lm == nil {
		g.P("start := hdr")
		g.P("hdr, cp, zc = ", v, ".wireEnc1(w, hdr, cp, zc, depth+", lvl, ")")
		g.P("w.PutRef(", at, ", hdr-start, start)")
		return
	}
	one := bytesLeaf(lm)
	if one != nil {
		_, bit := bitOf(one)
		g.P("if w.LeafFits(", at, ", hdr, cp, &", v, ".", one.sf, ") {")
		g.P("hdr, cp = w.Leaf1Put(", at, ", hdr, cp, ", bit, ", &", v, ".", one.sf, ")")
		g.P("} else {")
	}
	lb0, ln, lat, lend := lvlName("lb0", lvl), lvlName("ln", lvl), lvlName("lat", lvl), lvlName("lend", lvl)
	g.P("start := hdr")
	g.P("var ", lb0, " uint32")
	g.P(ln, " := 0")
	for _, lf := range lm.fields {
		_, bit := bitOf(lf)
		g.P("if ", present(g, lf, v), " {")
		g.P(lb0, " |= ", bit)
		g.P(ln, "++")
		g.P("}")
	}
	g.P("if ", lat, ", ", lend, " := w.Begin1(hdr, ", lb0, ", ", ln, "); ", lat, " >= 0 {")
	g.P("hdr = ", lend)
	for _, lf := range lm.fields {
		if lf.shape == shapeMessage { // a leaf (inlineOf)
			nv := "v" + strconv.Itoa(lvl+1)
			g.P("if ", nv, " := ", v, ".", lf.sf, ".Loaded(); ", nv, " != nil && w.Nested(&", nv, ".cf, depth+", lvl+1, ") {")
			emitOnePassNested(g, lf, nv, lat, lvl+1)
			g.P(lat, " += ", g.QualifiedGoIdent(wireIdent("EntrySize")))
			g.P("}")
			continue
		}
		emitOnePassValue(g, lf, v, lat)
	}
	g.P("w.Check(", lat, ", ", lend, ")")
	g.P("}")
	g.P("w.PutRef(", at, ", hdr-start, start)")
	if one != nil {
		g.P("}")
	}
}
