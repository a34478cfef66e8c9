package gen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// Invocation is a parsed `cornflakes gen` command line.
type Invocation struct {
	Config
	// Manifest, if set, names a file of invocations (one command line per
	// line, see [ReadManifest]) to run instead of Config.
	Manifest string
	// Check reports stale files instead of writing them.
	Check bool
}

// ParseArgs parses the arguments of `cornflakes gen`:
//
//	cornflakes gen [-I dir]... [--out dir] [--go_opt k=v[,k=v]]... files.proto...
//	cornflakes gen [--check] --manifest internal/gen/generated.txt
//
// -I (alias --proto_path) and --go_opt (alias --go-cornflakes_opt) repeat,
// as with protoc. Flag errors are printed to output and wrap [ErrUsage].
func ParseArgs(args []string, output io.Writer) (*Invocation, error) {
	inv := &Invocation{}
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(output)
	var ips, opts stringsFlag
	fs.Var(&ips, "I", "directory to resolve imports in (repeatable; default .)")
	fs.Var(&ips, "proto_path", "same as -I")
	fs.Var(&opts, "go_opt", "generator parameter(s) k=v[,k=v] as for protoc's --go-cornflakes_opt: paths=source_relative, module=..., M<file>=<importpath> (repeatable)")
	fs.Var(&opts, "go-cornflakes_opt", "same as --go_opt")
	fs.StringVar(&inv.Out, "out", ".", "output directory (protoc's --go-cornflakes_out)")
	fs.StringVar(&inv.Manifest, "manifest", "", "regenerate every invocation listed in this manifest file (relative to the directory containing go.mod)")
	fs.BoolVar(&inv.Check, "check", false, "do not write: fail if any generated file differs from the file on disk")
	fs.Usage = func() {
		fmt.Fprintln(output, "usage: cornflakes gen [-I dir]... [--out dir] [--go_opt k=v]... files.proto...")
		fmt.Fprintln(output, "       cornflakes gen [--check] --manifest internal/gen/generated.txt")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		// Wraps both ErrUsage and the flag error (flag.ErrHelp for -h).
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	inv.ImportPaths = ips
	inv.Params = opts
	inv.Files = fs.Args()
	if inv.Manifest == "" && len(inv.Files) == 0 {
		fmt.Fprintln(output, "cornflakes gen: no .proto files given")
		fs.Usage()
		return nil, fmt.Errorf("%w: no .proto files", ErrUsage)
	}
	if inv.Manifest != "" && (len(inv.Files) > 0 || len(ips) > 0 || len(opts) > 0) {
		fmt.Fprintln(output, "cornflakes gen: --manifest cannot be combined with files, -I or --go_opt")
		return nil, fmt.Errorf("%w: --manifest with other arguments", ErrUsage)
	}
	return inv, nil
}

// ManifestEntry is one line of a manifest: a `cornflakes gen` command line
// relative to the manifest's root directory.
type ManifestEntry struct {
	Line int    // 1-based line in the manifest
	Args string // the command line as written
	Config
}

// ReadManifest reads a manifest of generator invocations. Each non-empty
// line that does not start with '#' holds the arguments of one `cornflakes
// gen` run (split on spaces; no quoting), with paths relative to root (the
// directory holding go.mod). The project's manifest is
// internal/gen/generated.txt; the staleness test regenerates every entry.
func ReadManifest(path string) ([]ManifestEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []ManifestEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		inv, err := ParseArgs(strings.Fields(line), io.Discard)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if inv.Manifest != "" || inv.Check {
			return nil, fmt.Errorf("%s:%d: --manifest and --check are not allowed in a manifest", path, n)
		}
		for _, p := range append(append([]string{inv.Out}, inv.ImportPaths...), inv.Files...) {
			if filepath.IsAbs(p) {
				return nil, fmt.Errorf("%s:%d: %s: paths in a manifest are relative to the repository root", path, n, p)
			}
		}
		out = append(out, ManifestEntry{Line: n, Args: line, Config: inv.Config})
	}
	return out, sc.Err()
}

// Rooted returns c with its import paths, files on disk and output
// directory made relative to root instead of the working directory.
func (c Config) Rooted(root string) Config {
	r := c
	r.ImportPaths = nil
	for _, ip := range c.ImportPaths {
		r.ImportPaths = append(r.ImportPaths, filepath.Join(root, ip))
	}
	if len(r.ImportPaths) == 0 {
		r.ImportPaths = []string{root}
	}
	r.Files = nil
	for _, f := range c.Files {
		// A file given as a path on disk is rooted; a name relative to an
		// import path is kept as is.
		if fileExists(filepath.Join(root, f)) {
			f = filepath.Join(root, f)
		}
		r.Files = append(r.Files, f)
	}
	r.Out = filepath.Join(root, c.Out)
	return r
}

// Stale is one generated file that differs from the file on disk.
type Stale struct {
	Path   string // file on disk
	Reason string // "missing" or "differs"
}

// Compare generates c and reports the files whose content differs from what
// is on disk under c.Out. It writes nothing.
func Compare(ctx context.Context, c Config) (files []File, stale []Stale, err error) {
	files, err = Run(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		p := filepath.Join(c.Out, filepath.FromSlash(f.Name))
		old, err := os.ReadFile(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			stale = append(stale, Stale{Path: p, Reason: "missing"})
		case err != nil:
			return nil, nil, err
		case !bytes.Equal(old, f.Content):
			stale = append(stale, Stale{Path: p, Reason: "differs"})
		}
	}
	return files, stale, nil
}

// FindModuleRoot returns the closest directory at or above dir that holds a
// go.mod file.
func FindModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("gen: no go.mod at or above %s", dir)
		}
		d = parent
	}
}

// ErrStale is returned by [Execute] in --check mode when a generated file on
// disk differs from what the generator produces.
var ErrStale = errors.New("generated files are stale")

// Execute carries out a parsed `cornflakes gen` invocation: it generates the
// files (of inv.Config, or of every manifest entry) and writes them, or with
// inv.Check compares them with the files on disk and returns an error
// wrapping [ErrStale] listing the stale ones. Progress goes to log.
func Execute(ctx context.Context, inv *Invocation, log io.Writer) error {
	type job struct {
		name string
		cfg  Config
	}
	var jobs []job
	if inv.Manifest != "" {
		entries, err := ReadManifest(inv.Manifest)
		if err != nil {
			return err
		}
		root, err := FindModuleRoot(filepath.Dir(inv.Manifest))
		if err != nil {
			return err
		}
		for _, e := range entries {
			jobs = append(jobs, job{fmt.Sprintf("%s:%d", inv.Manifest, e.Line), e.Config.Rooted(root)})
		}
	} else {
		jobs = append(jobs, job{"", inv.Config})
	}
	var stale []string
	for _, j := range jobs {
		files, st, err := Compare(ctx, j.cfg)
		if err != nil {
			if j.name != "" {
				return fmt.Errorf("%s: %w", j.name, err)
			}
			return err
		}
		for _, s := range st {
			stale = append(stale, fmt.Sprintf("%s (%s)", s.Path, s.Reason))
		}
		if inv.Check {
			continue
		}
		if err := WriteFiles(j.cfg.Out, files); err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintf(log, "wrote %s\n", filepath.Join(j.cfg.Out, filepath.FromSlash(f.Name)))
		}
	}
	if inv.Check && len(stale) > 0 {
		return fmt.Errorf("%w:\n\t%s\nregenerate with: go run ./cmd/cornflakes gen --manifest internal/gen/generated.txt", ErrStale, strings.Join(stale, "\n\t"))
	}
	return nil
}
