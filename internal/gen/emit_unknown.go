package gen

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Kept unknown fields and the typed header form (docs/CODEGEN.md "Unknown
// fields", runtime/wireimpl/unknown_keep*.go). Every message gets:
//   - at the end of WireDecode: when the header is typed, the fields the
//     schema lacks are recorded (Decoder.KeepUnknown with the static
//     table of the schema's fields and kinds);
//   - at the top of WireSizes and WireEncode: one check diverting a message
//     with kept fields (or written typed) to wireSizesKept / wireEncodeKept,
//     the per-field calls with the kept fields merged in by number.

// knownVar is the name of m's table of known fields.
func (m *message) knownVar() string { return lowerFirst(m.m.GoIdent.GoName) + "KnownFields" }

// kindOf is the typed form's kind of f, as a runtime constant name.
func kindOf(f *field) string {
	switch f.shape {
	case shapeScalar:
		return "KindScalar"
	case shapeBytes, shapeString:
		return "KindBytes"
	case shapeMessage:
		return "KindMessage"
	}
	switch f.kind {
	case protoreflect.BytesKind, protoreflect.StringKind:
		return "KindBytesList"
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "KindMessageList"
	case protoreflect.BoolKind:
		return "KindList1"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind, protoreflect.DoubleKind:
		return "KindList8"
	}
	return "KindList4"
}

// emitKeepSizesHook is the first statement of WireSizes.
func emitKeepSizesHook(g *protogen.GeneratedFile) {
	g.P("if s.Keep(&x.cf) {")
	g.P("x.wireSizesKept(s)")
	g.P("return")
	g.P("}")
}

// emitKeepEncodeHook is the first statement of WireEncode.
func emitKeepEncodeHook(g *protogen.GeneratedFile) {
	g.P("if e.Keep(&x.cf) {")
	g.P("x.wireEncodeKept(e)")
	g.P("return")
	g.P("}")
}

// emitKeepDecodeHook ends WireDecode.
func emitKeepDecodeHook(g *protogen.GeneratedFile, m *message) {
	g.P("if d.Typed() {")
	g.P("d.KeepUnknown(&x.cf, ", m.knownVar(), ")")
	g.P("}")
}

// genKeptHooks emits m's table of known fields and its typed-form hooks.
func genKeptHooks(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	recv := "func (x *" + name + ") "
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }

	g.P("// ", m.knownVar(), " are the fields of ", name, " and their kinds in the typed")
	g.P("// header form, by number (Decoder.KeepUnknown keeps the others).")
	g.P("var ", m.knownVar(), " = []", w("KnownField"), "{")
	for _, f := range m.fields {
		g.P("{Num: ", f.num, ", Kind: ", w(kindOf(f)), "},")
	}
	g.P("}")
	g.P()

	g.P("// wireSizesKept is WireSizes in the typed form, kept unknown fields merged in.")
	g.P(recv, "wireSizesKept(s *", w("Sizer"), ") {")
	g.P("mk := s.BeginKept(&x.cf)")
	for _, f := range m.fields {
		g.P("s.KeptBefore(&mk, ", f.num, ")")
		emitSizerField(g, f, w)
	}
	g.P("s.EndKept(&x.cf, &mk)")
	g.P("}")
	g.P()

	g.P("// wireEncodeKept is WireEncode in the typed form, kept unknown fields merged in.")
	g.P(recv, "wireEncodeKept(e *", w("Encoder"), ") {")
	g.P("mk := e.BeginKept(&x.cf)")
	for _, f := range m.fields {
		g.P("e.KeptBefore(&mk, ", f.num, ")")
		emitEncoderField(g, f, w)
		g.P("e.Known(&mk, ", w(kindOf(f)), ")")
	}
	g.P("e.EndKept(&mk)")
	g.P("}")
	g.P()
}
