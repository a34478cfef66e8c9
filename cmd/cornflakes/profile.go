package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a CPU profile written to path (a --cpuprofile
// flag) and returns the function that stops it and closes the file; with
// an empty path it does nothing.
func startCPUProfile(cmd, path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: --cpuprofile: %w", cmd, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
