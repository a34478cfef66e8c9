// Command protoc-gen-go-cornflakes generates Cornflakes Go code (message
// types with hybrid zero-copy serialization, and typed service stubs) from
// .proto files, one <name>.cornflakes.go per input file. It is the light
// way to run the generator from one's own module: its import graph holds
// only the generator and its parser (protobuf-go, protocompile), none of
// the benchmark dependencies of the cornflakes command.
//
// Without protoc, with `cornflakes gen`'s arguments:
//
//	go run github.com/cornflakes-go/cornflakes/cmd/protoc-gen-go-cornflakes -I . --out . --go_opt paths=source_relative foo.proto
//	go get -tool github.com/cornflakes-go/cornflakes/cmd/protoc-gen-go-cornflakes   # then:
//	go tool protoc-gen-go-cornflakes -I . --out . --go_opt paths=source_relative foo.proto
//
// As a protoc plugin (no arguments: protoc's request on stdin):
//
//	protoc -I . --go-cornflakes_out=. --go-cornflakes_opt=paths=source_relative foo.proto
//
// It accepts protoc-gen-go's parameters (paths=, module=, M<file>=...);
// see docs/CODEGEN.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cornflakes-go/cornflakes/internal/gen"
)

func main() {
	if len(os.Args) < 2 {
		gen.RunPlugin() // protoc passes nothing on the command line
		return
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is `cornflakes gen` with args: 0 on success, 2 on a usage error, 1
// on any other.
func run(args []string, stderr io.Writer) int {
	inv, err := gen.ParseArgs(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, gen.ErrUsage):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "protoc-gen-go-cornflakes: %v\n", err)
		return 1
	}
	if err := gen.Execute(context.Background(), inv, stderr); err != nil {
		fmt.Fprintf(stderr, "protoc-gen-go-cornflakes: %v\n", err)
		return 1
	}
	return 0
}
