package gen

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The flat fused path (runtime/wireimpl/fast_encode_flat.go,
// docs/CODEGEN.md): a message on the direct path without nested message
// fields gets a WireSerializeSGA that sizes and writes it in one function,
// with the cursors, the bitmap and the head buffer in locals and no call
// but the lists' PutFlat (none for a bytes list of one copied value) and
// the copies'.

// flatEncode reports whether m (on the direct path) has no nested message
// field, so that its WireSerializeSGA is the flat one.
func (m *message) flatEncode() bool {
	if !m.directEncode() {
		return false
	}
	for _, f := range m.fields {
		if f.shape == shapeMessage {
			return false
		}
	}
	return true
}

// onlyBytesList reports whether m's only field is a bytes list (not a map,
// not in a oneof) numbered 1..32: its WireSerializeSGA calls
// BytesList.SerializeOnlyOr, and its Decode<Msg> Source.DecodeOnly
// (runtime/wireimpl/fast_encode_only.go, fast_decode_only.go).
func (m *message) onlyBytesList() bool {
	if len(m.fields) != 1 {
		return false
	}
	f := m.fields[0]
	return f.shape == shapeList && f.kind == protoreflect.BytesKind && f.num <= 32 && !f.cx.isMap && f.cx.oneof == nil
}

// emitOnlySGA emits the body of WireSerializeSGA of a message whose only
// field is a bytes list (onlyBytesList), after its signature: one call of
// BytesList.SerializeOnlyOr, which sizes and writes the message on the
// flat path, else takes the message's WireSerializeSGAUnfused (emitted
// here: Sizes, then Serialize). WireSerializeSGA is then small enough to
// be inlined, so that SerializeSGA costs one call. Then the message's
// WireWriteFlat, as for every flat message.
func emitOnlySGA(g *protogen.GeneratedFile, m *message) {
	f := m.fields[0]
	_, bit := bitOf(f)
	name := m.m.GoIdent.GoName
	g.P("return x.", f.sf, ".SerializeOnlyOr(&x.cf, ", bit, ", sga, x)")
	g.P("}")
	g.P()
	g.P("// WireSerializeSGAUnfused implements wireimpl.SGAUnfused: WireSerializeSGA's")
	g.P("// unfused path (Sizes, then Serialize).")
	g.P("func (x *", name, ") WireSerializeSGAUnfused(sga *", wireIdent("SGA"), ") error {")
	emitUnfusedTail(g) // emit_fast_encode.go
	if m.writeFlat() {
		emitWriteFlat(g, m)
	}
}

// emitFlatSGA emits the flat path of m's WireSerializeSGA: the sizes, then
// the bitmap and the entries in field order, the lists' element entries
// after the fixed part, and a final check of the cursors. It falls through
// (to the unfused path the caller emits) when the path does not apply.
func emitFlatSGA(g *protogen.GeneratedFile, m *message) {
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	lists, values := false, false
	for _, f := range m.fields {
		switch f.shape {
		case shapeList:
			lists = true
		case shapeBytes, shapeString:
			values = true
		}
	}
	g.P("if x.cf.DirectOK() {")
	g.P("var b0 uint32")
	g.P("n, hdr, cpn, zcn, ents := 0, 0, 0, 0, 0")
	if lists {
		g.P("loaded := true")
		for _, f := range m.fields {
			if f.shape == shapeList && f.kind == protoreflect.BytesKind {
				g.P("one", f.sf, " := false // one copied value (OneCopied)")
			}
		}
	}
	for _, f := range m.fields {
		_, bit := bitOf(f)
		switch f.shape {
		case shapeScalar:
			g.P("if ", present(g, f, "x"), " {")
			g.P("b0 |= ", bit)
			g.P("n++")
			g.P("}")
		case shapeBytes, shapeString:
			g.P("if ", present(g, f, "x"), " {")
			g.P("b0 |= ", bit)
			g.P("n++")
			g.P("cpn, zcn, ents = x.", f.sf, ".SizeDirect(cpn, zcn, ents)")
			g.P("}")
		case shapeList: // bytes or strings (directField)
			if f.kind == protoreflect.BytesKind { // one copied value: no loop, no call
				g.P("if k, ok := x.", f.sf, ".OneCopied(); ok {")
				g.P("one", f.sf, " = true")
				g.P("b0 |= ", bit)
				g.P("n++")
				g.P("hdr += ", w("EntrySize"))
				g.P("cpn += k")
				g.P("} else if h, c, z, e, ok := x.", f.sf, ".SizeFlat(x.cf.Arena(), hdr, cpn, zcn, ents); !ok {")
			} else {
				g.P("if h, c, z, e, ok := x.", f.sf, ".SizeFlat(x.cf.Arena(), hdr, cpn, zcn, ents); !ok {")
			}
			g.P("loaded = false")
			g.P("} else if h != hdr {")
			g.P("b0 |= ", bit)
			g.P("n++")
			g.P("hdr, cpn, zcn, ents = h, c, z, e")
			g.P("}")
		}
	}
	if lists {
		g.P("if loaded {")
	}
	g.P("hdr += ", w("Fixed1"), "(n)")
	g.P("head := hdr + cpn")
	g.P("if uint64(head)+uint64(zcn) <= ", w("MaxMessageSize"), " {")
	g.P("if !sga.StartFlat(head, ents) {")
	g.P("sga.GrowFlat(head, ents)")
	g.P("}")
	g.P("dst := sga.Head")
	g.P("at := ", w("PutWord1"), "(dst, b0, n)")
	g.P("cp, zc := hdr, head")
	if values || lists {
		g.P("bad := false")
	}
	if lists {
		g.P("lh := at + ", w("EntrySize"), "*n")
	}
	for i, f := range m.fields {
		_, bit := bitOf(f)
		g.P("if b0&", bit, " != 0 {")
		switch f.shape {
		case shapeScalar:
			g.P(w("PutEntry"), "(dst, at, ", u64Of(g, f, "x."+f.sf), ")")
		case shapeBytes, shapeString:
			zcf := "ZeroCopyFlat"
			if f.shape == shapeString {
				zcf = "ZeroCopyFlatString"
			}
			g.P("if c, ok := x.", f.sf, ".CopyFlat(dst, at, cp); ok {")
			g.P("cp = c")
			g.P("} else if z, ok := sga.", zcf, "(dst, at, zc, &x.", f.sf, "); ok {")
			g.P("zc = z")
			g.P("} else {")
			g.P("bad = true")
			g.P("}")
		case shapeList:
			// A list of one copied value: PutOneCopied (inlined) writes the
			// value sized. Any other list: PutFlat, one walk writing each
			// element's entry and its value or SGA entry.
			if f.kind == protoreflect.BytesKind {
				g.P("if one", f.sf, " {")
				g.P("if c, ok := x.", f.sf, ".PutOneCopied(dst, at, lh, hdr, cp); ok {")
				g.P("lh += ", w("EntrySize"))
				g.P("cp = c")
				g.P("} else {")
				g.P("bad = true")
				g.P("}")
				g.P("} else if l, c, z, ok := x.", f.sf, ".PutFlat(dst, at, lh, hdr, cp, zc, sga); ok {")
			} else {
				g.P("if l, c, z, ok := x.", f.sf, ".PutFlat(dst, at, lh, hdr, cp, zc, sga); ok {")
			}
			g.P("lh, cp, zc = l, c, z")
			g.P("} else {")
			g.P("bad = true")
			g.P("}")
		}
		if !lists || i < len(m.fields)-1 { // with lists the end check is on lh
			g.P("at += ", w("EntrySize"))
		}
		g.P("}")
	}
	end := "at"
	ok := ""
	if lists {
		end = "lh"
	}
	if values || lists {
		ok = "!bad && "
	}
	g.P("if ", ok, "sga.FlatDone(", end, ", hdr, cp, head, zc, head+zcn, ents) {")
	g.P("return nil")
	g.P("}")
	g.P("return ", w("ErrModified"))
	g.P("}")
	if lists {
		g.P("}")
	}
	g.P("}")
}

// writeFlat reports whether m (flat) gets WireWriteFlat
// (wireimpl.FlatWriter): its fields are all scalars, bytes or strings.
func (m *message) writeFlat() bool {
	if !m.flatEncode() {
		return false
	}
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar, shapeBytes, shapeString:
		default:
			return false
		}
	}
	return true
}

// emitWriteFlat emits m's WireWriteFlat (wireimpl.FlatWriter): presence
// evaluated once into the bitmap, the header written, then each present
// field's entry and copied value in field order, straight into dst; a
// zero-copy value or a value that does not fit declines (-1). The bytes
// are those of the flat path's head (emitFlatSGA) when it has no entry.
func emitWriteFlat(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	g.P("// WireWriteFlat implements ", wireIdent("FlatWriter"), ": x written at the start of dst")
	g.P("// when it holds no zero-copy value and fits (the bytes WireSerializeSGA puts in its")
	g.P("// head); -1 otherwise, and the caller calls WireSerializeSGA.")
	g.P("func (x *", name, ") WireWriteFlat(dst []byte) int {")
	emitWriteFlatBody(g, m)
	g.P("}")
	g.P()
}

// emitWriteFlatBody emits the body of m's WireWriteFlat, x the message
// and dst the destination (also the service stubs' WriteRequest and
// WriteResponse for a message of their package: no second call).
func emitWriteFlatBody(g *protogen.GeneratedFile, m *message) {
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	g.P("if !x.cf.DirectOK() {")
	g.P("return -1")
	g.P("}")
	emitFlatPresence(g, m)
	g.P("at, cp := ", w("StartWriteFlat"), "(dst, b0, n)")
	g.P("if at < 0 {")
	g.P("return -1")
	g.P("}")
	g.P("hdr := cp")
	for _, f := range m.fields {
		_, bit := bitOf(f)
		g.P("if b0&", bit, " != 0 {")
		switch f.shape {
		case shapeScalar:
			g.P(w("PutEntry"), "(dst, at, ", u64Of(g, f, "x."+f.sf), ")")
		case shapeBytes, shapeString:
			g.P("c, ok := x.", f.sf, ".CopyFlat(dst, at, cp)")
			g.P("if !ok {")
			g.P("return -1")
			g.P("}")
			g.P("cp = c")
		}
		g.P("at += ", w("EntrySize"))
		g.P("}")
	}
	g.P("return ", w("EndWriteFlat"), "(at, hdr, cp)")
}

// emitDecodeOnly emits the rest of Decode<Msg> (after the input is
// recorded in src) for a message whose only field is a bytes list with
// inline elements: New's body without the zeroing of the list, which
// Source.DecodeOnly writes whole, then DecodeOnly (Head1 and BytesListEnt
// in one call), DecodeSlow for another header form.
func emitDecodeOnly(g *protogen.GeneratedFile, m *message) {
	f := m.fields[0]
	_, bit := bitOf(f)
	g.P("x := ", m.typeVar, ".TryNewRaw(ra)")
	g.P("if x == nil {")
	g.P("x = ", m.typeVar, ".NewSlow(ra)")
	g.P("}")
	g.P("x.cf.InitNew(ra) // x.", f.sf, ": written whole by DecodeOnly")
	g.P("if ok, err := src.DecodeOnly(", f.num, ", ", bit, ", &x.", f.sf, "); !ok {")
	g.P("if err := src.DecodeSlow(x, 0, src.Len(), 0); err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("} else if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("return x, nil")
	g.P("}")
	g.P()
}

// emitFlatPresence emits the presence of m's fields (all scalars, bytes or
// strings) evaluated once: b0, the header bitmap, and n, the count of
// present fields (WireWriteFlat's body and the one-pass hook).
func emitFlatPresence(g *protogen.GeneratedFile, m *message) {
	g.P("var b0 uint32")
	g.P("n := 0")
	for _, f := range m.fields {
		_, bit := bitOf(f)
		g.P("if ", present(g, f, "x"), " {")
		g.P("b0 |= ", bit)
		g.P("n++")
		g.P("}")
	}
}
