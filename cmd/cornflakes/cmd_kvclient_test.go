package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/kv"
)

// The kv client subcommands against a running server over kernel UDP:
// put, get (one key and several), append and getlist, del, and the exit
// status of a missing key.
func TestKVClientCommands(t *testing.T) {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	addr := srv.Addr().String()
	steps := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"put", "greeting", "hello"}, 0, ""},
		{[]string{"put", "--serializer", "flatbuffers", "name", "cornflakes"}, 0, ""},
		{[]string{"get", "greeting"}, 0, "hello\n"},
		{[]string{"get", "--serializer", "capnp", "greeting", "name"}, 0, "hello\ncornflakes\n"},
		{[]string{"append", "list", "a"}, 0, ""},
		{[]string{"append", "list", "b"}, 0, ""},
		{[]string{"getlist", "--serializer", "protobuf", "list"}, 0, "a\nb\n"},
		{[]string{"del", "greeting"}, 0, ""},
		{[]string{"get", "greeting"}, 1, ""},
		{[]string{"put", "only-a-key"}, 2, ""},
		{[]string{"get"}, 2, ""},
		{[]string{"get", "--serializer", "morse", "k"}, 1, ""},
	}
	for _, st := range steps {
		var out, errb bytes.Buffer
		args := append([]string{"kv", st.args[0], "--server", addr}, st.args[1:]...)
		code := run(args, &out, &errb)
		if code != st.code || out.String() != st.out {
			t.Errorf("kv %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q",
				strings.Join(st.args, " "), code, out.String(), errb.String(), st.code, st.out)
		}
	}
	if code := run([]string{"kv", "get", "--server", "nowhere", "k"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
		t.Errorf("bad --server: exit %d", code)
	}
}

// kv serve runs for --duration, prints a line of counters every --stats
// interval and its totals at exit.
func TestKVServeStats(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"kv", "serve", "--duration", "350ms", "--stats", "100ms", "--pool-mb", "64", "--workload", "ycsb:records=50"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "listening on 127.0.0.1:") {
		t.Errorf("stdout %q", out.String())
	}
	if n := strings.Count(errb.String(), "req/s"); n < 2 || !strings.Contains(errb.String(), "50 keys") || !strings.Contains(errb.String(), "requests, 0 errors") {
		t.Errorf("%d stats lines; stderr:\n%s", n, errb.String())
	}
}
