package gen

import (
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The direct path (runtime/wireimpl/fast_encode.go, docs/CODEGEN.md): for a
// message whose fields are scalars, bytes, strings, lists of bytes or
// strings and nested messages of the same kind defined in the same file, all numbered
// 1..32, Sizes and Serialize call two recursive methods that keep every
// cursor in arguments and results:
//
//	func (x *T) wireSizeDirect(s *wireimpl.DirectSizer, hdr, cp, zc, ents, depth int) (int, int, int, int)
//	func (x *T) wireEncDirect(w *wireimpl.DirectWriter, hdr, cp, zc, depth int) (int, int, int)
//
// Every other message (and the cases the runtime refuses: no arena, a sink
// that is not an *SGA) keeps the Sizer/Encoder path of emit_fast.go.

// directField reports whether field f of a message in file path may be
// sent on the direct path (seen: messages already being checked, assumed
// eligible so that recursive types terminate).
func directField(f *protogen.Field, path string, seen map[protoreflect.FullName]bool) bool {
	d := f.Desc
	if d.Number() > 32 || d.IsMap() || d.Cardinality() == protoreflect.Required {
		return false
	}
	if o := f.Oneof; o != nil && !o.Desc.IsSynthetic() {
		return false
	}
	switch {
	case d.IsList():
		return d.Kind() == protoreflect.BytesKind || d.Kind() == protoreflect.StringKind
	case d.Kind() == protoreflect.MessageKind:
		return f.Message.Desc.ParentFile().Path() == path && directMessage(f.Message, seen)
	case d.Kind() == protoreflect.GroupKind:
		return false
	}
	return true
}

func directMessage(m *protogen.Message, seen map[protoreflect.FullName]bool) bool {
	if seen == nil {
		seen = map[protoreflect.FullName]bool{}
	}
	if seen[m.Desc.FullName()] {
		return true
	}
	seen[m.Desc.FullName()] = true
	path := m.Desc.ParentFile().Path()
	for _, f := range m.Fields {
		if !directField(f, path, seen) {
			return false
		}
	}
	return true
}

// directEncode reports whether m gets the direct Sizes and Serialize.
func (m *message) directEncode() bool { return directMessage(m.m, nil) }

// genDirectEntry emits the first lines of Sizes and Serialize that take
// the direct path.
func genDirectSizesEntry(g *protogen.GeneratedFile) {
	g.P("var ds ", g.QualifiedGoIdent(wireIdent("DirectSizer")))
	g.P("if x.cf.StartDirectSizes(&ds) {")
	g.P("hdr, cp, zc, ents := x.wireSizeDirect(&ds, 0, 0, 0, 0, 0)")
	g.P("return ", g.QualifiedGoIdent(wireIdent("Sizes")), "(x.cf.FinishDirectSizes(x, &ds, hdr, cp, zc, ents))")
	g.P("}")
}

func genDirectSerializeEntry(g *protogen.GeneratedFile) {
	g.P("var dw ", g.QualifiedGoIdent(wireIdent("DirectWriter")))
	g.P("if x.cf.StartDirect(&dw, dst, sink) {")
	g.P("cp, zc := dw.Cursors()")
	g.P("hdr, cp, zc := x.wireEncDirect(&dw, 0, cp, zc, 0)")
	g.P("return x.cf.FinishDirect(&dw, hdr, cp, zc)")
	g.P("}")
}

// genDirectSGA emits WireSerializeSGA (wireimpl.SGAWriter): the direct
// sizes and encode fused into the runtime's SGA, else Sizes then Serialize
// (runtime/wireimpl/fast_encode_sga.go).
func genDirectSGA(g *protogen.GeneratedFile, m *message) {
	g.P("// WireSerializeSGA implements wireimpl.SGAWriter (wire.SerializeSGA: sizes and")
	g.P("// encode fused on the direct path).")
	g.P("func (x *", m.m.GoIdent.GoName, ") WireSerializeSGA(sga *", wireIdent("SGA"), ") error {")
	if m.flatEncode() && m.onlyBytesList() {
		emitOnlySGA(g, m) // emit_fast_encode_flat.go
		return
	}
	if m.flatEncode() {
		emitFlatSGA(g, m) // emit_fast_encode_flat.go
		emitUnfusedTail(g)
		if m.writeFlat() {
			emitWriteFlat(g, m) // emit_fast_encode_flat.go
		}
		return
	}
	if m.onePass() {
		emitOnePassSGA(g) // emit_fast_encode_onepass.go
	}
	g.P("var ds ", g.QualifiedGoIdent(wireIdent("DirectSizer")))
	g.P("if x.cf.StartDirectSizes(&ds) {")
	g.P("hdr, cp, zc, ents := x.wireSizeDirect(&ds, 0, 0, 0, 0, 0)")
	if m.onePass() {
		g.P("x.cf.OnePassBase(hdr)")
	}
	g.P("var dw ", g.QualifiedGoIdent(wireIdent("DirectWriter")))
	g.P("if x.cf.StartDirectSGA(&dw, &ds, sga, hdr, cp, zc, ents) ||")
	g.P("x.cf.StartDirectSGAGrow(&dw, &ds, sga, hdr, cp, zc, ents) {")
	g.P("hdr, cp, zc = x.wireEncDirect(&dw, 0, hdr, hdr+cp, 0)")
	g.P("return dw.FinishSGA(hdr, cp, zc)")
	g.P("}")
	g.P("}")
	emitUnfusedTail(g)
}

// emitUnfusedTail ends a WireSerializeSGA-shaped function with the
// unfused path (Sizes, then Serialize into the SGA's head) and its
// closing brace.
func emitUnfusedTail(g *protogen.GeneratedFile) {
	g.P("sz := x.Sizes()")
	g.P("sga.Reset(sz.Header + sz.Copied)")
	g.P("return x.Serialize(sga.Head, sga)")
	g.P("}")
	g.P()
}

// genTypedSGA emits SerializeSGA, wire.SerializeSGA for a caller that
// knows the message's type: on the direct path it calls WireSerializeSGA
// (inlined, so the caller calls it directly), without wire.SerializeSGA's
// interface assertion (docs/CODEGEN.md, "Typed SerializeSGA").
func genTypedSGA(g *protogen.GeneratedFile, m *message) {
	g.P("// SerializeSGA is wire.SerializeSGA(x, sga) without its interface assertion:")
	g.P("// the same bytes, entries and errors.")
	g.P("func (x *", m.m.GoIdent.GoName, ") SerializeSGA(sga *", wirePkg.Ident("SGA"), ") error {")
	if m.directEncode() {
		g.P("return x.WireSerializeSGA((*", wireIdent("SGA"), ")(sga))")
	} else {
		g.P("return ", wirePkg.Ident("SerializeSGA"), "(x, sga)")
	}
	g.P("}")
	g.P()
}

// leafOf returns the message of field f when it is a leaf of the direct
// path (in the parent's package, its fields scalars, bytes and strings
// numbered 1..32), whose sizes, encode and decode the parent's direct
// methods emit inline instead of calling them; nil otherwise. Only called
// for a parent on the direct path, so the leaf is on it too.
func leafOf(f *field) *message { return nestedOf(f, false) }

// inlineOf returns the message of field f when the parent's direct sizes
// and encode emit it inline instead of calling its methods: a leaf
// (leafOf), or a message in the parent's package whose fields, numbered
// 1..32, are scalars, bytes, strings and leaves (the level above the
// leaves, such as a binary tree's last inner level: its leaves are then
// inline too); nil otherwise. Only called for a parent on the direct
// path, so the message is on it too.
func inlineOf(f *field) *message {
	if lm := leafOf(f); lm != nil {
		return lm
	}
	return nestedOf(f, true)
}

// nestedOf returns the message of field f when it is in the parent's
// package and its fields, numbered 1..32, are scalars, bytes, strings and,
// with leaves, leaf messages (leafOf); nil otherwise.
func nestedOf(f *field, leaves bool) *message {
	if f.shape != shapeMessage || f.f.Message.GoIdent.GoImportPath != f.f.Parent.GoIdent.GoImportPath {
		return nil
	}
	lm, err := newMessage(f.f.Message)
	if err != nil {
		return nil
	}
	for _, lf := range lm.fields {
		switch {
		case lf.num > directMax:
			return nil
		case lf.shape == shapeScalar, lf.shape == shapeBytes, lf.shape == shapeString:
		case leaves && lf.shape == shapeMessage && leafOf(lf) != nil:
		default:
			return nil
		}
	}
	return lm
}

// bytesLeaf returns the field of the leaf message lm (see leafOf) when it
// is its only field and a bytes field without explicit presence (present
// exactly when not empty, which LeafCopied1 checks; encoded by
// DirectWriter.LeafCopied1 when its value is copied); nil otherwise.
func bytesLeaf(lm *message) *field {
	if lm == nil || len(lm.fields) != 1 || lm.fields[0].shape != shapeBytes || lm.fields[0].hasBit >= 0 {
		return nil
	}
	return lm.fields[0]
}

// lvlName returns the name of an inline level's variable: name at level 1
// (a field of the message whose method is emitted), name and the level
// below it.
func lvlName(name string, lvl int) string {
	if lvl == 1 {
		return name
	}
	return name + strconv.Itoa(lvl)
}

// emitSizeInline emits the sizes of the message lm (see inlineOf) held in
// v, at nesting level lvl below the message whose method is emitted (the
// body of lm's wireSizeDirect), added to the cursors hdr, cp, zc and ents.
func emitSizeInline(g *protogen.GeneratedFile, lm *message, v string, lvl int) {
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	ln := lvlName("ln", lvl)
	g.P(ln, " := 0")
	for _, f := range lm.fields {
		if f.shape == shapeMessage { // a leaf (inlineOf)
			nv := "v" + strconv.Itoa(lvl+1)
			g.P("if ", v, ".", f.sf, ".Present() {")
			g.P(nv, " := ", v, ".", f.sf, ".Loaded()")
			g.P("var err error")
			g.P("if ", nv, " == nil {")
			g.P(nv, ", err = ", v, ".", f.sf, ".Get(s.Arena(), ", newFunc(g, f), ")")
			g.P("}")
			g.P("if err != nil {")
			g.P("s.Fail(err)")
			g.P("} else if s.Nested(", nv, ".WireCore(), depth+", lvl+1, ") {")
			g.P(ln, "++")
			emitSizeInline(g, leafOf(f), nv, lvl+1)
			g.P("}")
			g.P("}")
			continue
		}
		g.P("if ", present(g, f, v), " {")
		g.P(ln, "++")
		if f.shape != shapeScalar {
			g.P("cp, zc, ents = ", v, ".", f.sf, ".SizeDirect(cp, zc, ents)")
		}
		g.P("}")
	}
	g.P("hdr += ", w("Fixed1"), "(", ln, ")")
}

// emitEncNested emits the encode of the present nested message of field f
// held in v at the header cursor, and its {size, offset} entry at `at`:
// inline when lm (inlineOf(f)) is not nil, after the one-call
// LeafCopied1 for a leaf of one bytes field; else a call of its
// wireEncDirect. lvl is the message's nesting level below the one whose
// method is emitted.
func emitEncNested(g *protogen.GeneratedFile, f *field, lm *message, v, at string, lvl int) {
	one := bytesLeaf(lm)
	if one != nil {
		// The common leaf (one copied bytes value) in one call that
		// writes the leaf and the parent's entry.
		_, bit := bitOf(one)
		g.P("if h, c, ok := w.LeafCopied1(", at, ", hdr, cp, ", bit, ", &", v, ".", one.sf, "); ok {")
		g.P("hdr, cp = h, c")
		g.P("} else {")
	}
	g.P("start := hdr")
	if lm != nil {
		emitEncInline(g, lm, v, lvl)
	} else {
		g.P("hdr, cp, zc = ", v, ".wireEncDirect(w, hdr, cp, zc, depth+", lvl, ")")
	}
	g.P("w.PutRef(", at, ", hdr-start, start)")
	if one != nil {
		g.P("}")
	}
}

// emitEncInline emits the encode of the message lm (see inlineOf) held in
// v at the cursors hdr, cp and zc (the body of lm's wireEncDirect), at
// nesting level lvl below the message whose method is emitted.
func emitEncInline(g *protogen.GeneratedFile, lm *message, v string, lvl int) {
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	lb0, ln, lat, lend := lvlName("lb0", lvl), lvlName("ln", lvl), lvlName("lat", lvl), lvlName("lend", lvl)
	g.P("var ", lb0, " uint32")
	g.P(ln, " := 0")
	for _, f := range lm.fields {
		_, bit := bitOf(f)
		g.P("if ", present(g, f, v), " {")
		g.P(lb0, " |= ", bit)
		g.P(ln, "++")
		g.P("}")
	}
	g.P("if ", lat, ", ", lend, " := w.Begin1(hdr, ", lb0, ", ", ln, "); ", lat, " >= 0 {")
	g.P("hdr = ", lend)
	for _, f := range lm.fields {
		if f.shape == shapeMessage { // a leaf (inlineOf)
			nv := "v" + strconv.Itoa(lvl+1)
			g.P("if ", nv, " := ", v, ".", f.sf, ".Loaded(); ", nv, " != nil && w.Nested(depth+", lvl+1, ") {")
			emitEncNested(g, f, leafOf(f), nv, lat, lvl+1)
			g.P(lat, " += ", w("EntrySize"))
			g.P("}")
			continue
		}
		g.P("if ", present(g, f, v), " {")
		switch f.shape {
		case shapeScalar:
			g.P("w.PutU64(", lat, ", ", u64Of(g, f, v+"."+f.sf), ")")
		case shapeBytes:
			g.P("if c, ok := w.TryCopied(", lat, ", cp, &", v, ".", f.sf, "); ok {")
			g.P("cp = c")
			g.P("} else if z, ok := w.TryZeroCopy(", lat, ", zc, &", v, ".", f.sf, "); ok {")
			g.P("zc = z")
			g.P("} else {")
			g.P("cp, zc = w.PutBytes(", lat, ", cp, zc, &", v, ".", f.sf, ")")
			g.P("}")
		case shapeString:
			g.P("cp, zc = w.PutString(", lat, ", cp, zc, &", v, ".", f.sf, ")")
		}
		g.P(lat, " += ", w("EntrySize"))
		g.P("}")
	}
	g.P("w.Check(", lat, ", ", lend, ")")
	g.P("}")
}

func genDirectHooks(g *protogen.GeneratedFile, m *message) {
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }

	// wireSizeDirect: the data of the present fields, the nested messages'
	// parts, then the fixed part from the count of present fields.
	g.P("// wireSizeDirect adds x to the sizes cursors (direct path; nested messages at depth+1).")
	g.P(recv, "wireSizeDirect(s *", w("DirectSizer"), ", hdr, cp, zc, ents, depth int) (int, int, int, int) {")
	g.P("n := 0")
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar:
			g.P("if ", present(g, f, "x"), " {")
			g.P("n++")
			g.P("}")
		case shapeBytes, shapeString:
			g.P("if ", present(g, f, "x"), " {")
			g.P("n++")
			g.P("cp, zc, ents = x.", f.sf, ".SizeDirect(cp, zc, ents)")
			g.P("}")
		case shapeMessage:
			g.P("if x.", f.sf, ".Present() {")
			g.P("v := x.", f.sf, ".Loaded()")
			g.P("var err error")
			g.P("if v == nil {")
			g.P("v, err = x.", f.sf, ".Get(s.Arena(), ", newFunc(g, f), ")")
			g.P("}")
			g.P("if err != nil {")
			g.P("s.Fail(err)")
			g.P("} else if s.Nested(v.WireCore(), depth+1) {")
			g.P("n++")
			if lm := inlineOf(f); lm != nil {
				emitSizeInline(g, lm, "v", 1)
			} else {
				g.P("hdr, cp, zc, ents = v.wireSizeDirect(s, hdr, cp, zc, ents, depth+1)")
			}
			g.P("}")
			g.P("}")
		case shapeList: // bytes or strings
			g.P("if h, c, z, e, ok := x.", f.sf, ".SizeDirect(s, hdr, cp, zc, ents); ok {")
			g.P("n++")
			g.P("hdr, cp, zc, ents = h, c, z, e")
			g.P("}")
		}
	}
	g.P("return hdr + ", w("Fixed1"), "(n), cp, zc, ents")
	g.P("}")
	g.P()

	// wireEncDirect: the bitmap, then the entries in field order at a
	// local offset; lists and nested messages follow at the header cursor.
	g.P("// wireEncDirect writes x at the cursors and returns them advanced (direct path).")
	g.P(recv, "wireEncDirect(w *", w("DirectWriter"), ", hdr, cp, zc, depth int) (int, int, int) {")
	g.P("var b0 uint32")
	g.P("n := 0")
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar, shapeBytes, shapeString:
			g.P("if ", present(g, f, "x"), " {")
		case shapeMessage:
			g.P("if x.", f.sf, ".Present() {")
		default:
			g.P("if x.", f.sf, ".Len() != 0 {")
		}
		_, bit := bitOf(f)
		g.P("b0 |= ", bit)
		g.P("n++")
		g.P("}")
	}
	g.P("at, end := w.Begin1(hdr, b0, n)")
	g.P("if at < 0 {")
	g.P("return hdr, cp, zc")
	g.P("}")
	g.P("hdr = end")
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar:
			g.P("if ", present(g, f, "x"), " {")
			g.P("w.PutU64(at, ", u64Of(g, f, "x."+f.sf), ")")
			g.P("at += ", w("EntrySize"))
			g.P("}")
		case shapeBytes, shapeString:
			method := "PutBytes"
			if f.shape == shapeString {
				method = "PutString"
			}
			g.P("if ", present(g, f, "x"), " {")
			if f.shape == shapeBytes {
				g.P("if c, ok := w.TryCopied(at, cp, &x.", f.sf, "); ok {")
				g.P("cp = c")
				g.P("} else if z, ok := w.TryZeroCopy(at, zc, &x.", f.sf, "); ok {")
				g.P("zc = z")
				g.P("} else {")
				g.P("cp, zc = w.", method, "(at, cp, zc, &x.", f.sf, ")")
				g.P("}")
			} else {
				g.P("cp, zc = w.", method, "(at, cp, zc, &x.", f.sf, ")")
			}
			g.P("at += ", w("EntrySize"))
			g.P("}")
		case shapeMessage:
			g.P("if v := x.", f.sf, ".Loaded(); v != nil && w.Nested(depth+1) {")
			emitEncNested(g, f, inlineOf(f), "v", "at", 1)
			g.P("at += ", w("EntrySize"))
			g.P("}")
		case shapeList:
			g.P("if x.", f.sf, ".Len() != 0 {")
			method := "PutBytesList"
			if f.kind == protoreflect.StringKind {
				method = "PutStringList"
			}
			g.P("hdr, cp, zc = w.", method, "(at, hdr, cp, zc, &x.", f.sf, ")")
			g.P("at += ", w("EntrySize"))
			g.P("}")
		}
	}
	g.P("w.Check(at, end)")
	g.P("return hdr, cp, zc")
	g.P("}")
	g.P()
	if m.onePass() {
		genOnePassHook(g, m) // emit_fast_encode_onepass.go
	}
}
