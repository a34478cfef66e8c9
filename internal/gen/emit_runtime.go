package gen

import (
	"google.golang.org/protobuf/compiler/protogen"

	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// Generated code uses two packages: the application API (wire: the arena,
// the list types its getters return, Object and its sizes, the errors) and
// the generated-code runtime (runtime/wireimpl: everything the struct
// fields and the hooks are made of). wire's types are defined over
// wireimpl's, so generated code converts pointers between them (free).
var (
	wirePkg    = protogen.GoImportPath("github.com/cornflakes-go/cornflakes/wire")
	runtimePkg = protogen.GoImportPath("github.com/cornflakes-go/cornflakes/runtime/wireimpl")
)

// runtimeVersion is the runtime version the generated code is made for:
// the one of the runtime this generator is built with (wireimpl.Version).
// Every generated file checks it at compile time (genVersionCheck).
const runtimeVersion = wireimpl.Version

// appNames are the identifiers generated code takes from package wire.
var appNames = map[string]bool{
	"Arena": true, "Sizes": true, "EntrySink": true, "Object": true, "Msg": true,
	"Clone": true, "ErrArenaReset": true,
}

// wireIdent returns the identifier name of package wire when it is part of
// the application API, else of the runtime package.
func wireIdent(name string) protogen.GoIdent {
	if appNames[name] {
		return wirePkg.Ident(name)
	}
	return runtimePkg.Ident(name)
}

// apiIdent returns the identifier name of package wire (a list type
// returned by a getter).
func apiIdent(name string) protogen.GoIdent { return wirePkg.Ident(name) }

// toRuntimeArena returns the expression converting the *wire.Arena a to
// the runtime's *wireimpl.Arena.
func toRuntimeArena(g *protogen.GeneratedFile, a string) string {
	return "(*" + g.QualifiedGoIdent(runtimePkg.Ident("Arena")) + ")(" + a + ")"
}

// toAppArena returns the expression converting the runtime's arena a to a
// *wire.Arena.
func toAppArena(g *protogen.GeneratedFile, a string) string {
	return "(*" + g.QualifiedGoIdent(wirePkg.Ident("Arena")) + ")(" + a + ")"
}

// genVersionCheck emits the constants that make a mismatch between this
// generator and the runtime a compile error (wireimpl.EnforceVersion).
func genVersionCheck(g *protogen.GeneratedFile) {
	ev := g.QualifiedGoIdent(runtimePkg.Ident("EnforceVersion"))
	g.P("// This code was generated for version ", runtimeVersion, " of the runtime; the")
	g.P("// constants fail to compile against a runtime that does not support it.")
	g.P("const (")
	g.P("_ = ", ev, "(", runtimeVersion, " - ", runtimePkg.Ident("MinVersion"), ")")
	g.P("_ = ", ev, "(", runtimePkg.Ident("Version"), " - ", runtimeVersion, ")")
	g.P(")")
	g.P()
}
