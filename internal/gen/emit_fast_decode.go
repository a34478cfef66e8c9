package gen

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The direct decode (docs/CODEGEN.md, runtime/wireimpl/fast_decode.go): a
// message whose fields all have numbers 1..32 and are scalars, bytes,
// strings, lists of bytes or strings, or nested messages of the same kind
// gets a WireDecodeAt method that parses its header with the cursors in
// local variables and reads each present entry from the input directly;
// its Decode and DecodeBytes call it without setting up a Decoder. Any
// other header form (several bitmap words, sparse, typed) is handed to the
// Decoder path at run time (wireimpl.Source.DecodeSlow).

// directMax is the widest field number the direct decode reads (one
// bitmap word).
const directMax = 32

// directDecoded reports whether messages of descriptor md get the direct
// decode. seen breaks cycles of recursive messages (a message being
// checked counts as direct: its own nested decode is the same method).
func directDecoded(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if v, ok := seen[md.FullName()]; ok {
		return v
	}
	seen[md.FullName()] = true
	ok := directFields(md, seen)
	seen[md.FullName()] = ok
	return ok
}

func directFields(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.IsMapEntry() {
		return false
	}
	for i := range md.Oneofs().Len() {
		if !md.Oneofs().Get(i).IsSynthetic() {
			return false
		}
	}
	fs := md.Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		if fd.IsMap() || fd.Cardinality() == protoreflect.Required || int(fd.Number()) > directMax {
			return false
		}
		switch {
		case fd.IsList():
			if k := fd.Kind(); k != protoreflect.BytesKind && k != protoreflect.StringKind {
				return false
			}
		case fd.Kind() == protoreflect.GroupKind:
			return false
		case fd.Kind() == protoreflect.MessageKind:
			if !directDecoded(fd.Message(), seen) {
				return false
			}
		}
	}
	return true
}

// directDecode reports whether m gets the direct decode.
func (m *message) directDecode() bool {
	return directDecoded(m.m.Desc, map[protoreflect.FullName]bool{})
}

// genDirectEntry emits Decode and DecodeBytes of a message with the direct
// decode.
func genDirectEntry(g *protogen.GeneratedFile, m *message) {
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	g.P("// Decode decodes x from b zero-copy; the arena holds a reference on b until")
	g.P("// Reset (the caller still releases its own).")
	g.P(recv, "Decode(b ", memPkg.Ident("Buf"), ") error {")
	// BeginDecode's common case in three inlined steps (no call); every
	// other case, and a step that refuses, is BeginDecode's.
	g.P("var src *", g.QualifiedGoIdent(runtimePkg.Ident("Source")))
	g.P("if a := x.cf.DecodeArena(b); a != nil && a.TryHoldInput(b) {")
	g.P("src = a.Input0(b)")
	g.P("} else {")
	g.P("var err error")
	g.P("if src, err = x.cf.BeginDecode(b); src == nil {")
	g.P("return err")
	g.P("}")
	g.P("}")
	if m.flatDecode() {
		// WireDecodeAt's body at the top level (one call less per decode).
		g.P("end := src.Len()")
		emitDirectBody(g, m, "0", "end", "0", errOnly)
	} else {
		g.P("return x.WireDecodeAt(src, 0, src.Len(), 0)")
	}
	g.P("}")
	g.P()
	g.P("// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).")
	g.P(recv, "DecodeBytes(p []byte) error {")
	g.P("src, err := x.cf.BeginDecodeBytes(p)")
	g.P("if src == nil {")
	g.P("return err")
	g.P("}")
	g.P("return x.WireDecodeAt(src, 0, src.Len(), 0)")
	g.P("}")
	g.P()
	genFusedDecode(g, m)
}

// genFusedDecode emits Decode<Msg>(a, b): New<Msg> and Decode fused. The
// input is recorded (Decode's inlined start, or Arena.BeginDecode), then
// the message is made in a by New's body written out and decoded by
// Decode's body, minus what a message just made by New makes redundant:
// the message's own checks (an arena, not stale: Arena.DecodeReady checks
// the rest of DecodeArena's conditions) and, for a flat message decoded
// inline, BindSource and the zeroing of absent fields.
func genFusedDecode(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	w := func(s string) string { return g.QualifiedGoIdent(runtimePkg.Ident(s)) }
	g.P("// Decode", name, " makes a new ", name, " in a and decodes it from b zero-copy, as")
	g.P("// New", name, " then Decode do (the arena holds a reference on b until Reset; the")
	g.P("// caller still releases its own). It returns nil and Decode's error when b does not")
	g.P("// decode, and wire.ErrNoArena when a is nil.")
	g.P("func Decode", name, "(a *", wireIdent("Arena"), ", b ", memPkg.Ident("Buf"), ") (*", name, ", error) {")
	g.P("ra := ", toRuntimeArena(g, "a"))
	g.P("if ra == nil {")
	g.P("return nil, ", wireIdent("ErrNoArena"))
	g.P("}")
	// The input first: b is not used after it, so it needs no spill
	// around New's cold call (NewSlow).
	g.P("var src *", w("Source"))
	g.P("if ra.DecodeReady(b) && ra.TryHoldInput(b) {")
	g.P("src = ra.Input0(b)")
	g.P("} else {")
	g.P("var err error")
	g.P("if src, err = ra.BeginDecode(b); src == nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("}")
	if m.onlyBytesList() && len(m.inlineLists()) == 1 {
		emitDecodeOnly(g, m) // emit_fast_encode_flat.go
		return
	}
	emitNew(g, m, "x", "ra")
	g.P("x.cf.Init(ra)")
	if m.flatDecode() {
		g.P("end := src.Len()")
		emitDirectBody(g, m, "0", "end", "0", bodyForm{fresh: true, fused: true})
	} else {
		g.P("if err := x.WireDecodeAt(src, 0, src.Len(), 0); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("return x, nil")
	}
	g.P("}")
	g.P()
}

// bodyForm is how emitDirectBody's code returns. fused: from Decode<Msg>
// (the message and an error; nil and the error on failure), else an error
// only (WireDecodeAt, Decode). fresh: x was just made by New's body (its
// BindSource is skipped: nothing to reset).
// kept: from a reuse helper's fused decode (the message and an error, the
// message on failure too: it is kept).
type bodyForm struct{ fresh, fused, kept bool }

var errOnly = bodyForm{}

// fail returns the statement that returns the error err.
func (r bodyForm) fail(err string) string {
	if r.kept {
		return "return x, " + err
	}
	if r.fused {
		return "return nil, " + err
	}
	return "return " + err
}

// done returns the statement that returns success.
func (r bodyForm) done() string {
	if r.fused {
		return "return x, nil"
	}
	return "return nil"
}

// flatDecode reports whether m's Decode holds the body of its WireDecodeAt
// (a message with no nested message fields, whose body is small: the
// top-level decode then makes one call less). Other messages' Decode calls
// WireDecodeAt.
func (m *message) flatDecode() bool {
	for _, f := range m.fields {
		if f.shape == shapeMessage {
			return false
		}
	}
	return true
}

// genDirectDecode emits WireDecodeAt.
func genDirectDecode(g *protogen.GeneratedFile, m *message) {
	w := func(s string) string { return g.QualifiedGoIdent(runtimePkg.Ident(s)) }
	g.P("// WireDecodeAt decodes x from the message header at [off, end) of src, at nesting")
	g.P("// depth depth (the direct decode: header and entries read with the cursors in")
	g.P("// locals; another header form is decoded by the Decoder path). Decode and the")
	g.P("// WireDecodeAt of messages that hold x call it.")
	g.P("func (x *", m.m.GoIdent.GoName, ") WireDecodeAt(src *", w("Source"), ", off, end, depth int) error {")
	emitDirectBody(g, m, "off", "end", "depth", errOnly)
	g.P("}")
	g.P()
}

// emitDirectBody emits the body of WireDecodeAt for the message header at
// [off, end) of src at nesting depth depth (Go expressions; end a variable):
// it decodes x and returns.
func emitDirectBody(g *protogen.GeneratedFile, m *message, off, end, depth string, r bodyForm) {
	w := func(s string) string { return g.QualifiedGoIdent(runtimePkg.Ident(s)) }
	needDyn := false
	for _, f := range m.fields {
		if f.shape == shapeMessage || f.shape == shapeList {
			needDyn = true
		}
	}
	ents, dyn := "_", "_"
	if len(m.fields) > 0 {
		ents = "ents"
	}
	if needDyn {
		dyn = "dyn"
	}
	b0 := "_"
	if len(m.fields) > 0 {
		b0 = "b0"
	}
	g.P(b0, ", ", ents, ", ", dyn, ", ok := src.Head1(", off, ", ", end, ")")
	g.P("if !ok {")
	if r.fused {
		g.P("if err := src.DecodeSlow(x, ", off, ", ", end, ", ", depth, "); err != nil {")
		g.P(r.fail("err"))
		g.P("}")
		g.P("return x, nil")
	} else {
		g.P("return src.DecodeSlow(x, ", off, ", ", end, ", ", depth, ")")
	}
	g.P("}")
	if !r.fresh {
		g.P("x.cf.BindSource(src, ", depth, ")")
	}
	for _, f := range m.fields {
		_, bit := bitOf(f)
		at := "ents"
		if f.num != 1 {
			at = w("EntAt") + "(ents, b0, " + bit + ")"
		}
		switch f.shape {
		case shapeScalar, shapeBytes, shapeString:
			emitDecodeValue(g, f, "x", "b0", "ents", r)
		case shapeList:
			method := "BytesListEnt"
			if f.kind == protoreflect.StringKind {
				method = "StringListEnt"
			}
			g.P("{")
			g.P("at := -1")
			g.P("if b0&", bit, " != 0 {")
			g.P("at = ", at)
			g.P("}")
			g.P("var err error")
			g.P("if dyn, err = src.", method, "(at, ", f.num, ", dyn, ", end, ", ", depth, ", &x.", f.sf, "); err != nil {")
			g.P(r.fail("err"))
			g.P("}")
			g.P("}")
		case shapeMessage:
			g.P("if b0&", bit, " != 0 {")
			g.P("at := ", at)
			g.P("o, n, ok := src.NestedEnt(at, dyn, ", end, ", ", depth, ")")
			g.P("if !ok {")
			g.P(r.fail("src.NestedErr(at, " + fmt.Sprint(f.num) + ", dyn, " + end + ", " + depth + ")"))
			g.P("}")
			g.P("dyn = o + n")
			emitNewNested(g, f)
			if lm := leafOf(f); lm != nil {
				// The leaf's WireDecodeAt inline, without its BindSource: v
				// was just made by its New function (no presence bits, no
				// kept unknown fields), which is all BindSource resets.
				g.P("if lb0, lents, _, ok := src.Head1(o, o+n); ok {")
				for _, lf := range lm.fields {
					emitDecodeValue(g, lf, "v", "lb0", "lents", r)
				}
				g.P("} else if err := src.DecodeSlow(v, o, o+n, ", depth, "+1); err != nil {")
				g.P(r.fail("err"))
				g.P("}")
			} else {
				g.P("if err := v.WireDecodeAt(src, o, o+n, ", depth, "+1); err != nil {")
				g.P(r.fail("err"))
				g.P("}")
			}
			g.P("x.", f.sf, ".Set(v)")
			g.P("} else {")
			g.P("x.", f.sf, ".Clear()")
			g.P("}")
		default:
			panic(fmt.Sprintf("direct decode of field %s (shape %v)", f.name, f.shape))
		}
	}
	if needDyn {
		g.P("_ = dyn")
	}
	g.P(r.done())
}

// emitDecodeValue emits the direct decode of the scalar, bytes or string
// field f of the message held in x, whose bitmap word is b0 and whose
// entries start at ents.
func emitDecodeValue(g *protogen.GeneratedFile, f *field, x, b0, ents string, r bodyForm) {
	w := func(s string) string { return g.QualifiedGoIdent(runtimePkg.Ident(s)) }
	_, bit := bitOf(f)
	at := ents
	if f.num != 1 {
		at = w("EntAt") + "(" + ents + ", " + b0 + ", " + bit + ")"
	}
	setHas := func() {
		if f.hasBit >= 0 {
			g.P(x, ".cf.SetHas(", f.hasBit, ")")
		}
	}
	switch f.shape {
	case shapeScalar:
		g.P("if ", b0, "&", bit, " != 0 {")
		g.P(x, ".", f.sf, " = ", fromU64(g, f, "src.U64("+at+")"))
		setHas()
		if r.fresh { // x was just made zeroed
			g.P("}")
			break
		}
		g.P("} else {")
		g.P(x, ".", f.sf, " = ", zeroValue(f))
		g.P("}")
	case shapeBytes, shapeString:
		kind, zero := "Bytes", w("Bytes")
		if f.shape == shapeString {
			kind, zero = "String", w("String")
		}
		g.P("if ", b0, "&", bit, " != 0 {")
		// The copied and zero-copy cases inlined (BytesRange, SetBytes or
		// SetString: the entry read once); BytesEnt/StringEnt for the rest.
		g.P("at := ", at)
		g.P("if vo, vk, vzc, vok := src.BytesRange(at); vok {")
		g.P("src.Set", kind, "(&", x, ".", f.sf, ", vo, vk, vzc)")
		g.P("} else if !src.", kind, "Ent(at, &", x, ".", f.sf, ") {")
		g.P(r.fail(w("BadData") + "(at, " + fmt.Sprint(f.num) + ")"))
		g.P("}")
		setHas()
		if r.fresh { // x was just made zeroed
			g.P("}")
			break
		}
		g.P("} else {")
		g.P(x, ".", f.sf, " = ", zero, "{}")
		g.P("}")
	default:
		panic(fmt.Sprintf("direct decode of value field %s (shape %v)", f.name, f.shape))
	}
}

// emitNewNested emits `v := ` a new message of the nested field f in the
// decoding arena. A message of the parent's package is made by the body of
// its New function written out (TryNew, NewSlow when the slab is used up,
// Init): New is too large for the compiler to inline, and a nested decode
// makes one per present field. Another package's message calls its New.
func emitNewNested(g *protogen.GeneratedFile, f *field) {
	if f.f.Message.GoIdent.GoImportPath != f.f.Parent.GoIdent.GoImportPath {
		g.P("v := ", newCall(g, f, "src.Arena()"))
		return
	}
	tv := lowerFirst(f.f.Message.GoIdent.GoName) + "Type" // its message.typeVar
	g.P("ra := src.Arena()")
	g.P("v := ", tv, ".TryNew(ra)")
	g.P("if v == nil {")
	g.P("v = ", tv, ".NewSlow(ra)")
	g.P("}")
	g.P("v.cf.Init(ra)")
}

// keptDecode reports whether m gets a fused reuse-and-decode helper in the
// service stubs (emitDecodeKept): a direct decode whose body is inline.
func (m *message) keptDecode() bool {
	return m.directDecode() && m.flatDecode()
}

// emitDecodeKept emits fn(x, a, b): the service file's reuse helper reuse
// (x made empty and bound to a's batch, a new message when x is nil) and
// Decode(b) fused, as Decode<Msg> fuses New and Decode: the message's own
// checks (an arena, not stale), its BindSource and the zeroing of absent
// fields are skipped, x having just been made empty. It returns x, also
// with an error (a kept message), and Decode's errors; a must not be nil.
func emitDecodeKept(g *protogen.GeneratedFile, m *message, fn string) {
	name := m.m.GoIdent.GoName
	w := func(s string) string { return g.QualifiedGoIdent(runtimePkg.Ident(s)) }
	g.P("// ", fn, " is ", name, "'s reuse helper and Decode fused (x made empty and bound")
	g.P("// to a's batch, then decoded from b zero-copy; the arena holds a reference on b")
	g.P("// until Reset unless a.BorrowInput): x is returned, also with an error.")
	g.P("func ", fn, "(x *", name, ", a *", wireIdent("Arena"), ", b ", memPkg.Ident("Buf"), ") (*", name, ", error) {")
	g.P("ra := ", toRuntimeArena(g, "a"))
	g.P("if x == nil {")
	g.P("x = new(", name, ")")
	g.P("} else {")
	g.P("*x = ", name, "{}")
	g.P("}")
	g.P("x.cf.Init(ra)")
	g.P("var src *", w("Source"))
	g.P("if ra.DecodeReady(b) && ra.TryHoldInput(b) {")
	g.P("src = ra.Input0(b)")
	g.P("} else {")
	emitKeptDecodeTail(g, m)
}

// emitKeptDecodeTail ends a kept message's decode function from inside the
// branch taken when the common case did not record b: that branch's body
// (BeginDecode records b, or the function returns its error) and closing
// brace, the fused body that decodes x from src, and the function's
// closing brace.
func emitKeptDecodeTail(g *protogen.GeneratedFile, m *message) {
	g.P("var err error")
	g.P("if src, err = x.cf.BeginDecode(b); src == nil {")
	g.P("return x, err")
	g.P("}")
	g.P("}")
	g.P("end := src.Len()")
	emitDirectBody(g, m, "0", "end", "0", bodyForm{fresh: true, fused: true, kept: true})
	g.P("}")
	g.P()
}
