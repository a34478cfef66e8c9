// Command protoc-gen-go-cornflakes is a protoc plugin that generates
// Cornflakes message types (hybrid zero-copy serialization) from .proto
// files, one <name>.cornflakes.go per input file:
//
//	go install github.com/cornflakes-go/cornflakes/cmd/protoc-gen-go-cornflakes
//	protoc -I . --go-cornflakes_out=. --go-cornflakes_opt=paths=source_relative foo.proto
//
// It accepts protoc-gen-go's parameters (paths=, module=, M<file>=...).
// `cornflakes gen` runs the same generator without protoc; see
// docs/CODEGEN.md.
package main

import "github.com/cornflakes-go/cornflakes/internal/gen"

func main() { gen.RunPlugin() }
