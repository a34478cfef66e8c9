package gen

import (
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const (
	wirePkg = protogen.GoImportPath("github.com/cornflakes-go/cornflakes/wire")
	memPkg  = protogen.GoImportPath("github.com/cornflakes-go/cornflakes/mem")
	mathPkg = protogen.GoImportPath("math")
)

// shape is how a field is represented and driven.
type shape int

const (
	shapeScalar  shape = iota // bool, integers, enums, floats
	shapeBytes                // bytes
	shapeString               // string
	shapeMessage              // singular message
	shapeList                 // repeated (any element kind)
)

// scalarInfo describes a scalar kind: its Go type, the Encoder/Decoder
// method, and how String prints it.
type scalarInfo struct {
	goType string // Go type of the value (enums use their own type)
	coder  string // Encoder/Decoder method: Int32, Int64, Uint32, Uint64, Bool, Float, Double
	text   string // Text method: Int, Uint, Bool, Float, Enum
}

var scalars = map[protoreflect.Kind]scalarInfo{
	protoreflect.BoolKind:     {"bool", "Bool", "Bool"},
	protoreflect.Int32Kind:    {"int32", "Int32", "Int"},
	protoreflect.Sint32Kind:   {"int32", "Int32", "Int"},
	protoreflect.Sfixed32Kind: {"int32", "Int32", "Int"},
	protoreflect.Int64Kind:    {"int64", "Int64", "Int"},
	protoreflect.Sint64Kind:   {"int64", "Int64", "Int"},
	protoreflect.Sfixed64Kind: {"int64", "Int64", "Int"},
	protoreflect.Uint32Kind:   {"uint32", "Uint32", "Uint"},
	protoreflect.Fixed32Kind:  {"uint32", "Uint32", "Uint"},
	protoreflect.Uint64Kind:   {"uint64", "Uint64", "Uint"},
	protoreflect.Fixed64Kind:  {"uint64", "Uint64", "Uint"},
	protoreflect.FloatKind:    {"float32", "Float", "Float"},
	protoreflect.DoubleKind:   {"float64", "Double", "Float"},
	protoreflect.EnumKind:     {"int32", "Int32", "Enum"},
}

// field is one field of a message as the emitter sees it.
type field struct {
	f      *protogen.Field
	num    int
	name   string // proto name
	goName string // GoName, e.g. SnakeCaseField
	sf     string // struct field, x + GoName
	shape  shape
	kind   protoreflect.Kind
	hasBit int        // explicit-presence bit, -1 for implicit presence / lists / messages
	cx     constructs // oneof membership, map, required (emit_construct.go)
}

// message is a message as the emitter sees it.
type message struct {
	m       *protogen.Message
	typeVar string // the wire.Type variable
	fields  []*field
}

func newMessage(m *protogen.Message) (*message, error) {
	mm := &message{m: m, typeVar: lowerFirst(m.GoIdent.GoName) + "Type"}
	bit := 0
	// Fields are visited in ascending field-number order (the wire hooks
	// require it).
	fs := append([]*protogen.Field(nil), m.Fields...)
	sortFields(fs)
	for _, f := range fs {
		d := f.Desc
		fl := &field{f: f, num: int(d.Number()), name: string(d.Name()), goName: f.GoName, sf: "x" + f.GoName, kind: d.Kind(), hasBit: -1}
		switch {
		case d.IsList():
			fl.shape = shapeList
		case d.IsMap(): // on the wire a list of entry messages (emit_map.go)
			fl.shape, fl.kind = shapeList, protoreflect.MessageKind
		case d.Kind() == protoreflect.MessageKind:
			fl.shape = shapeMessage
		case d.Kind() == protoreflect.BytesKind:
			fl.shape = shapeBytes
		case d.Kind() == protoreflect.StringKind:
			fl.shape = shapeString
		default:
			if _, ok := scalars[d.Kind()]; !ok {
				return nil, unsupported(m.Desc.ParentFile(), m.Desc.ParentFile().SourceLocations().ByDescriptor(d), fmt.Sprintf("field %s of kind %s", d.FullName(), d.Kind()), "")
			}
			fl.shape = shapeScalar
		}
		if fl.shape != shapeList && fl.shape != shapeMessage && d.HasPresence() {
			fl.hasBit = bit
			bit++
		}
		fl.cx = fieldConstructs(f)
		mm.fields = append(mm.fields, fl)
	}
	if err := mm.checkNames(); err != nil {
		return nil, err
	}
	if err := mm.checkConstructNames(); err != nil {
		return nil, err
	}
	return mm, nil
}

func sortFields(fs []*protogen.Field) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].Desc.Number() < fs[j-1].Desc.Number(); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// methods returns the accessor names generated for f.
func (f *field) methods() []string {
	n := f.goName
	if f.cx.isMap {
		return []string{"Get" + n, "Has" + n, "Clear" + n}
	}
	switch f.shape {
	case shapeScalar:
		return []string{"Get" + n, "Has" + n, "Set" + n, "Clear" + n}
	case shapeBytes:
		return []string{"Get" + n, "Has" + n, "Set" + n, "Set" + n + "Buf", "Clear" + n}
	case shapeString:
		return []string{"Get" + n, "Get" + n + "Bytes", "Has" + n, "Set" + n, "Set" + n + "Bytes", "Set" + n + "Buf", "Clear" + n}
	case shapeMessage:
		return []string{"Get" + n, "Has" + n, "Set" + n, "Init" + n, "Clear" + n}
	default:
		return []string{"Get" + n, "Init" + n, "Has" + n, "Clear" + n}
	}
}

// checkNames rejects messages whose generated accessors would collide
// (e.g. a string field "name" and a bytes field "name_bytes").
func (m *message) checkNames() error {
	reserved := map[string]string{}
	for _, n := range []string{"Sizes", "Serialize", "Decode", "DecodeBytes", "WireCore", "WireSizes", "WireEncode", "WireDecode", "Equal", "String"} {
		reserved[n] = "the generated method"
	}
	for _, f := range m.fields {
		for _, n := range f.methods() {
			if other, dup := reserved[n]; dup {
				fd := m.m.Desc.ParentFile()
				return unsupported(fd, fd.SourceLocations().ByDescriptor(f.f.Desc),
					fmt.Sprintf("field %s: its accessor %s collides with %s", f.f.Desc.FullName(), n, other), "rename the field")
			}
			reserved[n] = "an accessor of field " + f.name
		}
	}
	return nil
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// goType returns the Go type of a scalar field's value.
func goType(g *protogen.GeneratedFile, f *field) string {
	if f.kind == protoreflect.EnumKind {
		return g.QualifiedGoIdent(f.f.Enum.GoIdent)
	}
	return scalars[f.kind].goType
}

// storageType returns the Go type of f's struct field.
func storageType(g *protogen.GeneratedFile, f *field) string {
	w := func(s string) string { return g.QualifiedGoIdent(wirePkg.Ident(s)) }
	switch f.shape {
	case shapeScalar:
		return goType(g, f)
	case shapeBytes:
		return w("Bytes")
	case shapeString:
		return w("String")
	case shapeMessage:
		return w("Nested") + "[*" + g.QualifiedGoIdent(f.f.Message.GoIdent) + "]"
	}
	return listType(g, f)
}

// listType returns the wire list type of a repeated field.
func listType(g *protogen.GeneratedFile, f *field) string {
	w := func(s string) string { return g.QualifiedGoIdent(wirePkg.Ident(s)) }
	switch f.kind {
	case protoreflect.BytesKind:
		return w("BytesList")
	case protoreflect.StringKind:
		return w("StringList")
	case protoreflect.MessageKind:
		return w("MessageList") + "[*" + g.QualifiedGoIdent(f.f.Message.GoIdent) + "]"
	}
	return w("ScalarList") + "[" + scalars[f.kind].goType + "]"
}

// newFunc returns the (qualified) New function of a message-typed field.
func newFunc(g *protogen.GeneratedFile, f *field) string {
	id := f.f.Message.GoIdent
	return g.QualifiedGoIdent(protogen.GoIdent{GoName: "New" + id.GoName, GoImportPath: id.GoImportPath})
}

// present returns the Go condition under which a singular field is on the
// wire: its presence bit for explicit presence, a non-zero value otherwise.
func present(g *protogen.GeneratedFile, f *field, x string) string {
	if f.hasBit >= 0 {
		return fmt.Sprintf("%s.cf.Has(%d)", x, f.hasBit)
	}
	v := x + "." + f.sf
	switch f.shape {
	case shapeBytes, shapeString:
		return v + ".Len() != 0"
	case shapeMessage:
		return v + ".Present()"
	}
	switch f.kind {
	case protoreflect.BoolKind:
		return v
	case protoreflect.FloatKind:
		return g.QualifiedGoIdent(mathPkg.Ident("Float32bits")) + "(" + v + ") != 0"
	case protoreflect.DoubleKind:
		return g.QualifiedGoIdent(mathPkg.Ident("Float64bits")) + "(" + v + ") != 0"
	}
	return v + " != 0"
}

func zeroValue(f *field) string {
	if f.kind == protoreflect.BoolKind {
		return "false"
	}
	return "0"
}

// genMessageTree emits m, then its nested enums and messages.
func genMessageTree(g *protogen.GeneratedFile, m *protogen.Message) error {
	mm, err := newMessage(m)
	if err != nil {
		return err
	}
	genMessage(g, mm)
	for _, e := range m.Enums {
		genEnum(g, e)
	}
	for _, nm := range m.Messages {
		if err := genMessageTree(g, nm); err != nil {
			return err
		}
	}
	return nil
}

func genMessage(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	// Type and constructor.
	docComment(g, m.m.Comments, fmt.Sprintf("%s is the message %s.", name, m.m.Desc.FullName()))
	g.P("type ", name, " struct {")
	g.P("cf ", wirePkg.Ident("Core"))
	for _, f := range m.fields {
		g.P(f.sf, " ", storageType(g, f))
	}
	genConstructFields(g, m)
	g.P("}")
	g.P()
	g.P("var ", m.typeVar, " = ", wirePkg.Ident("NewType"), "[", name, "]()")
	g.P()
	g.P("// New", name, " returns an empty ", name, " in a; it and everything it holds are valid")
	g.P("// until a.Reset.")
	g.P("func New", name, "(a *", wirePkg.Ident("Arena"), ") *", name, " {")
	g.P("x := ", m.typeVar, ".New(a)")
	g.P("x.cf.Init(a)")
	g.P("return x")
	g.P("}")
	g.P()

	for _, f := range m.fields {
		genAccessors(g, m, f)
	}
	genObject(g, m)
	genHooks(g, m)
	genEqual(g, m)
	genString(g, m)
	genConstructs(g, m)
}

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
		g.P("// Set", n, "Buf sets ", what, " from a registered buffer (the arena takes its own")
		g.P("// reference; the caller keeps b).")
		g.P(recv, "Set", n, "Buf(b ", memPkg.Ident("Buf"), ") {")
		g.P("x.", f.sf, ".SetBuf(", arena, ", b)")
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
		g.P("// Set", n, "Buf sets ", what, " from a registered buffer (the arena takes its own")
		g.P("// reference; the caller keeps b).")
		g.P(recv, "Set", n, "Buf(b ", memPkg.Ident("Buf"), ") {")
		g.P("x.", f.sf, ".SetBuf(", arena, ", b)")
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
		g.P("// Get", n, " returns ", what, " (nil when absent), decoding it on first access.")
		g.P(recv, "Get", n, "() (", mt, ", error) { return x.", f.sf, ".Get(", arena, ", ", nf, ") }")
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
		g.P("v := ", nf, "(", arena, ")")
		g.P("x.", f.sf, ".Set(v)")
		oneofSet(g, f)
		g.P("return v")
		g.P("}")
		g.P()
		g.P("// Clear", n, " unsets ", what, ".")
		g.P(recv, "Clear", n, "() { x.", f.sf, ".Clear() }")
		g.P()

	case shapeList:
		lt := listType(g, f)
		what = fmt.Sprintf("the list %s = %d", f.name, f.num)
		load := "x." + f.sf + ".Load(" + arena + ")"
		if f.kind == protoreflect.MessageKind {
			load = "x." + f.sf + ".Load(" + arena + ", " + newFunc(g, f) + ")"
		}
		g.P("// Get", n, " returns ", what, " (decoding it on first access).")
		if f.kind == protoreflect.EnumKind {
			g.P("// Elements are values of the enum ", f.f.Enum.Desc.FullName(), ", stored as int32.")
		}
		g.P(recv, "Get", n, "() (*", lt, ", error) { return &x.", f.sf, ", ", load, " }")
		g.P()
		g.P("// Init", n, " empties ", what, ", reserves room for n elements, and returns it.")
		g.P(recv, "Init", n, "(n int) *", lt, " {")
		g.P("x.", f.sf, ".Init(", arena, ", n)")
		g.P("return &x.", f.sf)
		g.P("}")
		g.P()
		g.P("// Has", n, " reports whether ", what, " is not empty.")
		g.P(recv, "Has", n, "() bool { return x.", f.sf, ".Len() != 0 }")
		g.P()
		g.P("// Clear", n, " empties ", what, ".")
		g.P(recv, "Clear", n, "() { x.", f.sf, ".Init(", arena, ", 0) }")
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

func genObject(g *protogen.GeneratedFile, m *message) {
	name := m.m.GoIdent.GoName
	recv := "func (x *" + name + ") "
	// The entry points call the message's own hooks statically (no
	// interface dispatch per message); see wire/fast.go.
	g.P("// Sizes implements wire.Object.")
	g.P(recv, "Sizes() ", wirePkg.Ident("Sizes"), " {")
	g.P("s := x.cf.StartSizes()")
	g.P("if s.Fresh(&x.cf) { // not walked after its arena's Reset: its memory may be reused")
	g.P("x.WireSizes(s)")
	g.P("}")
	g.P("return x.cf.FinishSizes(s)")
	g.P("}")
	g.P()
	g.P("// Serialize implements wire.Object.")
	g.P(recv, "Serialize(dst []byte, sink ", wirePkg.Ident("EntrySink"), ") error {")
	g.P("e, err := ", wirePkg.Ident("StartSerialize"), "(x, &x.cf, dst, sink)")
	g.P("if e == nil {")
	g.P("return err")
	g.P("}")
	g.P("x.WireEncode(e)")
	g.P("return e.FinishSerialize(&x.cf)")
	g.P("}")
	g.P()
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
	g.P("// WireCore implements wire.Msg.")
	g.P(recv, "WireCore() *", wirePkg.Ident("Core"), " { return &x.cf }")
	g.P()
}

func genHooks(g *protogen.GeneratedFile, m *message) {
	if m.fast() {
		genFastHooks(g, m)
		return
	}
	recv := "func (x *" + m.m.GoIdent.GoName + ") "
	w := func(s string) string { return g.QualifiedGoIdent(wirePkg.Ident(s)) }

	g.P("// WireSizes implements wire.Msg.")
	g.P(recv, "WireSizes(s *", w("Sizer"), ") {")
	g.P("mk := s.Begin()")
	for _, f := range m.fields {
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
	g.P("s.End(&x.cf, mk)")
	g.P("}")
	g.P()

	g.P("// WireEncode implements wire.Msg.")
	g.P(recv, "WireEncode(e *", w("Encoder"), ") {")
	g.P("mk := e.Begin(&x.cf)")
	for _, f := range m.fields {
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
				g.P("if ", has, "!", wirePkg.Ident("EqualFloat32"), "(x.", f.sf, ", y.", f.sf, ") {")
			case protoreflect.DoubleKind:
				g.P("if ", has, "!", wirePkg.Ident("EqualFloat64"), "(x.", f.sf, ", y.", f.sf, ") {")
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
			g.P("if l, m, ok := ", wirePkg.Ident("Loaded2"), "(x.Get", f.goName, ", y.Get", f.goName, "); !ok || !", eq, " {")
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
	g.P("var t ", wirePkg.Ident("Text"))
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
			g.P("if l, err := x.Get", f.goName, "(); err != nil {")
			g.P("t.Err(", q, ", err)")
			g.P("} else {")
			switch f.kind {
			case protoreflect.BytesKind:
				g.P("t.BytesList(", q, ", l)")
			case protoreflect.StringKind:
				g.P("t.StringList(", q, ", l)")
			case protoreflect.MessageKind:
				g.P(wirePkg.Ident("TextMessages"), "(&t, ", q, ", ", listOf(f, "l"), ")")
			default:
				g.P(wirePkg.Ident("TextScalars"), "(&t, ", q, ", l)")
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
	w := func(s string) string { return g.QualifiedGoIdent(wirePkg.Ident(s)) }
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
	w := func(s string) string { return g.QualifiedGoIdent(wirePkg.Ident(s)) }
	switch f.kind {
	case protoreflect.StringKind:
		g.P("e.StringList(", f.num, ", &x.", f.sf, ")")
	case protoreflect.MessageKind:
		g.P(w("EncodeMessages"), "(e, ", f.num, ", &x.", f.sf, ")")
	default:
		g.P(w("EncodeScalars"), "(e, ", f.num, ", &x.", f.sf, ")")
	}
}
