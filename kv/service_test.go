package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

func dialService(t *testing.T, e *env) *ServiceClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, err := e.cl.DialService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Close(); err != nil {
			t.Errorf("service client close: %v", err)
		}
	})
	return sc
}

// TestService: the typed service (generated stubs, service.Client) over
// every test datapath, memnet with loss included: every operation the
// helpers cover, a not-found key, values of both sides of the copy
// threshold, and 16 goroutines sharing the client, every reply checked.
func TestService(t *testing.T) {
	for _, d := range testDatapaths {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t, d.dp, d.faults, 2)
			sc := dialService(t, e)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := wire.NewArena()
			big := bytes.Repeat([]byte("v"), 4096)
			if err := sc.Put(ctx, a, []byte("k"), big); err != nil {
				t.Fatal(err)
			}
			if v, err := sc.Get(ctx, a, []byte("k")); err != nil || !bytes.Equal(v, big) {
				t.Fatalf("Get k: %d bytes, %v", len(v), err)
			}
			if _, err := sc.Get(ctx, a, []byte("missing")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get missing: %v, want ErrNotFound", err)
			}
			for _, v := range []string{"a", "bb", "ccc"} {
				if err := sc.AppendToList(ctx, a, []byte("l"), []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			l, err := sc.GetList(ctx, a, []byte("l"))
			if err != nil || len(l) != 3 || string(l[0]) != "a" || string(l[2]) != "ccc" {
				t.Fatalf("GetList: %q, %v", l, err)
			}
			req := kvpb.NewReq(a)
			req.InitKeys(1).Append([]byte("l"))
			req.SetIndex(1)
			if resp, err := check(sc.KV.GetFromList(ctx, a, req)); err != nil || string(resp.GetVal()) != "bb" {
				t.Fatalf("GetFromList 1: %v", err)
			}
			if err := sc.Delete(ctx, a, []byte("k")); err != nil {
				t.Fatal(err)
			}
			if err := sc.Delete(ctx, a, []byte("k")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second Delete: %v, want ErrNotFound", err)
			}
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}

			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := wire.NewArena()
					for i := 0; i < 20; i++ {
						k := []byte(fmt.Sprintf("g%d-%d", g, i))
						v := bytes.Repeat([]byte{byte(g)}, 100+i*50)
						err := sc.Put(ctx, a, k, v)
						var got []byte
						if err == nil {
							got, err = sc.Get(ctx, a, k)
						}
						if err == nil && !bytes.Equal(got, v) {
							err = fmt.Errorf("%s: wrong value (%d bytes)", k, len(got))
						}
						if rerr := a.Reset(); err == nil {
							err = rerr
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if st := e.srv.Stats(); st.Requests < 16*40 {
				t.Errorf("server counted %d requests, want at least %d", st.Requests, 16*40)
			}
		})
	}
}

// TestServiceBadRequest: a request that breaks the store's limits is
// answered with the error status (ErrServer at the client), not a failure
// of the call.
func TestServiceBadRequest(t *testing.T) {
	e := newEnv(t, DatapathMemnet, memnet.Faults{}, 1)
	sc := dialService(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	req := kvpb.NewReq(a)
	req.InitKeys(1).Append([]byte("k"))
	req.SetIndex(MaxListLen + 1)
	if _, err := check(sc.KV.GetFromList(ctx, a, req)); !errors.Is(err, ErrServer) {
		t.Fatalf("index beyond MaxListLen: %v, want ErrServer", err)
	}
	req = kvpb.NewReq(a)
	if _, err := check(sc.KV.Put(ctx, a, req)); !errors.Is(err, ErrServer) {
		t.Fatalf("Put without a key: %v, want ErrServer", err)
	}
	if st := e.srv.Stats(); st.Errors != 2 {
		t.Errorf("server counted %d errors, want 2", st.Errors)
	}
}

// TestServiceKeys: with ServerConfig.Keys the typed service answers reads
// and refuses writes with PermissionDenied (a handler does not see the
// caller's role; writes go through the raw request types).
func TestServiceKeys(t *testing.T) {
	keys, err := ParseCredentials(strings.NewReader(testCredentials))
	if err != nil {
		t.Fatal(err)
	}
	kr, err := rpc.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	nw := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	srv, err := NewServer(ServerConfig{Datapath: DatapathMemnet, Memnet: nw, PoolBytes: 64 << 20, Keys: kr})
	if err != nil {
		t.Fatal(err)
	}
	cfg := ClientConfig{Server: srv.Addr(), Datapath: DatapathMemnet, Memnet: nw}
	if cfg.Nexus.Credential, err = Credential(keys, "writer"); err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	e := &env{srv: srv, cl: cl}
	sc := dialService(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	if err := sc.Put(ctx, a, []byte("k"), []byte("v")); service.CodeOf(err) != service.PermissionDenied {
		t.Fatalf("Put with Keys set: %v, want PermissionDenied", err)
	}
	if _, err := sc.Get(ctx, a, []byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get with Keys set: %v, want ErrNotFound", err)
	}
	if st := srv.Stats(); st.Denied != 1 {
		t.Errorf("server counted %d denied, want 1", st.Denied)
	}
}
