package mem_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TestDefaultSpaceFallback runs a child test process under an 8 GiB
// address-space limit, where the 64 GiB default reservation fails, and
// checks that the default space falls back to a smaller reservation.
func TestDefaultSpaceFallback(t *testing.T) {
	if os.Getenv("MEM_FALLBACK_CHILD") == "1" {
		s, err := mem.DefaultSpace()
		if err != nil {
			t.Fatalf("DefaultSpace under an address-space limit: %v", err)
		}
		if s.Len() >= mem.DefaultSpaceSize || s.Len() < 1<<30 {
			t.Fatalf("default space of %d bytes", s.Len())
		}
		p, err := mem.NewPool(mem.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Alloc(100)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := mem.Recover(b.Bytes()); !ok {
			t.Fatal("Recover failed")
		}
		t.Logf("fallback default space: %d GiB", s.Len()>>30)
		return
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit not installed")
	}
	cmd := exec.Command(prlimit, "--as=8589934592", os.Args[0], "-test.run=^TestDefaultSpaceFallback$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "MEM_FALLBACK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "fallback default space") {
		t.Fatalf("child did not run the check:\n%s", out)
	}
}
