package gen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// Config is one invocation of the in-process front end (`cornflakes gen`),
// the equivalent of
//
//	protoc -I dir... --go-cornflakes_out=Out --go-cornflakes_opt=Params... Files...
type Config struct {
	// ImportPaths are the directories imports are resolved against (protoc's
	// -I/--proto_path). Empty means the current directory.
	ImportPaths []string
	// Files are the .proto files to generate code for. Like protoc, each is
	// either a path relative to an import path or a file path that lies
	// inside one of ImportPaths (it is then made relative to it).
	Files []string
	// Params are generator parameters (protoc's --go-cornflakes_opt),
	// e.g. "paths=source_relative", "module=example.com/m",
	// "Mfoo.proto=example.com/m/foo;foo". They are joined with commas.
	Params []string
	// Out is the directory generated files are written to by [WriteFiles]
	// (protoc's --go-cornflakes_out). Empty means the current directory.
	Out string
}

// File is one generated file: Name is relative to the output directory
// (with forward slashes, as a protoc plugin reports it).
type File struct {
	Name    string
	Content []byte
}

// Run compiles cfg.Files with protocompile (no protoc needed) and runs the
// same generator as protoc-gen-go-cornflakes on them, in process. It returns
// the generated files without writing them; see [WriteFiles]. Syntax and
// link errors name file:line:col; unsupported constructs are
// [*UnsupportedError]s (errors.Is(err, ErrUnsupported)).
func Run(ctx context.Context, cfg Config) ([]File, error) {
	req, err := Request(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return RunRequest(req)
}

// RunRequest runs the generator on a CodeGeneratorRequest, exactly as the
// protoc plugin does, and returns the generated files.
func RunRequest(req *pluginpb.CodeGeneratorRequest) ([]File, error) {
	req = proto.Clone(req).(*pluginpb.CodeGeneratorRequest)
	withWKT(req)
	plugin, err := PluginOptions().New(req)
	if err != nil {
		return nil, err
	}
	if err := Generate(plugin); err != nil {
		return nil, err
	}
	resp := plugin.Response()
	if resp.Error != nil {
		return nil, errors.New(resp.GetError())
	}
	files := make([]File, 0, len(resp.File))
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return nil, fmt.Errorf("gen: unexpected insertion point %q in %s", f.GetInsertionPoint(), f.GetName())
		}
		files = append(files, File{Name: f.GetName(), Content: []byte(f.GetContent())})
	}
	return files, nil
}

// Request compiles cfg.Files and returns the CodeGeneratorRequest protoc
// would send to a plugin for them: the files to generate, the parameter
// string, and every file they transitively import in topological order,
// with source code info so that errors can name file:line:col.
func Request(ctx context.Context, cfg Config) (*pluginpb.CodeGeneratorRequest, error) {
	if len(cfg.Files) == 0 {
		return nil, errors.New("gen: no .proto files given")
	}
	importPaths := cfg.ImportPaths
	if len(importPaths) == 0 {
		importPaths = []string{"."}
	}
	names := make([]string, 0, len(cfg.Files))
	for _, f := range cfg.Files {
		n, err := protoName(f, importPaths)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}

	var errs []error
	rep := reporter.NewReporter(func(e reporter.ErrorWithPos) error {
		errs = append(errs, e)
		return nil // keep going: report every error at once
	}, nil)
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: importPaths}),
		SourceInfoMode: protocompile.SourceInfoStandard,
		Reporter:       rep,
		MaxParallelism: 1,
	}
	res, err := c.Compile(ctx, names...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err != nil {
		return nil, err
	}

	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: names}
	if p := strings.Join(cfg.Params, ","); p != "" {
		req.Parameter = proto.String(p)
	}
	seen := map[string]bool{}
	var visit func(fd protoreflect.FileDescriptor)
	visit = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := 0; i < fd.Imports().Len(); i++ {
			visit(fd.Imports().Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, fileProto(fd))
	}
	for _, f := range res {
		visit(f)
	}
	return req, nil
}

// fileProto converts a compiled file to its descriptor proto, keeping the
// source code info protocompile computed.
func fileProto(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if r, ok := fd.(interface {
		FileDescriptorProto() *descriptorpb.FileDescriptorProto
	}); ok {
		if p := r.FileDescriptorProto(); p != nil {
			return p
		}
	}
	return protodesc.ToFileDescriptorProto(fd)
}

// protoName maps a command-line .proto argument to its name relative to an
// import path the way protoc does: a file that exists on disk must lie inside
// one of the import paths (the first that contains it wins) and is made
// relative to it; any other name is taken as relative to the import paths.
func protoName(file string, importPaths []string) (string, error) {
	clean := filepath.Clean(file)
	if isWKTFile(file) && !fileExists(clean) {
		return file, nil // protocompile's own copy (WithStandardImports)
	}
	if !fileExists(clean) {
		for _, ip := range importPaths {
			if !filepath.IsAbs(clean) && fileExists(filepath.Join(ip, clean)) {
				return filepath.ToSlash(clean), nil
			}
		}
		return "", fmt.Errorf("%s: no such file (import paths %v)", file, importPaths)
	}
	abs, err := filepath.Abs(clean)
	if err != nil {
		return "", err
	}
	for _, ip := range importPaths {
		ipAbs, err := filepath.Abs(ip)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(ipAbs, abs)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel), nil
		}
	}
	return "", fmt.Errorf("%s: file does not reside within any import path %v (add -I for its directory)", file, importPaths)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// WriteFiles writes files under dir (created as needed), replacing existing
// files. It refuses names that would escape dir.
func WriteFiles(dir string, files []File) error {
	if dir == "" {
		dir = "."
	}
	for _, f := range files {
		name := filepath.FromSlash(f.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("gen: generated file name %q escapes the output directory", f.Name)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
