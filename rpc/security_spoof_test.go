package rpc_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/rpc"
)

// spoofer sends UDP datagrams with any IPv4 source address through a raw
// socket (CAP_NET_RAW): an off-path attacker forging a peer's address.
type spoofer struct{ fd int }

func newSpoofer(t *testing.T) *spoofer {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		t.Skipf("raw socket (needs CAP_NET_RAW): %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return &spoofer{fd: fd}
}

// send sends payload from src to dst (IPv4 addresses).
func (s *spoofer) send(t *testing.T, src, dst netip.AddrPort, payload []byte) {
	t.Helper()
	b := make([]byte, 28+len(payload))
	b[0] = 0x45 // IPv4, 5-word header
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8] = 64 // TTL
	b[9] = unix.IPPROTO_UDP
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:16], s4[:])
	copy(b[16:20], d4[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(b[20:], src.Port())
	binary.BigEndian.PutUint16(b[22:], dst.Port())
	binary.BigEndian.PutUint16(b[24:], uint16(8+len(payload))) // checksum 0: none (IPv4)
	copy(b[28:], payload)
	if err := unix.Sendto(s.fd, b, 0, &unix.SockaddrInet4{Addr: d4}); err != nil {
		t.Fatal(err)
	}
}

// TestForgedHeartbeatsFailNoSession: an off-path attacker forges pings
// and pongs from each Nexus's address to the other, claiming that the
// peer restarted (another incarnation). Nothing fails: the forged packets
// only make each Nexus probe its peer, whose pong settles it, and the
// session keeps serving. (Before heartbeats carried nonces, the first
// forged ping failed every session to the peer.)
func TestForgedHeartbeatsFailNoSession(t *testing.T) {
	sp := newSpoofer(t)
	var failed []error
	o := opts{kind: "udp", ep: rpc.EndpointConfig{OnSession: func(_ rpc.Session, ev rpc.SessionEvent, err error) {
		if ev == rpc.Failed {
			failed = append(failed, err)
		}
	}}}
	cli, srv, _ := newPair(t, o)
	s := cli.connect(t, srv.nx, 1)
	callMany(t, cli, []rpc.Session{s}, tEcho, []int{8}, 10*time.Second)

	// The forgery reaches the Nexus: a garbage datagram "from the server"
	// is counted by the client's Nexus.
	sp.send(t, srv.nx.Addr(), cli.nx.Addr(), []byte("not a control packet"))
	cli.runUntil(t, 10*time.Second, func() bool { return cli.nx.Stats().BadPackets == 1 })

	for i := 0; i < 20; i++ {
		ping := rpc.EncodeSM(rpc.SMForTest{Type: rpc.SMPing, Token: uint64(i) + 1})
		pong := rpc.EncodeSM(rpc.SMForTest{Type: rpc.SMPong, Token: uint64(i) + 1})
		sp.send(t, srv.nx.Addr(), cli.nx.Addr(), ping)
		sp.send(t, srv.nx.Addr(), cli.nx.Addr(), pong)
		sp.send(t, cli.nx.Addr(), srv.nx.Addr(), ping)
		sp.send(t, cli.nx.Addr(), srv.nx.Addr(), pong)
	}
	sp.send(t, srv.nx.Addr(), cli.nx.Addr(), []byte("the last forged packet"))
	cli.runUntil(t, 10*time.Second, func() bool { return cli.nx.Stats().BadPackets == 2 })
	// Run the client's loop a little longer: mail from its Nexus (a
	// peer failure) is handled there.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := cli.ep.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}
	if !cli.ep.IsConnected(s) || len(failed) > 0 {
		t.Fatalf("forged heartbeats failed the session: connected %v, Failed events %v", cli.ep.IsConnected(s), failed)
	}
	callMany(t, cli, []rpc.Session{s}, tEcho, []int{8, 9000}, 10*time.Second)
	if st := postStats(t, srv); st.ServerSessions != 1 {
		t.Fatalf("the server has %d sessions, want 1", st.ServerSessions)
	}
}
