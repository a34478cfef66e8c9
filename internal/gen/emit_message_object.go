package gen

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The wire.Object entry points, the wire.Msg hooks, Equal and String of a message.

func genObject(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	recv := "func (x *" + name + ") "
	// The entry points call the message's own hooks statically (no
	// interface dispatch per message); see wire/fast.go.
	g.P("// Sizes implements wire.Object.")
	g.P(recv, "Sizes() ", wireIdent("Sizes"), " {")
	if m.directEncode() {
		genDirectSizesEntry(g) // emit_fast_encode.go
	}
	g.P("s := x.cf.StartSizes()")
	g.P("if s.Fresh(&x.cf) { // not walked after its arena's Reset: its memory may be reused")
	g.P("x.WireSizes(s)")
	g.P("}")
	g.P("return ", wireIdent("Sizes"), "(x.cf.FinishSizes(s))")
	g.P("}")
	g.P()
	g.P("// Serialize implements wire.Object.")
	g.P(recv, "Serialize(dst []byte, sink ", wireIdent("EntrySink"), ") error {")
	if m.directEncode() {
		genDirectSerializeEntry(g) // emit_fast_encode.go
	}
	g.P("e, err := ", wireIdent("StartSerialize"), "(x, &x.cf, dst, sink)")
	g.P("if e == nil {")
	g.P("return err")
	g.P("}")
	g.P("x.WireEncode(e)")
	g.P("return e.FinishSerialize(&x.cf)")
	g.P("}")
	g.P()
	if m.directDecode() { // emit_fast_decode.go
		genDirectEntry(g, m)
	} else {
		genDecoderEntry(g, m)
	}
	if m.directEncode() {
		genDirectSGA(g, m) // emit_fast_encode.go
	}
	genTypedSGA(g, m) // emit_fast_encode.go
	g.P("// WireCore implements wire.Msg.")
	g.P(recv, "WireCore() *", wireIdent("Core"), " { return &x.cf }")
	g.P()
}

// genDecoderEntry emits Decode and DecodeBytes through the Decoder.
func genDecoderEntry(g *protogen.GeneratedFile, m *message) {
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	g.P("// Decode decodes x from b zero-copy; the arena holds a reference on b until")
	g.P("// Reset (the caller still releases its own).")
	g.P(recv, "Decode(b ", memPkg.Ident("Buf"), ") error {")
	g.P("d, err := x.cf.StartDecode(b)")
	g.P("if d == nil {")
	g.P("return err")
	g.P("}")
	g.P("x.WireDecode(d)")
	g.P("return d.FinishDecode()")
	g.P("}")
	g.P()
	g.P("// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).")
	g.P(recv, "DecodeBytes(p []byte) error {")
	g.P("d, err := x.cf.StartDecodeBytes(p)")
	g.P("if d == nil {")
	g.P("return err")
	g.P("}")
	g.P("x.WireDecode(d)")
	g.P("return d.FinishDecode()")
	g.P("}")
	g.P()
	name := m.m.GoIdent.GoName
	g.P("// Decode", name, " makes a new ", name, " in a and decodes it from b zero-copy, as")
	g.P("// New", name, " then Decode do (the arena holds a reference on b until Reset; the")
	g.P("// caller still releases its own). It returns nil and Decode's error when b does not")
	g.P("// decode, and wire.ErrNoArena when a is nil.")
	g.P("func Decode", name, "(a *", wireIdent("Arena"), ", b ", memPkg.Ident("Buf"), ") (*", name, ", error) {")
	g.P("if a == nil {")
	g.P("return nil, ", wireIdent("ErrNoArena"))
	g.P("}")
	g.P("x := New", name, "(a)")
	g.P("if err := x.Decode(b); err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("return x, nil")
	g.P("}")
	g.P()
}

func genHooks(g *protogen.GeneratedFile, m *message) {
	if m.fast() {
		genFastHooks(g, m)
		if m.directEncode() {
			genDirectHooks(g, m) // emit_fast_encode.go
		}
		return
	}
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }

	g.P("// WireSizes implements wire.Msg.")
	g.P(recv, "WireSizes(s *", w("Sizer"), ") {")
	emitKeepSizesHook(g) // emit_unknown.go
	g.P("mk := s.Begin()")
	for _, f := range m.fields {
		emitSizerField(g, f, w)
	}
	g.P("s.End(&x.cf, mk)")
	g.P("}")
	g.P()

	g.P("// WireEncode implements wire.Msg.")
	g.P(recv, "WireEncode(e *", w("Encoder"), ") {")
	emitKeepEncodeHook(g) // emit_unknown.go
	g.P("mk := e.Begin(&x.cf)")
	for _, f := range m.fields {
		emitEncoderField(g, f, w)
	}
	g.P("e.End(mk)")
	g.P("}")
	g.P()

	g.P("// WireDecode implements wire.Msg.")
	g.P(recv, "WireDecode(d *", w("Decoder"), ") {")
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar:
			call := "d." + scalars[f.kind].coder + "(" + fmt.Sprint(f.num) + ")"
			if f.kind == protoreflect.EnumKind {
				call = goType(g, f) + "(" + call + ")"
			}
			g.P("x.", f.sf, " = ", call)
			if f.hasBit >= 0 {
				g.P("if d.Has(", f.num, ") {")
				g.P("x.cf.SetHas(", f.hasBit, ")")
				g.P("}")
			}
		case shapeBytes, shapeString:
			method := "Bytes"
			if f.shape == shapeString {
				method = "String"
			}
			if f.hasBit >= 0 {
				g.P("if d.", method, "(", f.num, ", &x.", f.sf, ") {")
				g.P("x.cf.SetHas(", f.hasBit, ")")
				g.P("}")
			} else {
				g.P("d.", method, "(", f.num, ", &x.", f.sf, ")")
			}
		case shapeMessage:
			g.P(w("DecodeMessage"), "(d, ", f.num, ", &x.", f.sf, ")")
		case shapeList:
			emitListDecode(g, f)
		}
	}
	emitDecodeCheck(g, m)
	g.P("}")
	g.P()
}

func genEqual(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	g.P("// Equal reports whether x and y hold the same fields (floats compared by bits;")
	g.P("// lists and nested messages are decoded as needed; a decode error means unequal).")
	g.P("func (x *", name, ") Equal(y *", name, ") bool {")
	g.P("if x == nil || y == nil {")
	g.P("return x == y")
	g.P("}")
	for _, f := range m.fields {
		has := ""
		if f.hasBit >= 0 {
			has = fmt.Sprintf("x.cf.Has(%d) != y.cf.Has(%d) || ", f.hasBit, f.hasBit)
		}
		switch f.shape {
		case shapeScalar:
			switch f.kind {
			case protoreflect.FloatKind:
				g.P("if ", has, "!", wireIdent("EqualFloat32"), "(x.", f.sf, ", y.", f.sf, ") {")
			case protoreflect.DoubleKind:
				g.P("if ", has, "!", wireIdent("EqualFloat64"), "(x.", f.sf, ", y.", f.sf, ") {")
			default:
				g.P("if ", has, "x.", f.sf, " != y.", f.sf, " {")
			}
		case shapeBytes, shapeString:
			g.P("if ", has, "!x.", f.sf, ".Equal(&y.", f.sf, ") {")
		case shapeMessage, shapeList:
			// Both sides are loaded (decoded) first; a load error is unequal.
			eq := "l.Equal(m)"
			if f.shape == shapeList && f.kind == protoreflect.MessageKind {
				eq = "l.Equal(m, (*" + g.QualifiedGoIdent(f.f.Message.GoIdent) + ").Equal)"
			}
			g.P("if l, m, ok := ", wireIdent("Loaded2"), "(x.Get", f.goName, ", y.Get", f.goName, "); !ok || !", eq, " {")
			g.P("return false")
			g.P("}")
			continue
		}
		g.P("return false")
		g.P("}")
	}
	g.P("return true")
	g.P("}")
	g.P()
}

func genString(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	g.P("// String returns a one-line text form of x (for debugging).")
	g.P("func (x *", name, ") String() string {")
	g.P("var t ", wireIdent("Text"))
	g.P("t.Begin(", fmt.Sprintf("%q", name), ")")
	for _, f := range m.fields {
		q := fmt.Sprintf("%q", f.name)
		v := "x." + f.sf
		switch f.shape {
		case shapeScalar:
			g.P("if ", present(g, f, "x"), " {")
			switch f.kind {
			case protoreflect.BoolKind:
				g.P("t.Bool(", q, ", ", v, ")")
			case protoreflect.FloatKind:
				g.P("t.Float(", q, ", float64(", v, "), 32)")
			case protoreflect.DoubleKind:
				g.P("t.Float(", q, ", ", v, ", 64)")
			case protoreflect.EnumKind:
				g.P("t.Enum(", q, ", int32(", v, "), ", v, ".String())")
			default:
				switch scalars[f.kind].goType {
				case "int64":
					g.P("t.Int(", q, ", ", v, ")")
				case "int32":
					g.P("t.Int(", q, ", int64(", v, "))")
				case "uint64":
					g.P("t.Uint(", q, ", ", v, ")")
				default:
					g.P("t.Uint(", q, ", uint64(", v, "))")
				}
			}
			g.P("}")
		case shapeBytes:
			g.P("if ", present(g, f, "x"), " {")
			g.P("t.Bytes(", q, ", &", v, ")")
			g.P("}")
		case shapeString:
			g.P("if ", present(g, f, "x"), " {")
			g.P("t.String(", q, ", &", v, ")")
			g.P("}")
		case shapeMessage:
			g.P("if x.Has", f.goName, "() {")
			g.P("if v, err := x.Get", f.goName, "(); err != nil {")
			g.P("t.Err(", q, ", err)")
			g.P("} else {")
			g.P("t.Message(", q, ", v)")
			g.P("}")
			g.P("}")
		case shapeList:
			g.P("if x.Has", f.goName, "() {")
			// The getter loads the list; the text is made from the
			// runtime's list it loaded (a map's list of entries).
			g.P("if _, err := x.Get", f.goName, "(); err != nil {")
			g.P("t.Err(", q, ", err)")
			g.P("} else {")
			switch f.kind {
			case protoreflect.BytesKind:
				g.P("t.BytesList(", q, ", &", v, ")")
			case protoreflect.StringKind:
				g.P("t.StringList(", q, ", &", v, ")")
			case protoreflect.MessageKind:
				g.P(wireIdent("TextMessages"), "(&t, ", q, ", &", v, ")")
			default:
				g.P(wireIdent("TextScalars"), "(&t, ", q, ", &", v, ")")
			}
			g.P("}")
			g.P("}")
		}
	}
	g.P("return t.End()")
	g.P("}")
	g.P()
}

// emitListDecode writes WireDecode's call for a list field (the per-field
// and the fast path share it; the fast path decodes bytes lists itself).
func emitListDecode(g *protogen.GeneratedFile, f *field) {
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	switch f.kind {
	case protoreflect.BytesKind:
		g.P("d.BytesList(", f.num, ", &x.", f.sf, ")")
	case protoreflect.StringKind:
		g.P("d.StringList(", f.num, ", &x.", f.sf, ")")
	case protoreflect.MessageKind:
		g.P(w("DecodeMessages"), "(d, ", f.num, ", &x.", f.sf, ")")
	default:
		g.P(w("DecodeScalars"), "(d, ", f.num, ", &x.", f.sf, ")")
	}
}

// emitListEncode writes WireEncode's call for a list field of strings,
// messages or scalars (the per-field and the fast path share it; bytes
// lists differ between them).
func emitListEncode(g *protogen.GeneratedFile, f *field) {
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	switch f.kind {
	case protoreflect.StringKind:
		g.P("e.StringList(", f.num, ", &x.", f.sf, ")")
	case protoreflect.MessageKind:
		g.P(w("EncodeMessages"), "(e, ", f.num, ", &x.", f.sf, ")")
	default:
		g.P(w("EncodeScalars"), "(e, ", f.num, ", &x.", f.sf, ")")
	}
}

// emitSizerField emits the per-field Sizer call for f (the slow WireSizes
// and its kept-fields variant in emit_unknown.go share it).
func emitSizerField(g *protogen.GeneratedFile, f *field, w func(string) string) {
	switch f.shape {
	case shapeScalar:
		g.P("s.Scalar(", f.num, ", ", present(g, f, "x"), ")")
	case shapeBytes:
		g.P("s.Bytes(", f.num, ", &x.", f.sf, ", ", present(g, f, "x"), ")")
	case shapeString:
		g.P("s.String(", f.num, ", &x.", f.sf, ", ", present(g, f, "x"), ")")
	case shapeMessage:
		g.P(w("SizeMessage"), "(s, ", f.num, ", &x.", f.sf, ", ", newFunc(g, f), ")")
	case shapeList:
		switch f.kind {
		case protoreflect.BytesKind:
			g.P("s.BytesList(", f.num, ", &x.", f.sf, ")")
		case protoreflect.StringKind:
			g.P("s.StringList(", f.num, ", &x.", f.sf, ")")
		case protoreflect.MessageKind:
			g.P(w("SizeMessages"), "(s, ", f.num, ", &x.", f.sf, ", ", newFunc(g, f), ")")
		default:
			g.P(w("SizeScalars"), "(s, ", f.num, ", &x.", f.sf, ")")
		}
	}
}

// emitEncoderField emits the per-field Encoder call for f (the slow
// WireEncode and its kept-fields variant in emit_unknown.go share it).
func emitEncoderField(g *protogen.GeneratedFile, f *field, w func(string) string) {
	switch f.shape {
	case shapeScalar:
		v := "x." + f.sf
		if f.kind == protoreflect.EnumKind {
			v = "int32(" + v + ")"
		}
		g.P("if ", present(g, f, "x"), " {")
		g.P("e.", scalars[f.kind].coder, "(", f.num, ", ", v, ")")
		g.P("}")
	case shapeBytes:
		g.P("if ", present(g, f, "x"), " {")
		g.P("e.Bytes(", f.num, ", &x.", f.sf, ")")
		g.P("}")
	case shapeString:
		g.P("if ", present(g, f, "x"), " {")
		g.P("e.String(", f.num, ", &x.", f.sf, ")")
		g.P("}")
	case shapeMessage:
		g.P(w("EncodeMessage"), "(e, ", f.num, ", &x.", f.sf, ")")
	case shapeList:
		if f.kind == protoreflect.BytesKind {
			g.P("e.BytesList(", f.num, ", &x.", f.sf, ")")
		} else {
			emitListEncode(g, f)
		}
	}
}
