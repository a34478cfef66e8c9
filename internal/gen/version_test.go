package gen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// TestRuntimeVersionCheck compiles a generated package as this generator
// writes it (it builds), as a newer generator would (code for
// wireimpl.Version+1: it must not build) and as an older one below the
// runtime's MinVersion would (it must not build either). The files are
// swapped in with go build -overlay, so the real compiler decides.
func TestRuntimeVersionCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	root, err := FindModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(root, "internal/gen/internal/gentest/other")
	file := filepath.Join(pkg, "other.cornflakes.go")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cur := strconv.Itoa(runtimeVersion)
	check := "_ = wireimpl.EnforceVersion(" + cur + " - wireimpl.MinVersion)\n\t_ = wireimpl.EnforceVersion(wireimpl.Version - " + cur + ")"
	if !strings.Contains(string(src), check) {
		t.Fatalf("%s does not contain the version check\n%s", file, check)
	}
	forVersion := func(v int) string {
		n := strconv.Itoa(v)
		return strings.Replace(string(src), check,
			"_ = wireimpl.EnforceVersion("+n+" - wireimpl.MinVersion)\n\t_ = wireimpl.EnforceVersion(wireimpl.Version - "+n+")", 1)
	}
	build := func(t *testing.T, code string) (string, error) {
		dir := t.TempDir()
		repl := filepath.Join(dir, "other.cornflakes.go")
		if err := os.WriteFile(repl, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		ov, _ := json.Marshal(map[string]map[string]string{"Replace": {file: repl}})
		ovPath := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(gocmd, "build", "-overlay", ovPath, "-o", os.DevNull, ".")
		cmd.Dir = pkg
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		name    string
		version int
		ok      bool
	}{
		{"this generator", wireimpl.Version, true},
		{"newer generator", wireimpl.Version + 1, false},
		{"older than MinVersion", wireimpl.MinVersion - 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := build(t, forVersion(c.version))
			switch {
			case c.ok && err != nil:
				t.Fatalf("code for version %d does not build: %v\n%s", c.version, err, out)
			case !c.ok && err == nil:
				t.Fatalf("code for version %d builds against runtime version %d (MinVersion %d)", c.version, wireimpl.Version, wireimpl.MinVersion)
			case !c.ok && !strings.Contains(out, "EnforceVersion") && !strings.Contains(out, "overflows"):
				t.Fatalf("code for version %d fails for another reason:\n%s", c.version, out)
			}
			t.Logf("version %d: %s", c.version, strings.TrimSpace(out))
		})
	}
}
