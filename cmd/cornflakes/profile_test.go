package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartCPUProfile: --cpuprofile writes a profile that pprof can read
// (a gzip stream), an empty path is a no-op, and an unwritable path is an
// error rather than a silent loss of the profile.
func TestStartCPUProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	stop, err := startCPUProfile("test", path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile is not a gzip stream (%d bytes)", len(b))
	}

	stop, err = startCPUProfile("test", "")
	if err != nil {
		t.Fatal(err)
	}
	stop()

	if _, err := startCPUProfile("test", filepath.Join(dir, "missing", "cpu.prof")); err == nil {
		t.Fatal("a profile in a missing directory: no error")
	}
}
