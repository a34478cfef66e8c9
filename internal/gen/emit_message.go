package gen

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const (
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
		return []string{"Get" + n, "Has" + n, "Set" + n, "Set" + n + "Buf", "Set" + n + "Borrowed", "Set" + n + "BufBorrowed", "Clear" + n}
	case shapeString:
		return []string{"Get" + n, "Get" + n + "Bytes", "Has" + n, "Set" + n, "Set" + n + "Bytes", "Set" + n + "Buf", "Set" + n + "Borrowed", "Set" + n + "BytesBorrowed", "Set" + n + "BufBorrowed", "Clear" + n}
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
	for _, n := range []string{"Sizes", "Serialize", "SerializeSGA", "Decode", "DecodeBytes", "WireCore", "WireSizes", "WireEncode", "WireDecode", "Equal", "String"} {
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
	w := func(s string) string { return g.QualifiedGoIdent(wireIdent(s)) }
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

// listType returns the runtime list type of a repeated field (its storage).
func listType(g *protogen.GeneratedFile, f *field) string {
	return listTypeOf(g, f, wireIdent)
}

// apiListType returns the wire list type of a repeated field (what its
// getters return).
func apiListType(g *protogen.GeneratedFile, f *field) string {
	return listTypeOf(g, f, apiIdent)
}

func listTypeOf(g *protogen.GeneratedFile, f *field, ident func(string) protogen.GoIdent) string {
	w := func(s string) string { return g.QualifiedGoIdent(ident(s)) }
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

// newName returns the (qualified) New function of a message-typed field.
func newName(g *protogen.GeneratedFile, f *field) string {
	id := f.f.Message.GoIdent
	return g.QualifiedGoIdent(protogen.GoIdent{GoName: "New" + id.GoName, GoImportPath: id.GoImportPath})
}

// newFunc returns the constructor the runtime calls for a message-typed
// field: a function of the runtime's arena around its New function.
func newFunc(g *protogen.GeneratedFile, f *field) string {
	ra := g.QualifiedGoIdent(runtimePkg.Ident("Arena"))
	mt := g.QualifiedGoIdent(f.f.Message.GoIdent)
	return "func(a *" + ra + ") *" + mt + " { return " + newName(g, f) + "(" + toAppArena(g, "a") + ") }"
}

// newCall returns a call of the New function of a message-typed field with
// the runtime's arena a.
func newCall(g *protogen.GeneratedFile, f *field, a string) string {
	return newName(g, f) + "(" + toAppArena(g, a) + ")"
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
	inl := m.inlineLists()
	g.P("type ", name, " struct {")
	if len(inl) != 0 {
		// The fields New zeroes, then the lists' inline elements, which it
		// does not (see inlineLists).
		g.P(m.zeroedType(), "")
		for _, f := range inl {
			g.P(inlName(f), " [", wireIdent("InlineItems"), "]", wireIdent("Bytes"), " // the elements of ", f.sf, " (InitIn)")
		}
		g.P("}")
		g.P()
		g.P("// ", m.zeroedType(), " holds the fields of ", name, " that New zeroes: all but the")
		g.P("// inline elements of its bytes lists.")
		g.P("type ", m.zeroedType(), " struct {")
	}
	g.P("cf ", wireIdent("Core"))
	for _, f := range m.fields {
		g.P(f.sf, " ", storageType(g, f))
	}
	genConstructFields(g, m)
	g.P("}")
	g.P()
	g.P("var ", m.typeVar, " = ", wireIdent("NewType"), "[", name, "]()")
	g.P()
	g.P("// New", name, " returns an empty ", name, " in a; it and everything it holds are valid")
	g.P("// until a.Reset. It may be serialized any number of times, its fields set again in")
	g.P("// between: with the borrowed setters that grows nothing (docs/CODEGEN.md, \"Reusing a")
	g.P("// built message\").")
	g.P("func New", name, "(a *", wireIdent("Arena"), ") *", name, " {")
	g.P("ra := ", toRuntimeArena(g, "a"))
	emitNew(g, m, "x", "ra")
	g.P("x.cf.Init(ra)")
	g.P("return x")
	g.P("}")
	g.P()

	for _, f := range m.fields {
		genAccessors(g, m, f)
	}
	genObject(g, m)
	genHooks(g, m)
	genKeptHooks(g, m) // emit_unknown.go
	genEqual(g, m)
	genString(g, m)
	genConstructs(g, m)
}

// inlineLists returns the bytes-list fields of m when m is a one-level
// message (no message, map or oneof field) that holds the elements of
// short bytes lists in itself: each such list has an array of
// InlineItems elements in the message (InitX and ClearX call
// BytesList.InitIn with it), so that a built list of at most InlineItems
// elements takes no arena memory. The message is then the fields New
// zeroes (zeroedType, embedded) followed by those arrays, which New does
// not zero (TryNewRaw): nothing reads an element before Append writes it.
func (m *message) inlineLists() []*field {
	var lists []*field
	for _, f := range m.fields {
		if f.shape == shapeMessage || f.cx.isMap || f.cx.oneof != nil {
			return nil
		}
		if f.shape == shapeList && f.kind == protoreflect.BytesKind {
			lists = append(lists, f)
		}
	}
	return lists
}

// zeroedType is the name of the embedded struct of the fields New zeroes
// in a message with inline lists (a name no message's generated
// identifiers use: those end in Type, KnownFields or a message name).
func (m *message) zeroedType() string { return lowerFirst(m.m.GoIdent.GoName) + "Zeroed" }

// inlName is the name of the inline elements of the bytes list f ("x"+name
// is a field's: "inl"+name is never one).
func inlName(f *field) string { return "inl" + f.goName }

// emitNew emits the allocation of a new m in the runtime arena ra as x:
// TryNew, NewSlow when the slab's chunk is used up; for a message with
// inline lists, TryNewRaw and the zeroing of every field but the inline
// elements.
func emitNew(g *protogen.GeneratedFile, m *message, x, ra string) {
	if len(m.inlineLists()) == 0 {
		g.P(x, " := ", m.typeVar, ".TryNew(", ra, ")")
		g.P("if ", x, " == nil {")
		g.P(x, " = ", m.typeVar, ".NewSlow(", ra, ")")
		g.P("}")
		return
	}
	g.P(x, " := ", m.typeVar, ".TryNewRaw(", ra, ")")
	g.P("if ", x, " == nil {")
	g.P(x, " = ", m.typeVar, ".NewSlow(", ra, ")")
	g.P("} else {")
	g.P(x, ".", m.zeroedType(), " = ", m.zeroedType(), "{}")
	g.P("}")
}
