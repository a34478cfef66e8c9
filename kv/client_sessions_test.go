package kv

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestClientSessions: a connection with several sessions per server
// endpoint (ClientConfig.Sessions) serves a checked closed loop with more
// requests in flight than one session's window, on shm with two sharded
// server endpoints; Send spreads the requests of each endpoint over its
// sessions (fewest in flight first), and every session's count returns to
// zero.
func TestClientSessions(t *testing.T) {
	const endpoints, sessions = 2, 3
	srv, err := NewServer(ServerConfig{Datapath: DatapathShm, Endpoints: endpoints, PoolBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	}()
	cl, err := NewClient(ClientConfig{Server: srv.Addr(), Endpoints: endpoints, Sessions: sessions, Datapath: DatapathShm})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
	}()
	w, err := workload.Parse("twitter:keys=500")
	if err != nil {
		t.Fatal(err)
	}
	if err := preload(context.Background(), cl, w); err != nil {
		t.Fatal(err)
	}

	cn, err := cl.Dial(CodecCFHybrid)
	if err != nil {
		t.Fatal(err)
	}
	if len(cn.sess) != endpoints*sessions {
		t.Fatalf("%d sessions, want %d", len(cn.sess), endpoints*sessions)
	}
	// Requests to one endpoint fill its sessions in turn.
	st := w.NewStream(0, 1, 1)
	var req workload.Request
	perEP := map[int]int{}
	for id := uint64(0); id < 12; id++ {
		st.Next(&req)
		if err := cn.Send(id, &req); err != nil {
			t.Fatal(err)
		}
		perEP[ShardOf(req.Keys[0], endpoints)]++
	}
	for ep, n := range perEP {
		for j := range sessions {
			got, want := int(cn.inSess[ep*sessions+j]), n/sessions
			if got < want || got > want+1 {
				t.Errorf("endpoint %d session %d: %d in flight of the endpoint's %d", ep, j, got, n)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	done := 0
	for done < 12 && time.Now().Before(deadline) {
		n, err := cn.Poll(func(id uint64, resp *workload.Response) {
			if resp.Status == workload.StatusError {
				t.Errorf("request %d failed: %v", id, cn.LastError)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		done += n
	}
	if done != 12 {
		t.Fatalf("%d of 12 responses", done)
	}
	for i, n := range cn.inSess {
		if n != 0 {
			t.Errorf("session %d: %d still counted in flight", i, n)
		}
	}
	if err := cn.Close(); err != nil {
		t.Fatal(err)
	}

	// A checked closed loop with 4x one session's window in flight.
	r, err := bench.Run(context.Background(), bench.Config{Workload: w, Target: cl.Target(CodecCFHybrid), Outstanding: 32,
		Duration: 200 * time.Millisecond, Check: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r.Received == 0 || r.Mismatches != 0 || r.Errors != 0 || r.Lost != 0 {
		t.Fatalf("closed loop over %d sessions: %+v (%s)", sessions, r, r.FirstMismatch)
	}
}

// TestClientSessionsConfig: Sessions beyond MaxSessions is refused.
func TestClientSessionsConfig(t *testing.T) {
	if _, err := NewClient(ClientConfig{Server: netip.MustParseAddrPort("127.0.0.1:1"), Sessions: MaxSessions + 1}); err == nil {
		t.Fatal("Sessions > MaxSessions accepted")
	}
}
