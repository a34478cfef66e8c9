package gen

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Field numbers inside descriptor.proto, used to build source paths for
// constructs that have no descriptor of their own.
const (
	fileEditionTag       = 14 // FileDescriptorProto.edition
	fileDependencyTag    = 3  // FileDescriptorProto.dependency
	msgExtensionRangeTag = 5  // DescriptorProto.extension_range
)

// validateFile checks that every construct of f (a file to generate) is one
// the generator supports. It returns all problems at once, each an
// [*UnsupportedError] naming file:line:col and the construct; nil if f is
// fine. Nothing unsupported is ever skipped silently.
func validateFile(f *protogen.File) error {
	fd := f.Desc
	locs := fd.SourceLocations()
	var errs []error
	add := func(loc protoreflect.SourceLocation, construct, hint string) {
		errs = append(errs, unsupported(fd, loc, construct, hint))
	}

	switch fd.Syntax() {
	case protoreflect.Proto2, protoreflect.Proto3:
	default:
		add(locs.ByPath(protoreflect.SourcePath{fileEditionTag}), "edition syntax (edition = ...)", `use syntax = "proto3" or "proto2"`)
	}
	for _, i := range f.Proto.GetWeakDependency() {
		add(locs.ByPath(protoreflect.SourcePath{fileDependencyTag, i}), fmt.Sprintf("weak import %q", fd.Imports().Get(int(i)).Path()), "")
	}
	for _, s := range f.Services {
		validateService(fd, s, add)
	}
	for _, x := range f.Extensions {
		add(locs.ByDescriptor(x.Desc), fmt.Sprintf("extension %s", x.Desc.FullName()), "")
	}
	for _, m := range f.Messages {
		validateMessage(fd, m, add)
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].(*UnsupportedError), errs[j].(*UnsupportedError)
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	return errors.Join(errs...)
}

func validateMessage(fd protoreflect.FileDescriptor, m *protogen.Message, add func(protoreflect.SourceLocation, string, string)) {
	locs := fd.SourceLocations()
	md := m.Desc
	name := md.FullName()
	if md.IsMapEntry() {
		return // generated like any message (emit_map.go)
	}
	if md.Options() != nil {
		if opts := md.Options(); hasMessageSetWireFormat(opts) {
			add(locs.ByDescriptor(md), fmt.Sprintf("message_set_wire_format on message %s", name), "")
		}
	}
	for i := 0; i < md.ExtensionRanges().Len(); i++ {
		r := md.ExtensionRanges().Get(i)
		loc := locs.ByPath(appendPath(locs.ByDescriptor(md).Path, msgExtensionRangeTag, int32(i)))
		if loc.Path == nil {
			loc = locs.ByDescriptor(md)
		}
		add(loc, fmt.Sprintf("extension range %d to %d in message %s", r[0], r[1]-1, name), "extensions are not supported")
	}
	for _, x := range m.Extensions {
		add(locs.ByDescriptor(x.Desc), fmt.Sprintf("extension %s", x.Desc.FullName()), "")
	}
	for _, fl := range m.Fields {
		validateField(fd, fl, add)
	}
	for _, nm := range m.Messages {
		validateMessage(fd, nm, add)
	}
}

func validateField(fd protoreflect.FileDescriptor, fl *protogen.Field, add func(protoreflect.SourceLocation, string, string)) {
	locs := fd.SourceLocations()
	d := fl.Desc
	loc := locs.ByDescriptor(d)
	what := fmt.Sprintf("field %s", d.FullName())
	if d.Kind() == protoreflect.GroupKind {
		add(loc, "group "+what, "use a nested message")
		return
	}
	if d.Number() > wireimpl.MaxSparseFieldNumber {
		add(loc, fmt.Sprintf("field number %d of %s (the Cornflakes wire format allows 1..%d)", d.Number(), what, wireimpl.MaxSparseFieldNumber), "renumber the field")
	}
	switch d.Kind() {
	case protoreflect.MessageKind:
		if p := string(fl.Message.GoIdent.GoImportPath); strings.HasPrefix(p, "google.golang.org/protobuf/") {
			add(loc, fmt.Sprintf("%s of type %s (a protobuf-go type without Cornflakes code; the well-known types with Cornflakes code are those of %s)", what, d.Message().FullName(), strings.Join(wktFiles, ", ")), "define an equivalent message in your own .proto file")
		}
	}
}

// hasMessageSetWireFormat reports the proto2 message_set_wire_format option.
func hasMessageSetWireFormat(opts protoreflect.ProtoMessage) bool {
	m := opts.ProtoReflect()
	f := m.Descriptor().Fields().ByName("message_set_wire_format")
	return f != nil && m.Has(f) && m.Get(f).Bool()
}

func appendPath(p protoreflect.SourcePath, elems ...int32) protoreflect.SourcePath {
	if p == nil {
		return nil
	}
	out := make(protoreflect.SourcePath, 0, len(p)+len(elems))
	return append(append(out, p...), elems...)
}

// checkPackageNames rejects schemas whose generated package-level
// identifiers collide within one Go package (e.g. message M's constructor
// NewM and a message named NewM), across all files generated into it.
func checkPackageNames(p *protogen.Plugin) error {
	type decl struct{ what string }
	seen := map[protogen.GoImportPath]map[string]decl{}
	var errs []error
	add := func(pkg protogen.GoImportPath, name, what string, fd protoreflect.FileDescriptor, d protoreflect.Descriptor) {
		m := seen[pkg]
		if m == nil {
			m = map[string]decl{}
			seen[pkg] = m
		}
		if prev, dup := m[name]; dup {
			e := unsupported(fd, fd.SourceLocations().ByDescriptor(d),
				fmt.Sprintf("%s: its generated Go identifier %s collides with that of %s", what, name, prev.what), "rename one of them")
			errs = append(errs, e)
			return
		}
		m[name] = decl{what}
	}
	walkEnum := func(pkg protogen.GoImportPath, fd protoreflect.FileDescriptor, e *protogen.Enum) {
		what := "enum " + string(e.Desc.FullName())
		add(pkg, e.GoIdent.GoName, what, fd, e.Desc)
		for _, v := range e.Values {
			add(pkg, v.GoIdent.GoName, "enum value "+string(v.Desc.FullName()), fd, v.Desc)
		}
	}
	var walkMsg func(pkg protogen.GoImportPath, fd protoreflect.FileDescriptor, m *protogen.Message)
	walkMsg = func(pkg protogen.GoImportPath, fd protoreflect.FileDescriptor, m *protogen.Message) {
		what := "message " + string(m.Desc.FullName())
		add(pkg, m.GoIdent.GoName, what, fd, m.Desc)
		add(pkg, "New"+m.GoIdent.GoName, what, fd, m.Desc)
		add(pkg, "Decode"+m.GoIdent.GoName, what, fd, m.Desc)
		add(pkg, lowerFirst(m.GoIdent.GoName)+"Type", what, fd, m.Desc)
		for _, o := range m.Oneofs {
			if o.Desc.IsSynthetic() {
				continue
			}
			ow := "oneof " + string(o.Desc.FullName())
			add(pkg, oneofCaseType(o), ow, fd, o.Desc)
			add(pkg, oneofNotSet(o), ow, fd, o.Desc)
			for _, f := range o.Fields {
				add(pkg, oneofCase(f), "oneof member "+string(f.Desc.FullName()), fd, f.Desc)
			}
		}
		for _, f := range m.Fields {
			if f.Desc.IsMap() {
				add(pkg, m.GoIdent.GoName+"_"+f.GoName+"Map", "map field "+string(f.Desc.FullName()), fd, f.Desc)
			}
		}
		for _, e := range m.Enums {
			walkEnum(pkg, fd, e)
		}
		for _, n := range m.Messages {
			walkMsg(pkg, fd, n)
		}
	}
	for _, f := range p.Files {
		if !f.Generate {
			continue
		}
		for _, e := range f.Enums {
			walkEnum(f.GoImportPath, f.Desc, e)
		}
		for _, m := range f.Messages {
			walkMsg(f.GoImportPath, f.Desc, m)
		}
	}
	return errors.Join(errs...)
}
