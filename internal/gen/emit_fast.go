package gen

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The fast path (docs/CODEGEN.md, wire/fast.go): the hooks of a message
// whose bitmap spans at most wireimpl.FastMaxWords words compute the presence
// bitmap once, with every field's word and bit constant, and then visit the
// present fields with the runtime's positional primitives (Sizer.AddBytes,
// Encoder.Put*, Encoder.OpenMessage, Decoder.Ent/...At, MessageAt). Lists
// of strings, scalars and messages go through the same runtime calls as the
// per-field path (they are per-field calls that share the
// Sizer/Encoder/Decoder state); nested messages' hooks are called
// statically.

const bitsPkg = protogen.GoImportPath("math/bits")

// words is the number of bitmap words the message's widest field needs.
func (m *message) words() int {
	w := 0
	for _, f := range m.fields {
		w = max(w, (f.num-1)/32+1)
	}
	return w
}

// fast reports whether m gets the fast-path hooks.
func (m *message) fast() bool { return m.words() <= wireimpl.FastMaxWords }

// bitOf returns f's bitmap word index and bit mask literal.
func bitOf(f *field) (int, string) {
	return (f.num - 1) / 32, fmt.Sprintf("0x%x", uint32(1)<<uint((f.num-1)%32))
}

// fastDecoded reports whether WireDecode reads f positionally (the others
// use the per-field Decoder calls).
func fastDecoded(f *field) bool {
	switch f.shape {
	case shapeScalar, shapeBytes, shapeString, shapeMessage:
		return true
	case shapeList:
		return f.kind == protoreflect.BytesKind
	}
	return false
}

// eagerMessage reports whether the fast WireDecode decodes message field f
// in place (eagerly) rather than recording it for decoding on first access:
// when f's message is itself a plain fast-path message, without oneofs,
// maps or required fields (whose checks, run by its WireDecode, report
// errors at first access by contract) and with field numbers in the fast
// path's range. Its own nested messages follow the same rule.
func eagerMessage(f *field) bool {
	md := f.f.Message.Desc
	for i := range md.Oneofs().Len() {
		if !md.Oneofs().Get(i).IsSynthetic() {
			return false
		}
	}
	fs := md.Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		if fd.IsMap() || fd.Cardinality() == protoreflect.Required || int(fd.Number()) > 32*wireimpl.FastMaxWords {
			return false
		}
	}
	return true
}

// u64Of returns the expression of a scalar field's 64-bit entry value.
func u64Of(g *protogen.GeneratedFile, f *field, v string) string {
	switch scalars[f.kind].coder {
	case "Int32":
		return "uint64(int64(" + v + "))"
	case "Int64":
		return "uint64(" + v + ")"
	case "Uint32":
		return "uint64(" + v + ")"
	case "Uint64":
		return v
	case "Bool":
		return g.QualifiedGoIdent(wireIdent("BoolBits")) + "(" + v + ")"
	case "Float":
		return "uint64(" + g.QualifiedGoIdent(mathPkg.Ident("Float32bits")) + "(" + v + "))"
	}
	return g.QualifiedGoIdent(mathPkg.Ident("Float64bits")) + "(" + v + ")"
}

// fromU64 returns the expression converting an entry value u to f's Go type.
func fromU64(g *protogen.GeneratedFile, f *field, u string) string {
	var e string
	switch scalars[f.kind].coder {
	case "Int32":
		e = "int32(" + u + ")"
	case "Int64":
		e = "int64(" + u + ")"
	case "Uint32":
		e = "uint32(" + u + ")"
	case "Uint64":
		e = u
	case "Bool":
		e = u + " != 0"
	case "Float":
		e = g.QualifiedGoIdent(mathPkg.Ident("Float32frombits")) + "(uint32(" + u + "))"
	default:
		e = g.QualifiedGoIdent(mathPkg.Ident("Float64frombits")) + "(" + u + ")"
	}
	if f.kind == protoreflect.EnumKind {
		e = goType(g, f) + "(" + e + ")"
	}
	return e
}

func genFastHooks(g *protogen.GeneratedFile, m *message) {
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
	nw := max(m.words(), 1)
	bm := func(j int) string {
		if nw == 1 {
			return "b0"
		}
		return fmt.Sprintf("bm[%d]", j)
	}
	declare := func() {
		if nw == 1 {
			g.P("var b0 uint32")
		} else {
			g.P("var bm [", nw, "]uint32")
		}
	}
	set := func(f *field) {
		j, bit := bitOf(f)
		g.P(bm(j), " |= ", bit)
	}

	// WireSizes: presence bitmap and data sizes in one pass, fixed part last.
	g.P("// WireSizes implements wire.Msg (fast path: bitmap computed once).")
	g.P(recv, "WireSizes(s *", w("Sizer"), ") {")
	emitKeepSizesHook(g) // emit_unknown.go
	declare()
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar:
			g.P("if ", present(g, f, "x"), " {")
			set(f)
			g.P("}")
		case shapeBytes, shapeString:
			g.P("if ", present(g, f, "x"), " {")
			set(f)
			if f.shape == shapeBytes {
				g.P("s.AddBytes(&x.", f.sf, ")")
			} else {
				g.P("s.AddString(&x.", f.sf, ")")
			}
			g.P("}")
		case shapeMessage:
			g.P("if x.", f.sf, ".Present() {")
			g.P("if s.Enter() {")
			// A set (or already decoded) message is at hand; a pending
			// one is decoded by Get.
			g.P("v := x.", f.sf, ".Loaded()")
			g.P("var err error")
			g.P("if v == nil {")
			g.P("v, err = x.", f.sf, ".Get(s.Arena(), ", newFunc(g, f), ")")
			g.P("}")
			g.P("if err != nil {")
			g.P("s.Fail(err)")
			g.P("} else if s.Fresh(v.WireCore()) {")
			set(f)
			g.P("v.WireSizes(s)")
			g.P("}")
			g.P("}")
			g.P("s.Leave()")
			g.P("}")
		case shapeList:
			switch f.kind {
			case protoreflect.BytesKind:
				g.P("if s.SizedBytesList(&x.", f.sf, ") {")
				set(f)
				g.P("}")
			case protoreflect.StringKind:
				g.P("if s.SizedStringList(&x.", f.sf, ") {")
				set(f)
				g.P("}")
			case protoreflect.MessageKind:
				g.P("if l := &x.", f.sf, "; l.Len() != 0 {")
				g.P("if err := l.Load(s.Arena(), ", newFunc(g, f), "); err != nil {")
				g.P("s.Fail(err)")
				g.P("} else if s.Enter() {")
				set(f)
				g.P("s.AddEntries(l.Len())")
				g.P("for i := range l.Len() {")
				g.P("if v := l.At(i); s.Fresh(v.WireCore()) {")
				g.P("v.WireSizes(s)")
				g.P("}")
				g.P("}")
				g.P("}")
				g.P("s.Leave()")
				g.P("}")
			default:
				g.P("if ", w("SizedScalars"), "(s, &x.", f.sf, ") {")
				set(f)
				g.P("}")
			}
		}
	}
	if nw == 1 {
		g.P("s.Fixed1(&x.cf, b0)")
	} else {
		g.P("s.FixedBitmap(&x.cf, bm[:])")
	}
	g.P("}")
	g.P()

	// WireEncode: the bitmap again (cheaper than caching it), then the
	// entries in field order.
	g.P("// WireEncode implements wire.Msg (fast path: bitmap written once, entries in order).")
	g.P(recv, "WireEncode(e *", w("Encoder"), ") {")
	emitKeepEncodeHook(g) // emit_unknown.go
	declare()
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar, shapeBytes, shapeString:
			g.P("if ", present(g, f, "x"), " {")
		case shapeMessage:
			g.P("if x.", f.sf, ".Present() {")
		default:
			g.P("if x.", f.sf, ".Len() != 0 {")
		}
		set(f)
		g.P("}")
	}
	if nw == 1 {
		g.P("mk := e.Begin1(b0)")
	} else {
		g.P("mk := e.BeginBitmap(bm[:])")
	}
	for _, f := range m.fields {
		switch f.shape {
		case shapeScalar:
			g.P("if ", present(g, f, "x"), " {")
			g.P("e.PutU64(", u64Of(g, f, "x."+f.sf), ")")
			g.P("}")
		case shapeBytes:
			g.P("if ", present(g, f, "x"), " {")
			g.P("e.PutBytes(&x.", f.sf, ")")
			g.P("}")
		case shapeString:
			g.P("if ", present(g, f, "x"), " {")
			g.P("e.PutString(&x.", f.sf, ")")
			g.P("}")
		case shapeMessage:
			// The nested message's hooks are called statically; its header
			// follows at the header cursor.
			g.P("if v := x.", f.sf, ".Loaded(); v != nil {")
			g.P("if at, start := e.OpenMessage(); at >= 0 {")
			g.P("v.WireEncode(e)")
			g.P("e.CloseMessage(at, start)")
			g.P("}")
			g.P("}")
		case shapeList:
			if f.kind == protoreflect.BytesKind {
				g.P("if x.", f.sf, ".Len() != 0 {")
				g.P("e.PutBytesList(&x.", f.sf, ")")
				g.P("}")
			} else {
				emitListEncode(g, f)
			}
		}
	}
	g.P("e.End(mk)")
	g.P("}")
	g.P()

	// WireDecode: each bitmap word loaded once; an entry's position is the
	// popcount of the bits below its own.
	g.P("// WireDecode implements wire.Msg (fast path: entries located from the bitmap words).")
	g.P(recv, "WireDecode(d *", w("Decoder"), ") {")
	// Word j is loaded when it holds a positionally read field; the count
	// of present fields before word j (pj) likewise. The fields are then
	// read in field-number order (list and message regions must follow
	// each other in that order).
	need := map[int]bool{}
	last := -1
	for _, f := range m.fields {
		if fastDecoded(f) {
			j, _ := bitOf(f)
			need[j] = true
			last = max(last, j)
		}
	}
	word := func(j int) string {
		if need[j] {
			return fmt.Sprintf("b%d", j)
		}
		if j == 0 {
			return "d.Word0()"
		}
		return fmt.Sprintf("d.Word(%d)", j)
	}
	for j := 0; j <= last; j++ {
		if need[j] && j == 0 {
			g.P("b0 := d.Word0()")
		} else if need[j] {
			g.P("b", j, " := d.Word(", j, ")")
		}
	}
	for i := 0; i < last; i++ {
		pop := g.QualifiedGoIdent(bitsPkg.Ident("OnesCount32")) // imported only when used
		if i == 0 {
			g.P("q := ", pop, "(", word(0), ")")
		} else {
			g.P("q += ", pop, "(", word(i), ")")
		}
		if need[i+1] {
			g.P("p", i+1, " := q")
		}
		done := true
		for j := i + 2; j <= last; j++ {
			if need[j] {
				done = false
			}
		}
		if done {
			break
		}
	}
	for _, f := range m.fields {
		if !fastDecoded(f) { // lists of strings, scalars and messages
			emitListDecode(g, f)
			continue
		}
		j, bit := bitOf(f)
		pre := "0"
		if j > 0 {
			pre = fmt.Sprintf("p%d", j)
		}
		ent := fmt.Sprintf("d.Ent(b%d, %s, %s)", j, bit, pre)
		switch f.shape {
		case shapeScalar:
			if f.hasBit >= 0 {
				g.P("if at := ", ent, "; at >= 0 {")
				g.P("x.", f.sf, " = ", fromU64(g, f, "d.U64At(at)"))
				g.P("x.cf.SetHas(", f.hasBit, ")")
				g.P("} else {")
				g.P("x.", f.sf, " = ", zeroValue(f))
				g.P("}")
			} else {
				g.P("x.", f.sf, " = ", fromU64(g, f, "d.U64At("+ent+")"))
			}
		case shapeBytes, shapeString:
			method := "BytesAt"
			if f.shape == shapeString {
				method = "StringAt"
			}
			if f.hasBit >= 0 {
				g.P("if d.", method, "(", ent, ", ", f.num, ", &x.", f.sf, ") {")
				g.P("x.cf.SetHas(", f.hasBit, ")")
				g.P("}")
			} else {
				g.P("d.", method, "(", ent, ", ", f.num, ", &x.", f.sf, ")")
			}
		case shapeMessage:
			if !eagerMessage(f) {
				g.P(w("MessageAt"), "(d, ", ent, ", ", f.num, ", &x.", f.sf, ")")
				break
			}
			// Decoded in place, statically: no lazy record, no interface
			// call, the decoder's state saved and restored around it.
			g.P("x.", f.sf, ".Clear()")
			g.P("if off, size, ok := d.NestedAt(", ent, ", ", f.num, "); ok {")
			g.P("v := ", newCall(g, f, "d.Arena()"))
			g.P("mk, ok := d.Enter(v.WireCore(), off, size)")
			g.P("if ok {")
			g.P("v.WireDecode(d)")
			g.P("}")
			g.P("d.Leave(mk)")
			g.P("x.", f.sf, ".Set(v)")
			g.P("}")
		case shapeList:
			g.P("d.BytesListAt(", ent, ", ", f.num, ", &x.", f.sf, ")")
		}
	}
	emitDecodeCheck(g, m)
	g.P("}")
	g.P()
	if m.directDecode() {
		genDirectDecode(g, m) // emit_fast_decode.go
	}
}
