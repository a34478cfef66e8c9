package kv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/workload"
)

const testCredentials = `# name role secret
reader read 00112233445566778899aabbccddeeff
writer readwrite ffeeddccbbaa99887766554433221100
`

// TestCredentialRoles: with keys, a client without a credential gets no
// session; a read-only credential reads but cannot write (the client sees
// rpc.ErrDenied, the store is unchanged, the server counts it); a
// read-write one does both.
func TestCredentialRoles(t *testing.T) {
	keys, err := ParseCredentials(strings.NewReader(testCredentials))
	if err != nil {
		t.Fatal(err)
	}
	kr, err := rpc.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Datapath: DatapathUDP, PoolBytes: 64 << 20, Keys: kr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	dial := func(user string) (*Conn, error) {
		cfg := ClientConfig{Server: srv.Addr(), Datapath: DatapathUDP, ConnectTimeout: 5 * time.Second}
		if user != "" {
			if cfg.Nexus.Credential, err = Credential(keys, user); err != nil {
				t.Fatal(err)
			}
		}
		cl, err := NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		cn, err := cl.Dial(CodecCFHybrid)
		if err == nil {
			t.Cleanup(func() { _ = cn.Close() })
		}
		return cn, err
	}
	if _, err := dial(""); !errors.Is(err, rpc.ErrAuth) {
		t.Fatalf("dial without a credential: %v, want rpc.ErrAuth", err)
	}
	if sec := srv.Security(); sec.AuthFailures == 0 {
		t.Fatalf("the refused handshake is not counted: %+v", sec)
	}
	w, err := dial("writer")
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, w, req(workload.OpPut, []string{"k"}, []string{"v1"}, 0)); got.Status != workload.StatusOK {
		t.Fatalf("writer put: %v", got.Status)
	}
	r, err := dial("reader")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []*workload.Request{
		req(workload.OpPut, []string{"k"}, []string{"v2"}, 0),
		req(workload.OpDelete, []string{"k"}, nil, 0),
		req(workload.OpAppendToList, []string{"l"}, []string{"x"}, 0),
	} {
		if got := call(t, r, q); got.Status != workload.StatusError || !errors.Is(r.LastError, rpc.ErrDenied) {
			t.Fatalf("reader %v: %v (%v), want denied", q.Op, got.Status, r.LastError)
		}
	}
	got := call(t, r, req(workload.OpGet, []string{"k"}, nil, 0))
	if got.Status != workload.StatusOK || len(got.Values) != 1 || string(got.Values[0]) != "v1" {
		t.Fatalf("reader get: %v %q", got.Status, got.Values)
	}
	if st := srv.Stats(); st.Denied != 3 {
		t.Fatalf("Denied = %d, want 3", st.Denied)
	}
	if s := srv.Security().String(); !strings.Contains(s, "3 denied") {
		t.Fatalf("exit line %q", s)
	}
}

func TestParseCredentials(t *testing.T) {
	keys, err := ParseCredentials(strings.NewReader(testCredentials))
	if err != nil || len(keys) != 2 || keys[0].Name != "reader" || keys[0].Role != RoleRead || keys[1].Role != RoleReadWrite {
		t.Fatalf("%+v, %v", keys, err)
	}
	for _, bad := range []string{
		"a read", // two fields
		"a write 00112233445566778899aabbccddeeff", // role
		"a read 0011", // short secret
		"a read zz112233445566778899aabbccddeeff", // not hex
		"a-name-far-too-long-for-it read 00112233445566778899aabbccddeeff",
		strings.Repeat("x", 5000),
	} {
		if _, err := ParseCredentials(strings.NewReader(bad)); !errors.Is(err, ErrCredentials) {
			t.Errorf("%.40q: %v", bad, err)
		}
	}
	if _, err := Credential(keys, ""); err == nil {
		t.Error("two credentials and no name: accepted")
	}
	if c, err := Credential(keys, "writer"); err != nil || c.Name != "writer" {
		t.Errorf("Credential(writer) = %v, %v", c, err)
	}
}

func FuzzParseCredentials(f *testing.F) {
	f.Add(testCredentials)
	f.Add("a read 00112233445566778899aabbccddeeff\n\n# c\n")
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParseCredentials(strings.NewReader(s))
		if err != nil {
			return
		}
		if _, err := rpc.NewKeyring(keys...); err != nil && !strings.Contains(err.Error(), "twice") {
			t.Fatalf("parsed keys the keyring refuses: %v", err)
		}
	})
}

// rss is this process's resident set in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	n, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n * int64(os.Getpagesize())
}

// TestMemoryReturnsAfterBurst: 1 GiB of 1 MiB values is stored and
// deleted; within a minute the process's RSS is back below twice what it
// was before the burst (the store's and the endpoints' pools return their
// idle regions to the OS).
func TestMemoryReturnsAfterBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1 GiB")
	}
	const size, n = 1 << 20, 1024
	srv, err := NewServer(ServerConfig{Datapath: DatapathUDP, PoolBytes: 2 << 30, PoolIdle: time.Second,
		RPC: rpc.EndpointConfig{PoolIdle: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	cl, err := NewClient(ClientConfig{Server: srv.Addr(), Datapath: DatapathUDP, RPC: rpc.EndpointConfig{PoolIdle: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := cl.Dial(CodecCFHybrid)
	if err != nil {
		t.Fatal(err)
	}
	v := val(size, 3)
	call(t, cn, req(workload.OpPut, []string{"warm"}, []string{v}, 0))
	call(t, cn, req(workload.OpDelete, []string{"warm"}, nil, 0))
	time.Sleep(3 * time.Second) // the warm-up's buffers are trimmed too: idle is idle
	idle := rss(t)
	for i := 0; i < n; i++ {
		if got := call(t, cn, req(workload.OpPut, []string{fmt.Sprint("k", i)}, []string{v}, 0)); got.Status != workload.StatusOK {
			t.Fatalf("put %d: %v (%v)", i, got.Status, cn.LastError)
		}
	}
	peak := rss(t)
	for i := 0; i < n; i++ {
		call(t, cn, req(workload.OpDelete, []string{fmt.Sprint("k", i)}, nil, 0))
	}
	_ = cn.Close()
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	now := rss(t)
	for now >= 2*idle && time.Since(start) < time.Minute {
		time.Sleep(500 * time.Millisecond)
		now = rss(t)
	}
	t.Logf("RSS idle %d MiB, after the 1 GiB burst %d MiB, %v after deleting %d MiB; %s",
		idle>>20, peak>>20, time.Since(start).Round(100*time.Millisecond), now>>20, srv.Security())
	if peak < idle+n*size/2 {
		t.Fatalf("the burst did not grow RSS (%d → %d MiB): not a test of anything", idle>>20, peak>>20)
	}
	if now >= 2*idle {
		t.Fatalf("RSS %d MiB a minute after the burst, idle was %d MiB", now>>20, idle>>20)
	}
}
