package wireimpl

import (
	"os/exec"
	"strings"
	"testing"
)

// TestResetInlinable checks that Arena.Reset stays within the compiler's
// inlining budget, and with it the public wire.Arena.Reset that wraps it:
// the callers' per-batch Reset (a typed call's client and server, the echo
// and kv servers) runs its common case without a call. It asks the
// compiler (go build -gcflags=-m), so it is skipped in -short mode and
// when the go command is not available.
func TestResetInlinable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	const (
		impl = "github.com/cornflakes-go/cornflakes/runtime/wireimpl"
		wire = "github.com/cornflakes-go/cornflakes/wire"
	)
	out, err := exec.Command(gobin, "build", "-o", "/dev/null", "-gcflags="+impl+"=-m", "-gcflags="+wire+"=-m", impl, wire).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	found := func(file, msg string) bool {
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.Contains(line, file) && strings.HasSuffix(strings.TrimSpace(line), msg) {
				return true
			}
		}
		return false
	}
	for _, c := range [][2]string{
		{"/arena.go:", "can inline (*Arena).Reset"},
		{"/api_arena.go:", "can inline (*Arena).Reset"},
		{"/api_arena.go:", "inlining call to wireimpl.(*Arena).Reset"},
	} {
		if !found(c[0], c[1]) {
			t.Errorf("the compiler did not report %q in %s*", c[1], c[0])
		}
	}
	if t.Failed() {
		t.Logf("go build -gcflags=-m:\n%s", out)
	}
}
