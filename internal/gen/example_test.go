package gen_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cornflakes-go/cornflakes/internal/gen"
)

// Run compiles .proto files in process (no protoc) and returns the
// generated Go files; WriteFiles would write them under Config.Out.
func ExampleRun() {
	files, err := gen.Run(context.Background(), gen.Config{
		ImportPaths: []string{"testdata/golden"},
		Files:       []string{"other/other.proto"},
		Params:      []string{"paths=source_relative"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		fmt.Println(f.Name, strings.HasPrefix(string(f.Content), gen.Header))
	}
	// Output:
	// other/other.cornflakes.go true
}

// Unsupported constructs are errors that name file:line:col.
func ExampleRun_unsupported() {
	_, err := gen.Run(context.Background(), gen.Config{
		ImportPaths: []string{"testdata/reject"},
		Files:       []string{"group.proto"},
	})
	fmt.Println(err)
	// Output:
	// group.proto:6:3: group field reject.M.g: not supported by protoc-gen-go-cornflakes (use a nested message)
}

// ParseArgs and Execute are the whole of `cornflakes gen`.
func ExampleExecute() {
	inv, err := gen.ParseArgs([]string{"--check", "--manifest", "generated.txt"}, os.Stderr)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gen.Execute(context.Background(), inv, os.Stderr))
	// Output:
	// <nil>
}
