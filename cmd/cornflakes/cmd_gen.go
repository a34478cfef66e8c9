package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/cornflakes-go/cornflakes/internal/gen"
)

func init() {
	register(&command{
		name:    "gen",
		summary: "generate Cornflakes Go code from .proto files (no protoc needed)",
		run: func(args []string, stdout, stderr io.Writer) error {
			inv, err := gen.ParseArgs(args, stderr)
			if err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return nil // -h: usage printed, not an error
				}
				if errors.Is(err, gen.ErrUsage) {
					return errUsage
				}
				return err
			}
			return gen.Execute(context.Background(), inv, stderr)
		},
	})
}
