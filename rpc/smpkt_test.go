package rpc

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func TestSMPacketRoundTrip(t *testing.T) {
	cases := []smPkt{
		{typ: smConnectReq, token: 1, incarnation: 2, clientEp: 3, serverEp: 4, clientSess: 5, serverSess: 6,
			dataAddr: netip.MustParseAddrPort("10.1.2.3:4000")},
		{typ: smPong, err: smErrNoSessions, dataAddr: netip.MustParseAddrPort("[fe80::1]:9")},
	}
	for _, p := range cases {
		var b [smPktSize]byte
		var q smPkt
		if err := q.decode(p.encode(b[:])); err != nil {
			t.Fatal(err)
		}
		if q != p {
			t.Fatalf("got %+v want %+v", q, p)
		}
	}
	bad := [][]byte{nil, make([]byte, smPktSize), make([]byte, smPktSize+1)}
	for _, b := range bad {
		var q smPkt
		if err := q.decode(b); !errors.Is(err, ErrBadSMPacket) {
			t.Errorf("%x: %v", b, err)
		}
	}
}

func smSeeds(f *testing.F) {
	for _, p := range []smPkt{
		{typ: smConnectReq, token: 7, clientEp: 2, serverEp: 1, clientSess: 0, dataAddr: netip.MustParseAddrPort("10.0.0.9:1")},
		{typ: smConnectResp, token: 7, clientEp: 1, serverEp: 1, serverSess: 3, dataAddr: netip.MustParseAddrPort("10.0.0.9:1")},
		{typ: smDisconnectReq, token: 7, clientEp: 2, serverEp: 1},
		{typ: smDisconnectResp, token: 7, clientEp: 1},
		{typ: smPing}, {typ: smPong},
		{typ: smChallenge, token: 7, clientEp: 2, serverEp: 1, cookie: [cookieSize]byte{1, 2, 3}},
		{typ: smEvicted, token: 7, clientEp: 2, serverEp: 1, serverSess: 3},
		{typ: smConnectResp, err: smErrAuth, token: 7, clientEp: 2, serverEp: 1},
		{typ: smConnectReq, token: 8, clientEp: 2, serverEp: 1, cookie: [cookieSize]byte{9}, credName: [maxCredName]byte{'r', 'o'}, mac: [smMACSize]byte{4}},
	} {
		var b [smPktSize]byte
		f.Add(append([]byte(nil), p.encode(b[:])...))
	}
}

func FuzzSMPacket(f *testing.F) {
	smSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p smPkt
		if p.decode(b) != nil {
			return
		}
		var out [smPktSize]byte
		if !bytes.Equal(p.encode(out[:]), b) {
			t.Fatalf("re-encode differs")
		}
	})
}

// FuzzSMHandle feeds arbitrary session-management packets to a live
// endpoint (with one client session connecting): nothing may panic and
// every buffer must come back.
func FuzzSMHandle(f *testing.F) {
	smSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p smPkt
		if p.decode(b) != nil {
			return
		}
		pool := memtest.NewPool(t, mem.PoolConfig{Name: "fuzz"})
		nx, err := NewNexus(NexusConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer nx.Close()
		n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
		dp, err := n.Open(datapath.Config{Pool: pool}, memnet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := nx.NewEndpoint(EndpointConfig{ID: 1, Datapath: dp, Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ep.Connect(netip.MustParseAddrPort("127.0.0.1:9"), 1); err != nil {
			t.Fatal(err)
		}
		from := netip.MustParseAddrPort("127.0.0.1:9")
		ep.handleSM(from, &p, "", 0)
		p.token = ep.sessions[0].token // also as a matching response
		ep.handleSM(from, &p, "", 0)
		for i := 0; i < 3; i++ {
			_ = ep.RunOnce()
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
