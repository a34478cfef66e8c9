package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/netns"
)

func TestNetnsUpDown(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	prefix := fmt.Sprintf("cfxclit%d", os.Getpid())
	t.Cleanup(func() { _, _ = netns.RemoveAll(prefix) }) // also when the test fails
	var out, errb bytes.Buffer
	if code := run([]string{"netns", "up", "--prefix", prefix, "--mtu", "9000", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("up: exit %d: %s", code, errb.String())
	}
	var up struct {
		MTU int      `json:"mtu"`
		A   netnsEnd `json:"a"`
		B   netnsEnd `json:"b"`
	}
	if err := json.Unmarshal(out.Bytes(), &up); err != nil || up.MTU != 9000 || up.A.MAC == "" || up.B.IPv4 != "10.77.0.2" {
		t.Fatalf("up output %q: %v", out.String(), err)
	}
	if names, _ := netns.List(prefix); len(names) != 2 {
		t.Fatalf("after up: namespaces %v, want 2", names)
	}
	out.Reset()
	if code := run([]string{"netns", "down", "--prefix", prefix}, &out, &errb); code != 0 {
		t.Fatalf("down: exit %d: %s", code, errb.String())
	}
	if names, _ := netns.List(prefix); len(names) != 0 {
		t.Fatalf("after down: namespaces %v remain", names)
	}
	if code := run([]string{"netns", "sideways"}, &out, &errb); code != 2 {
		t.Errorf("bad subcommand: exit %d, want 2", code)
	}
}
