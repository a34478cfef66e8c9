package gen

import (
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Accessors of message fields (getters, setters, Has, Clear, defaults).

func genAccessors(g *protogen.GeneratedFile, m *message, f *field) {
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	n := f.goName
	what := fmt.Sprintf("field %s = %d", f.name, f.num)
	arena := "x.cf.Arena()"
	if f.cx.isMap {
		genMapAccessors(g, m, f)
		return
	}
	setHas := func() {
		if f.hasBit >= 0 {
			g.P("x.cf.SetHas(", f.hasBit, ")")
		}
		oneofSet(g, f)
	}
	clearHas := func() {
		if f.hasBit >= 0 {
			g.P("x.cf.ClearHas(", f.hasBit, ")")
		}
	}
	hasDoc := func(implicit string) {
		if f.hasBit >= 0 {
			g.P("// Has", n, " reports whether ", what, " is set.")
		} else {
			g.P("// Has", n, " reports whether ", what, " is ", implicit, ".")
		}
		g.P(recv, "Has", n, "() bool { return ", present(g, f, "x"), " }")
		g.P()
	}
	switch f.shape {
	case shapeScalar:
		t := goType(g, f)
		if def := scalarDefault(g, f); def != "" {
			g.P("// Get", n, " returns ", what, " (", def, " when unset).")
			g.P(recv, "Get", n, "() ", t, " {")
			g.P("if !", present(g, f, "x"), " {")
			g.P("return ", def)
			g.P("}")
			g.P("return x.", f.sf)
			g.P("}")
		} else {
			g.P("// Get", n, " returns ", what, ".")
			g.P(recv, "Get", n, "() ", t, " { return x.", f.sf, " }")
		}
		g.P()
		hasDoc("not zero")
		g.P("// Set", n, " sets ", what, ".")
		if f.hasBit >= 0 {
			g.P(recv, "Set", n, "(v ", t, ") {")
			g.P("x.", f.sf, " = v")
			setHas()
			g.P("}")
		} else {
			g.P(recv, "Set", n, "(v ", t, ") { x.", f.sf, " = v }")
		}
		g.P()
		if f.hasBit >= 0 {
			g.P("// Clear", n, " unsets ", what, ".")
			g.P(recv, "Clear", n, "() {")
			g.P("x.", f.sf, " = ", zeroValue(f))
			clearHas()
			g.P("}")
		} else {
			g.P("// Clear", n, " clears ", what, ".")
			g.P(recv, "Clear", n, "() { x.", f.sf, " = ", zeroValue(f), " }")
		}
		g.P()

	case shapeBytes:
		dv := bytesDefault(g, m, f)
		g.P("// Get", n, " returns ", what, ". The slice aliases the message's memory (arena,")
		g.P("// registered memory or decoded input): do not modify it; valid until the arena's Reset.")
		if dv != "" {
			g.P("//")
			g.P("// When the field is unset it reads as its default value (", dv, ", shared: do not modify).")
			g.P(recv, "Get", n, "() []byte {")
			g.P("if !", present(g, f, "x"), " {")
			g.P("return ", dv)
			g.P("}")
			g.P("return x.", f.sf, ".Get()")
			g.P("}")
		} else {
			g.P(recv, "Get", n, "() []byte { return x.", f.sf, ".Get() }")
		}
		g.P()
		hasDoc("not empty")
		g.P("// Set", n, " sets ", what, " (copied below the arena's threshold, else zero-copy")
		g.P("// when v lies in registered memory).")
		g.P(recv, "Set", n, "(v []byte) {")
		g.P("x.", f.sf, ".Set(", arena, ", v)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "Borrowed sets ", what, " like Set", n, ", without copying v into the")
		g.P("// arena: a value Set", n, " would copy is copied once, when the message is serialized.")
		g.P("// v must not change until the field is set again or the arena's Reset (checked by the")
		g.P("// cfcheck build); re-setting takes no arena memory or reference (docs/CODEGEN.md,")
		g.P("// \"Reusing a built message\").")
		g.P(recv, "Set", n, "Borrowed(v []byte) {")
		g.P("x.", f.sf, ".SetBorrowed(", arena, ", v)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "Buf sets ", what, " from a registered buffer (the arena takes its own")
		g.P("// reference; the caller keeps b).")
		g.P(recv, "Set", n, "Buf(b ", memPkg.Ident("Buf"), ") {")
		g.P("x.", f.sf, ".SetBuf(", arena, ", b)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "BufBorrowed sets ", what, " from a registered buffer without taking a")
		g.P("// reference: b must stay unreleased and unchanged until the field is set again or the")
		g.P("// arena's Reset (checked by the cfcheck build); a value below the threshold is copied")
		g.P("// once, when serialized.")
		g.P(recv, "Set", n, "BufBorrowed(b ", memPkg.Ident("Buf"), ") {")
		g.P("x.", f.sf, ".SetBufBorrowed(", arena, ", b)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Clear", n, " clears ", what, ".")
		g.P(recv, "Clear", n, "() {")
		g.P("x.", f.sf, ".Clear()")
		clearHas()
		g.P("}")
		g.P()

	case shapeString:
		dv := bytesDefault(g, m, f)
		g.P("// Get", n, " returns ", what, ", or wire.ErrInvalidUTF8 when it is not valid UTF-8.")
		g.P("// The string aliases the message's memory: valid until the arena's Reset.")
		if dv != "" {
			g.P("//")
			g.P("// When the field is unset it reads as its default value.")
			g.P(recv, "Get", n, "() (string, error) {")
			g.P("if !", present(g, f, "x"), " {")
			g.P("return ", strconv.Quote(f.f.Desc.Default().String()), ", nil")
			g.P("}")
			g.P("return x.", f.sf, ".Get()")
			g.P("}")
			g.P()
			g.P("// Get", n, "Bytes returns ", what, " without a UTF-8 check (aliasing; valid until Reset).")
			g.P("// When the field is unset it reads as its default value (", dv, ", shared: do not modify).")
			g.P(recv, "Get", n, "Bytes() []byte {")
			g.P("if !", present(g, f, "x"), " {")
			g.P("return ", dv)
			g.P("}")
			g.P("return x.", f.sf, ".Bytes()")
			g.P("}")
		} else {
			g.P(recv, "Get", n, "() (string, error) { return x.", f.sf, ".Get() }")
			g.P()
			g.P("// Get", n, "Bytes returns ", what, " without a UTF-8 check (aliasing; valid until Reset).")
			g.P(recv, "Get", n, "Bytes() []byte { return x.", f.sf, ".Bytes() }")
		}
		g.P()
		hasDoc("not empty")
		g.P("// Set", n, " sets ", what, " (copied below the arena's threshold, else zero-copy")
		g.P("// when v lies in registered memory).")
		g.P(recv, "Set", n, "(v string) {")
		g.P("x.", f.sf, ".SetString(", arena, ", v)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "Bytes sets ", what, " from bytes (hybrid rule of Set", n, ").")
		g.P(recv, "Set", n, "Bytes(v []byte) {")
		g.P("x.", f.sf, ".Set(", arena, ", v)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "Borrowed sets ", what, " like Set", n, ", without copying v into the")
		g.P("// arena: a value Set", n, " would copy is copied once, when the message is serialized.")
		g.P(recv, "Set", n, "Borrowed(v string) {")
		g.P("x.", f.sf, ".SetBorrowed(", arena, ", v)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "BytesBorrowed sets ", what, " from bytes like Set", n, "Borrowed; v must")
		g.P("// not change until the field is set again or the arena's Reset (checked by the cfcheck")
		g.P("// build).")
		g.P(recv, "Set", n, "BytesBorrowed(v []byte) {")
		g.P("x.", f.sf, ".SetBytesBorrowed(", arena, ", v)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "Buf sets ", what, " from a registered buffer (the arena takes its own")
		g.P("// reference; the caller keeps b).")
		g.P(recv, "Set", n, "Buf(b ", memPkg.Ident("Buf"), ") {")
		g.P("x.", f.sf, ".SetBuf(", arena, ", b)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Set", n, "BufBorrowed sets ", what, " from a registered buffer without taking a")
		g.P("// reference: b must stay unreleased and unchanged until the field is set again or the")
		g.P("// arena's Reset (checked by the cfcheck build); a value below the threshold is copied")
		g.P("// once, when serialized.")
		g.P(recv, "Set", n, "BufBorrowed(b ", memPkg.Ident("Buf"), ") {")
		g.P("x.", f.sf, ".SetBufBorrowed(", arena, ", b)")
		setHas()
		g.P("}")
		g.P()
		g.P("// Clear", n, " clears ", what, ".")
		g.P(recv, "Clear", n, "() {")
		g.P("x.", f.sf, ".Clear()")
		clearHas()
		g.P("}")
		g.P()

	case shapeMessage:
		mt := "*" + g.QualifiedGoIdent(f.f.Message.GoIdent)
		nf := newFunc(g, f)
		if m.fast() && eagerMessage(f) {
			// Decoded with its parent (emit_fast.go): the getter checks
			// the parent's epoch, as a pending lazy record would.
			g.P("// Get", n, " returns ", what, " (nil when absent); it fails with")
			g.P("// wire.ErrArenaReset after the arena's Reset.")
			g.P(recv, "Get", n, "() (", mt, ", error) {")
			g.P("if x.cf.Stale() {")
			g.P("return nil, ", g.QualifiedGoIdent(wireIdent("ErrArenaReset")))
			g.P("}")
			// The decoded (or absent) field without a call; Get for a
			// lazy record the Decoder path left.
			g.P("if !x.", f.sf, ".Pending() {")
			g.P("return x.", f.sf, ".Loaded(), nil")
			g.P("}")
			g.P("return x.", f.sf, ".Get(", arena, ", ", nf, ")")
			g.P("}")
		} else {
			g.P("// Get", n, " returns ", what, " (nil when absent), decoding it on first access.")
			g.P(recv, "Get", n, "() (", mt, ", error) { return x.", f.sf, ".Get(", arena, ", ", nf, ") }")
		}
		g.P()
		g.P("// Has", n, " reports whether ", what, " is set.")
		g.P(recv, "Has", n, "() bool { return x.", f.sf, ".Present() }")
		g.P()
		g.P("// Set", n, " sets ", what, " to v (a message of the same arena; nil clears it).")
		g.P(recv, "Set", n, "(v ", mt, ") {")
		g.P("x.", f.sf, ".Set(v)")
		oneofSet(g, f)
		g.P("}")
		g.P()
		g.P("// Init", n, " sets ", what, " to a new empty message and returns it.")
		g.P(recv, "Init", n, "() ", mt, " {")
		g.P("v := ", newCall(g, f, arena))
		g.P("x.", f.sf, ".Set(v)")
		oneofSet(g, f)
		g.P("return v")
		g.P("}")
		g.P()
		g.P("// Clear", n, " unsets ", what, ".")
		g.P(recv, "Clear", n, "() { x.", f.sf, ".Clear() }")
		g.P()

	case shapeList:
		lt := apiListType(g, f)
		what = fmt.Sprintf("the list %s = %d", f.name, f.num)
		load := "x." + f.sf + ".Load(" + arena + ")"
		if f.kind == protoreflect.MessageKind {
			load = "x." + f.sf + ".Load(" + arena + ", " + newFunc(g, f) + ")"
		}
		g.P("// Get", n, " returns ", what, " (decoding it on first access).")
		if f.kind == protoreflect.EnumKind {
			g.P("// Elements are values of the enum ", f.f.Enum.Desc.FullName(), ", stored as int32.")
		}
		if f.kind == protoreflect.BytesKind {
			// A list that the direct decode checked needs no Load (tested
			// inline: Load is not inlined).
			g.P(recv, "Get", n, "() (*", lt, ", error) {")
			g.P("if x.", f.sf, ".Viewed() {")
			g.P("return (*", lt, ")(&x.", f.sf, "), nil")
			g.P("}")
			g.P("return (*", lt, ")(&x.", f.sf, "), ", load)
			g.P("}")
		} else {
			g.P(recv, "Get", n, "() (*", lt, ", error) { return (*", lt, ")(&x.", f.sf, "), ", load, " }")
		}
		g.P()
		g.P("// Init", n, " empties ", what, ", reserves room for n elements, and returns it.")
		initArgs := arena + ", n)"
		clearArgs := arena + ", 0)"
		if f.kind == protoreflect.BytesKind && len(m.inlineLists()) != 0 {
			initArgs = arena + ", n, &x." + inlName(f) + ")"
			clearArgs = arena + ", 0, &x." + inlName(f) + ")"
		}
		init := ".Init("
		if initArgs != arena+", n)" {
			init = ".InitIn("
		}
		g.P(recv, "Init", n, "(n int) *", lt, " {")
		g.P("x.", f.sf, init, initArgs)
		g.P("return (*", lt, ")(&x.", f.sf, ")")
		g.P("}")
		g.P()
		g.P("// Has", n, " reports whether ", what, " is not empty.")
		g.P(recv, "Has", n, "() bool { return x.", f.sf, ".Len() != 0 }")
		g.P()
		g.P("// Clear", n, " empties ", what, ".")
		g.P(recv, "Clear", n, "() { x.", f.sf, init, clearArgs, " }")
		g.P()
	}
}

// scalarDefault returns the Go expression an explicit-presence scalar or
// enum field reads as when unset, if it is not the zero value: a proto2
// [default = ...], or the first value of a proto2 enum whose first value
// is not 0. It returns "" otherwise.
func scalarDefault(g *protogen.GeneratedFile, f *field) string {
	if f.hasBit < 0 {
		return ""
	}
	d := f.f.Desc
	if f.kind == protoreflect.EnumKind {
		num := d.Default().Enum()
		if num == 0 {
			return ""
		}
		for _, v := range f.f.Enum.Values {
			if v.Desc.Number() == num {
				return g.QualifiedGoIdent(v.GoIdent)
			}
		}
		return fmt.Sprintf("%s(%d)", g.QualifiedGoIdent(f.f.Enum.GoIdent), num)
	}
	if !d.HasDefault() {
		return ""
	}
	v := d.Default()
	switch f.kind {
	case protoreflect.BoolKind:
		if v.Bool() {
			return "true"
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		x := v.Float()
		if math.Float64bits(x) == 0 {
			return ""
		}
		bits, conv := 64, ""
		if f.kind == protoreflect.FloatKind {
			bits, conv = 32, "float32"
		}
		var lit string
		switch {
		case math.IsNaN(x):
			lit = g.QualifiedGoIdent(mathPkg.Ident("NaN")) + "()"
		case math.IsInf(x, 1):
			lit = g.QualifiedGoIdent(mathPkg.Ident("Inf")) + "(1)"
		case math.IsInf(x, -1):
			lit = g.QualifiedGoIdent(mathPkg.Ident("Inf")) + "(-1)"
		case x == 0: // -0
			lit = g.QualifiedGoIdent(mathPkg.Ident("Copysign")) + "(0, -1)"
		default:
			lit = strconv.FormatFloat(x, 'g', -1, bits)
			if conv == "" {
				return lit
			}
		}
		if conv != "" {
			return conv + "(" + lit + ")"
		}
		return lit
	default:
		switch scalars[f.kind].goType {
		case "int32", "int64":
			if n := v.Int(); n != 0 {
				return strconv.FormatInt(n, 10)
			}
		default:
			if n := v.Uint(); n != 0 {
				return strconv.FormatUint(n, 10)
			}
		}
	}
	return ""
}

// bytesDefault returns the name of the package variable holding the
// non-empty proto2 default of a bytes or string field, emitting it; "" when
// the field has none.
func bytesDefault(g *protogen.GeneratedFile, m *message, f *field) string {
	d := f.f.Desc
	if f.hasBit < 0 || !d.HasDefault() {
		return ""
	}
	var b []byte
	if f.kind == protoreflect.StringKind {
		b = []byte(d.Default().String())
	} else {
		b = d.Default().Bytes()
	}
	if len(b) == 0 {
		return ""
	}
	name := "xDefault_" + m.m.GoIdent.GoName + "_" + f.goName
	g.P("// ", name, " is the default value of ", d.FullName(), ".")
	g.P("var ", name, " = []byte(", strconv.Quote(string(b)), ")")
	g.P()
	return name
}
