package rpc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// attacker is a hostile peer on loopback: a control socket that speaks
// session management by hand and a data socket that sends forged packets.
type attacker struct {
	ctl, data *net.UDPConn
	srv       netip.AddrPort // the server's Nexus
}

// Attackers bind 127.0.0.2, an address of their own: per-peer limits count
// per address, and the honest nodes of the tests are on 127.0.0.1.
func newAttacker(t *testing.T, srv netip.AddrPort) *attacker {
	return newAttackerAt(t, srv, net.IPv4(127, 0, 0, 2))
}

// newAttackerAt is newAttacker with its sockets on ip (any port).
func newAttackerAt(t *testing.T, srv netip.AddrPort, ip net.IP) *attacker {
	t.Helper()
	a := &attacker{srv: srv}
	var err error
	for _, c := range []**net.UDPConn{&a.ctl, &a.data} {
		if *c, err = net.ListenUDP("udp", &net.UDPAddr{IP: ip}); err != nil {
			t.Fatal(err)
		}
		_ = (*c).SetReadBuffer(4 << 20)
		t.Cleanup(func() { _ = (*c).Close() })
	}
	return a
}

func (a *attacker) send(t *testing.T, p rpc.SMForTest) {
	if _, err := a.ctl.WriteToUDPAddrPort(rpc.EncodeSM(p), a.srv); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Error(err)
	}
}

// connect completes a handshake (answering the challenge) for session
// sess and returns the server's session number and data address.
func (a *attacker) connect(t *testing.T, sess uint16) (uint16, netip.AddrPort) {
	t.Helper()
	dataAddr := a.data.LocalAddr().(*net.UDPAddr).AddrPort()
	req := rpc.SMForTest{Type: rpc.SMConnectReq, Token: rand.Uint64(), ClientEp: 9, ServerEp: 1, ClientSess: sess, Data: dataAddr}
	a.send(t, req)
	buf := make([]byte, 2048)
	_ = a.ctl.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		n, err := a.ctl.Read(buf)
		if err != nil {
			t.Fatalf("handshake of session %d: %v", sess, err)
		}
		p, err := rpc.DecodeSM(buf[:n])
		if err != nil || p.Token != req.Token {
			continue
		}
		switch p.Type {
		case rpc.SMChallenge:
			req.Cookie = p.Cookie
			a.send(t, req)
		case rpc.SMConnectResp:
			if p.Err != 0 {
				t.Fatalf("handshake of session %d refused: %d", sess, p.Err)
			}
			return p.ServerSess, p.Data
		}
	}
}

// TestHandshakeFlood: one source sends 100,000 connect requests with
// distinct tokens and answers every challenge (so it holds as many
// sessions as the server lets one peer have, and keeps replacing them);
// meanwhile a real client connects again and again and is served. The
// server's sessions stay within the per-peer limit plus the real ones.
func TestHandshakeFlood(t *testing.T) {
	const perPeer = 64
	// The honest client retransmits its handshake for up to 10 s (the
	// default 2 s was lost once to a full control socket at load 29 on
	// 2 cores, under -race).
	o := opts{kind: "udp", ep: rpc.EndpointConfig{MaxSessionsPerPeer: perPeer}, nexus: rpc.NexusConfig{ConnectTimeout: 10 * time.Second}}
	cli, srv, _ := newPair(t, o)
	a := newAttacker(t, srv.nx.Addr())

	// The flood lasts for at least flood packets and until the real
	// client has completed minRounds rounds under it (on a machine with
	// cheap system calls 100,000 packets take a third of a second, less
	// than one client round), bounded by 60 s.
	const flood, minRounds = 100_000, 3
	var sent, echoed, clientRounds atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the flood
		defer wg.Done()
		defer close(done)
		deadline := time.Now().Add(60 * time.Second)
		for i := 0; (i < flood || clientRounds.Load() < minRounds) && time.Now().Before(deadline); i++ {
			a.send(t, rpc.SMForTest{Type: rpc.SMConnectReq, Token: uint64(i) + 1, ClientEp: 9, ServerEp: 1,
				ClientSess: uint16(i), Data: a.data.LocalAddr().(*net.UDPAddr).AddrPort()})
			sent.Add(1)
		}
	}()
	go func() { // answer every challenge, as a peer that can receive does
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = a.ctl.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			n, err := a.ctl.Read(buf)
			if err != nil {
				continue
			}
			p, err := rpc.DecodeSM(buf[:n])
			if err != nil || p.Type != rpc.SMChallenge {
				continue
			}
			a.send(t, rpc.SMForTest{Type: rpc.SMConnectReq, Token: p.Token, ClientEp: 9, ServerEp: 1,
				ClientSess: p.ClientSess, Data: a.data.LocalAddr().(*net.UDPAddr).AddrPort(), Cookie: p.Cookie})
			echoed.Add(1)
		}
	}()

	// The real client, throughout: connect, call, disconnect.
	rounds := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := cli.ep.Connect(srv.nx.Addr(), 1)
		if err == nil {
			err = cli.ep.WaitConnected(ctx, s)
		}
		if err != nil {
			cancel()
			t.Fatalf("round %d (after %d flood packets): connect: %v", rounds, sent.Load(), err)
		}
		for i := 0; i < 5; i++ {
			want := payload(nextID(), 100)
			got, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg(want))
			if err != nil {
				cancel()
				t.Fatalf("round %d: call: %v", rounds, err)
			}
			if string(got.Bytes()) != string(want) {
				t.Fatal("wrong answer")
			}
			_ = got.Release()
		}
		cancel()
		if err := cli.ep.Disconnect(s); err != nil {
			t.Fatal(err)
		}
		rounds++
		clientRounds.Store(int64(rounds))
		select {
		case <-done:
		default:
			continue
		}
		break
	}
	wg.Wait()
	ns := srv.nx.Stats()
	st := postStats(t, srv)
	t.Logf("flood: %d sent, %d challenges echoed; %d client rounds; nexus %+v; sessions accepted %d evicted %d refused %d now %d",
		sent.Load(), echoed.Load(), rounds, ns, st.SessionsAccepted, st.SessionsEvicted, st.SessionsRefused, st.ServerSessions)
	if ns.Challenges == 0 || rounds < minRounds {
		t.Fatalf("no challenges (%d) or too few client rounds (%d)", ns.Challenges, rounds)
	}
	// The honest client's last disconnect request may still be in flight
	// or lost to the flood: the client (which runs on this goroutine)
	// retransmits it while its loop runs. Once it lands, every server
	// session left is the attacker's, and it may hold perPeer.
	for deadline := time.Now().Add(10 * time.Second); st.ServerSessions > perPeer && time.Now().Before(deadline); {
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
			if err := cli.ep.RunOnce(); err != nil {
				t.Fatal(err)
			}
		}
		st = postStats(t, srv)
	}
	if st.ServerSessions > perPeer {
		t.Fatalf("%d server sessions 10 s after the flood, the attacker may hold %d", st.ServerSessions, perPeer)
	}
	// Sessions the attacker was given (every accepted session but the
	// real client's one per round): beyond its limit, some had to be
	// evicted or refused. (Echoed challenges alone prove nothing: under
	// the flood the kernel drops datagrams on full sockets.)
	if got := int(st.SessionsAccepted) - rounds; got > perPeer && st.SessionsEvicted == 0 && st.SessionsRefused == 0 {
		t.Fatalf("the attacker got %d sessions, more than its limit %d, and nothing was evicted or refused", got, perPeer)
	}
}

// postStats reads the endpoint's current counters on its own goroutine.
func postStats(t *testing.T, n *node) rpc.Stats {
	t.Helper()
	ch := make(chan rpc.Stats, 1)
	if err := n.ep.Post(func() { ch <- n.ep.Stats() }); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-ch:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("Post did not run")
	}
	return rpc.Stats{}
}

// TestReassemblyClaims: a peer connects many sessions and sends, on every
// slot of each, only the first packet of a request claiming MaxMsgSize.
// The server's reassembly memory stays within its budget, honest large
// requests are served during the attack and after it, and the partial
// requests are reclaimed after ReasmTimeout.
func TestReassemblyClaims(t *testing.T) {
	const (
		budget   = 32 << 20
		sessions = 16
		maxPay   = 8972
	)
	o := opts{kind: "udp", maxPayload: maxPay, ep: rpc.EndpointConfig{ReasmBudget: budget, ReasmSessionBudget: 8 << 20,
		ReasmTimeout: 300 * time.Millisecond}}
	cli, srv, _ := newPair(t, o)
	s := cli.connect(t, srv.nx, 1)
	large := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		want := payload(nextID(), 4<<20)
		got, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg(want))
		if err != nil {
			t.Fatalf("%s: large request: %v", what, err)
		}
		if string(got.Bytes()) != string(want) {
			t.Fatalf("%s: wrong answer", what)
		}
		_ = got.Release()
	}
	large("before")

	a := newAttacker(t, srv.nx.Addr())
	dpp := maxPay - proto.HeaderSize
	maxMsg := srv.ep.MaxMsgSize()
	pkt := make([]byte, proto.HeaderSize+dpp)
	for i := 0; i < sessions; i++ {
		num, dst := a.connect(t, uint16(i))
		for slot := 0; slot < 8; slot++ {
			h := proto.Header{ReqType: tEcho, MsgSize: uint32(maxMsg), DestSession: num, Type: proto.PktReq, ReqNum: uint64(8 + slot)}
			if err := h.Encode(pkt); err != nil {
				t.Fatal(err)
			}
			if _, err := a.data.WriteToUDPAddrPort(pkt, dst); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wait until the server holds every claim it accepted.
	deadline := time.Now().Add(10 * time.Second)
	var st rpc.Stats
	for {
		st = postStats(t, srv)
		if initial := 8 * dpp; st.Proto.ReasmBytes >= int64(sessions*8*initial/2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attack did not land: %+v", st.Proto)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("during the attack: %d bytes held (peak %d), %d refused, %d sessions", st.Proto.ReasmBytes, st.Proto.ReasmPeak, st.Proto.ReasmRefused, st.ServerSessions)
	large("during")
	// After the attacker stops, its partial requests are reclaimed.
	deadline = time.Now().Add(10 * time.Second)
	for {
		st = postStats(t, srv)
		if st.Proto.ReasmBytes == 0 && st.Proto.ReasmTimeouts > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partial requests not reclaimed: %+v", st.Proto)
		}
		time.Sleep(20 * time.Millisecond)
	}
	large("after")
	st = postStats(t, srv)
	if st.Proto.ReasmPeak > budget {
		t.Fatalf("reassembly peaked at %d bytes, budget %d", st.Proto.ReasmPeak, budget)
	}
	ch := make(chan mem.PoolStats, 1)
	if err := srv.ep.Post(func() { ch <- srv.pool.Stats() }); err != nil { // the pool is the loop's
		t.Fatal(err)
	}
	if ps := <-ch; ps.Bytes > budget+64<<20 {
		t.Fatalf("server pool holds %d MiB of regions, budget %d MiB", ps.Bytes>>20, budget>>20)
	}
}

// TestReassemblyBudgetRefusal: a request larger than the server's budget
// fails with ErrOverBudget at once (no silent loss), and the server
// counts it; a smaller one is still served.
func TestReassemblyBudgetRefusal(t *testing.T) {
	o := opts{kind: "udp", maxPayload: 8972, ep: rpc.EndpointConfig{ReasmBudget: 1 << 20}}
	cli, srv, _ := newPair(t, o)
	s := cli.connect(t, srv.nx, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg(payload(nextID(), 2<<20)))
	if !errors.Is(err, rpc.ErrOverBudget) {
		t.Fatalf("over budget: %v, want ErrOverBudget", err)
	}
	want := payload(nextID(), 512<<10)
	got, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg(want))
	if err != nil || string(got.Bytes()) != string(want) {
		t.Fatalf("within budget: %v", err)
	}
	_ = got.Release()
	if st := postStats(t, srv); st.Proto.ReasmRefused != 1 {
		t.Fatalf("ReasmRefused = %d, want 1", st.Proto.ReasmRefused)
	}
}

// tWrite (+ Mode) is a request type that needs role 2.
const tWrite = 20

// TestAuthenticatedHandshake: with a keyring, only a client holding one of
// its credentials gets a session (no credential, an unknown name and a
// wrong secret are refused, counted), requests carry the key's role, and
// keys rotate without a restart: the new set applies to new handshakes,
// established sessions keep going.
func TestAuthenticatedHandshake(t *testing.T) {
	secret := func(b byte) []byte { return []byte{b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b} }
	reader := rpc.Key{Credential: rpc.Credential{Name: "reader", Secret: secret(1)}, Role: 1}
	writer := rpc.Key{Credential: rpc.Credential{Name: "writer", Secret: secret(2)}, Role: 2}
	kr, err := rpc.NewKeyring(reader, writer)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]uint8{}
	so := opts{kind: "udp", nexus: rpc.NexusConfig{Keys: kr}}
	srv := newNode(t, so, 1, func(nx *rpc.Nexus, _ *counter) {
		_ = nx.Register(tEcho, rpc.Dispatch, func(r *rpc.Request) {
			mu.Lock()
			seen[r.Credential()] = r.Role()
			mu.Unlock()
			_ = r.RespondBytes(r.Data())
		})
		for _, mode := range []rpc.Mode{rpc.Dispatch, rpc.Worker} {
			_ = nx.Register(tWrite+uint8(mode), mode, func(r *rpc.Request) {
				if r.Role() != 2 {
					_ = r.Deny()
					return
				}
				_ = r.RespondBytes(r.Data())
			})
		}
	}, nil)
	srv.serve()

	dial := func(cred *rpc.Credential) (*node, rpc.Session, error) {
		cli := newNode(t, opts{kind: "udp", nexus: rpc.NexusConfig{Credential: cred, ConnectTimeout: 5 * time.Second}}, 2, nil, nil)
		s, err := cli.ep.Connect(srv.nx.Addr(), 1)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cli, s, cli.ep.WaitConnected(ctx, s)
	}
	call := func(cli *node, s rpc.Session) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg([]byte("hello")))
		if err == nil {
			_ = b.Release()
		}
		return err
	}
	for _, c := range []struct {
		name string
		cred *rpc.Credential
	}{
		{"none", nil},
		{"unknown name", &rpc.Credential{Name: "mallory", Secret: secret(1)}},
		{"wrong secret", &rpc.Credential{Name: "writer", Secret: secret(1)}},
	} {
		cli, _, err := dial(c.cred)
		if !errors.Is(err, rpc.ErrAuth) || !errors.Is(err, rpc.ErrConnectFailed) {
			t.Fatalf("%s: connect = %v, want ErrAuth", c.name, err)
		}
		cli.stop(t)
	}
	if n := srv.nx.Stats().AuthFailures; n < 3 {
		t.Fatalf("AuthFailures = %d, want >= 3", n)
	}
	if st := postStats(t, srv); st.SessionsAccepted != 0 {
		t.Fatalf("%d sessions accepted for unauthenticated peers", st.SessionsAccepted)
	}

	rcli, rs, err := dial(&reader.Credential)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(rcli, rs); err != nil {
		t.Fatal(err)
	}
	// Rotation: the writer's secret changes (a new name), the reader stays.
	writer2 := rpc.Key{Credential: rpc.Credential{Name: "writer-2", Secret: secret(3)}, Role: 2}
	if err := kr.Set(reader, writer2); err != nil {
		t.Fatal(err)
	}
	if cli, _, err := dial(&writer.Credential); !errors.Is(err, rpc.ErrAuth) {
		t.Fatalf("rotated-out key: %v, want ErrAuth", err)
	} else {
		cli.stop(t)
	}
	wcli, ws, err := dial(&writer2.Credential)
	if err != nil {
		t.Fatalf("new key: %v", err)
	}
	if err := call(wcli, ws); err != nil {
		t.Fatal(err)
	}
	if err := call(rcli, rs); err != nil { // established before the rotation
		t.Fatal(err)
	}
	for _, mode := range []rpc.Mode{rpc.Dispatch, rpc.Worker} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := rcli.ep.Call(ctx, rs, tWrite+uint8(mode), rpc.BytesMsg([]byte("w"))); !errors.Is(err, rpc.ErrDenied) {
			t.Fatalf("mode %d: a reader's write: %v, want ErrDenied", mode, err)
		}
		b, err := wcli.ep.Call(ctx, ws, tWrite+uint8(mode), rpc.BytesMsg([]byte("w")))
		if err != nil {
			t.Fatalf("mode %d: a writer's write: %v", mode, err)
		}
		_ = b.Release()
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["reader"] != 1 || seen["writer-2"] != 2 || len(seen) != 2 {
		t.Fatalf("roles seen by the handler: %v", seen)
	}
}

// TestSessionLimitEvictsUnproven: at the endpoint's session limit, a new
// session evicts the oldest one that never carried a request, and its
// client is told; sessions that carry requests stay.
func TestSessionLimitEvictsUnproven(t *testing.T) {
	const limit = 4
	o := opts{kind: "udp", ep: rpc.EndpointConfig{MaxSessions: limit}}
	cli, srv, _ := newPair(t, o)
	var idle []*attacker
	for i := 0; i < limit; i++ {
		a := newAttacker(t, srv.nx.Addr())
		a.connect(t, uint16(i))
		idle = append(idle, a)
	}
	s := cli.connect(t, srv.nx, 1)
	echo := func(s rpc.Session) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := cli.ep.Call(ctx, s, tEcho, rpc.BytesMsg(payload(nextID(), 64)))
		if err == nil {
			_ = b.Release()
		}
		return err
	}
	if err := echo(s); err != nil {
		t.Fatal(err)
	}
	s2 := cli.connect(t, srv.nx, 1) // evicts the second idle attacker session
	if err := echo(s2); err != nil {
		t.Fatal(err)
	}
	if err := echo(s); err != nil {
		t.Fatalf("a session carrying requests was evicted: %v", err)
	}
	st := postStats(t, srv)
	if st.SessionsEvicted != 2 || st.ServerSessions != limit {
		t.Fatalf("evicted %d, %d sessions (limit %d)", st.SessionsEvicted, st.ServerSessions, limit)
	}
	// The oldest two were evicted, and told so.
	buf := make([]byte, 2048)
	for i, a := range idle {
		_ = a.ctl.SetReadDeadline(time.Now().Add(map[bool]time.Duration{true: 5 * time.Second, false: 200 * time.Millisecond}[i < 2]))
		told := false
		for !told {
			n, err := a.ctl.Read(buf)
			if err != nil {
				break
			}
			if p, err := rpc.DecodeSM(buf[:n]); err == nil && p.Type == rpc.SMEvicted {
				told = true
			}
		}
		if told != (i < 2) {
			t.Errorf("attacker session %d: evicted notice %v", i, told)
		}
	}
}

// TestEvictedClientLearnsOfIt: a real client whose idle session is
// evicted gets the Failed event with ErrEvicted.
func TestEvictedClientLearnsOfIt(t *testing.T) {
	var got atomic.Value
	o := opts{kind: "udp", ep: rpc.EndpointConfig{MaxSessions: 1, OnSession: func(_ rpc.Session, ev rpc.SessionEvent, err error) {
		if ev == rpc.Failed {
			got.Store(err)
		}
	}}}
	a, srv, _ := newPair(t, o)
	sa := a.connect(t, srv.nx, 1)
	b := newNode(t, opts{kind: "udp"}, 3, nil, nil)
	b.connect(t, srv.nx, 1)
	a.runUntil(t, 10*time.Second, func() bool { return !a.ep.IsConnected(sa) })
	if err, _ := got.Load().(error); !errors.Is(err, rpc.ErrEvicted) {
		t.Fatalf("Failed event with %v, want ErrEvicted", err)
	}
}
