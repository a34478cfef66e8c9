package rpc_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
)

// TestPerAddressSessionLimit: a peer that opens sessions from many ports
// of one address is held to MaxSessionsPerPeer for the address as a
// whole (its sessions are evicted), while a peer at another address gets
// its sessions without evicting anyone, and an honest client at a third
// is served throughout.
func TestPerAddressSessionLimit(t *testing.T) {
	const perPeer = 4
	const ports = 12
	o := opts{kind: "udp", ep: rpc.EndpointConfig{MaxSessionsPerPeer: perPeer}}
	cli, srv, _ := newPair(t, o)
	s := cli.connect(t, srv.nx, 1)
	echo := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		want := payload(nextID(), 64)
		b, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg(want))
		if err != nil {
			t.Fatal(err)
		}
		if string(b.Bytes()) != string(want) {
			t.Fatal("wrong answer")
		}
		_ = b.Release()
	}
	echo()
	// The flooding address: one session from each of many ports.
	for i := 0; i < ports; i++ {
		a := newAttackerAt(t, srv.nx.Addr(), net.IPv4(127, 0, 0, 2))
		a.connect(t, uint16(i))
	}
	echo()
	st := postStats(t, srv)
	if st.SessionsEvicted != ports-perPeer {
		t.Fatalf("%d sessions from %d ports of one address: %d evicted, want %d", ports, ports, st.SessionsEvicted, ports-perPeer)
	}
	if st.ServerSessions != perPeer+1 {
		t.Fatalf("%d server sessions, want %d (the address's limit) + 1 (the honest client)", st.ServerSessions, perPeer)
	}
	// Another address has its own share: nothing more is evicted.
	for i := 0; i < perPeer; i++ {
		a := newAttackerAt(t, srv.nx.Addr(), net.IPv4(127, 0, 0, 3))
		a.connect(t, uint16(i))
	}
	echo()
	st = postStats(t, srv)
	if st.SessionsEvicted != ports-perPeer || st.ServerSessions != 2*perPeer+1 {
		t.Fatalf("after a second address: %d evicted, %d sessions; want %d, %d", st.SessionsEvicted, st.ServerSessions, ports-perPeer, 2*perPeer+1)
	}
}

// TestPerAddressHandshakeRate: the handshake rate limit counts per source
// address whatever the port: connect requests from many ports of one
// address are dropped past the rate, while another address is still
// challenged and can complete its handshake.
func TestPerAddressHandshakeRate(t *testing.T) {
	const rate = 100 // per second: 10 per 100 ms window
	srv := newNode(t, opts{kind: "udp", nexus: rpc.NexusConfig{HandshakeRate: rate}}, 1, echoHandlers, &counter{})
	srv.serve()
	srvNx := srv.nx
	// Many ports of 127.0.0.2, each sending a few requests at once: most
	// fall in one window and exceed the address's budget.
	const ports, each = 8, 8
	var flood []*attacker
	for i := 0; i < ports; i++ {
		a := newAttackerAt(t, srvNx.Addr(), net.IPv4(127, 0, 0, 2))
		flood = append(flood, a)
		for j := 0; j < each; j++ {
			a.send(t, rpc.SMForTest{Type: rpc.SMConnectReq, Token: uint64(i*each + j + 1), ClientEp: 9, ServerEp: 1,
				ClientSess: uint16(j), Data: a.data.LocalAddr().(*net.UDPAddr).AddrPort()})
		}
	}
	// Count the challenges the flooding ports got.
	challenged := 0
	buf := make([]byte, 2048)
	for _, a := range flood {
		_ = a.ctl.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		for {
			n, err := a.ctl.Read(buf)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatal(err)
				}
				break
			}
			if p, err := rpc.DecodeSM(buf[:n]); err == nil && p.Type == rpc.SMChallenge {
				challenged++
			}
		}
	}
	ns := srvNx.Stats()
	if challenged >= ports*each || ns.HandshakesDropped == 0 {
		t.Fatalf("%d requests from %d ports of one address: %d challenged, %d dropped; want the address's rate to drop some",
			ports*each, ports, challenged, ns.HandshakesDropped)
	}
	// Another address completes a handshake (retrying across windows, as
	// a client's retransmission timer does).
	b := newAttackerAt(t, srvNx.Addr(), net.IPv4(127, 0, 0, 3))
	b.connect(t, 0)
	t.Logf("flood from %d ports: %d challenged, nexus %+v", ports, challenged, srvNx.Stats())
}
