package rpc

import (
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// TestSessionTranscripts runs the session core (session_core.go,
// session_admit.go) and the failure detector (session_monitor.go) through
// the data-driven transcripts in testdata/session: control packets and
// ticks in, the core's decisions out, one line each. Rewrite the expected
// output with `go test ./rpc -run TestSessionTranscripts -rewrite`.
//
// The harness plays the Nexus around one endpoint's core: a received
// packet is first heard by the failure detector (a changed incarnation
// fails the peer's sessions before the packet is handled, as the Nexus's
// mail does), pings are answered with pongs, and the failure detector's
// ticks ping peers and fail the silent ones. The gate (cookies, rate,
// credentials) is tested on its own (handshake_test.go): a connect
// request given here has passed it.
//
// Commands:
//
//	init id=N local=ADDR [max-sessions=N] [per-peer=N] [idle-evict=DUR]
//	     [sm-timeout=DUR] [connect-timeout=DUR] [failure-timeout=DUR]
//	     [probe-every=DUR] [cred=NAME]           (nonces count from 101)
//	connect nexus=ADDR ep=N token=N        a client session (Endpoint.Connect)
//	disconnect sess=N                      Endpoint.Disconnect
//	recv from=ADDR type=TYPE [token=N] [inc=N]    (token: a ping's or pong's nonce) [cep=N] [sep=N] [csess=N]
//	     [ssess=N] [data=ADDR] [cookie=HEX] [err=N] [key=NAME] [role=N]
//	tick [advance=DUR]                     the endpoint's session timers
//	heartbeat [advance=DUR]                the failure detector's tick
//	rx sess=N                              session N received a packet now
//	fail-open                              the protocol core refuses the next session
//	sessions                               the session table
//	peers                                  the failure detector's table
func TestSessionTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/session", func(t *testing.T, path string) {
		var h *smHarness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "init" && h == nil {
				d.Fatalf(t, "init first")
			}
			switch d.Cmd {
			case "init":
				h = newSMHarness(t, d)
				return ""
			case "connect":
				si, ok := h.core.startConnect(h.now, argAddr(t, d, "nexus"), uint8(argInt(t, d, "ep", 0)), uint64(argInt(t, d, "token", 1)))
				if !ok {
					h.printf("out of session numbers")
				} else {
					h.printf("-> sess=%d", si.num)
				}
			case "disconnect":
				si := h.core.session(uint16(argInt(t, d, "sess", 0)))
				if si == nil || !si.client {
					h.printf("no such client session")
					break
				}
				h.core.startDisconnect(h.now, si)
			case "recv":
				h.recv(t, d)
			case "tick":
				h.now += int64(argDur(t, d, "advance", 0))
				h.core.smTimers(h.now)
			case "heartbeat":
				h.now += int64(argDur(t, d, "advance", 0))
				ping, failed := h.mon.tick(h.now, nil, nil)
				slices.SortFunc(ping, func(a, b pingTo) int { return a.addr.Compare(b.addr) })
				slices.SortFunc(failed, netip.AddrPort.Compare)
				for _, a := range ping {
					h.printf("ping %s nonce=%d", a.addr, a.nonce)
				}
				for _, a := range failed {
					h.printf("peer-failed %s", a)
					h.core.peerFailed(a)
				}
			case "rx":
				h.lastRx[uint16(argInt(t, d, "sess", 0))] = h.now
			case "fail-open":
				h.failOpen = true
			case "sessions":
				for _, si := range h.core.sessions {
					if si != nil {
						h.printf("%s", fmtSess(si))
					}
				}
				h.printf("server sessions %d; accepted %d refused %d evicted %d",
					h.core.srvSessions, h.stats.SessionsAccepted, h.stats.SessionsRefused, h.stats.SessionsEvicted)
			case "peers":
				addrs := make([]netip.AddrPort, 0, len(h.mon.remotes))
				for a := range h.mon.remotes {
					addrs = append(addrs, a)
				}
				slices.SortFunc(addrs, netip.AddrPort.Compare)
				for _, a := range addrs {
					r := h.mon.remotes[a]
					h.printf("%s refs=%d inc=%d heard=%s failed=%t", a, r.refs, r.incarnation, time.Duration(r.lastHeard), r.failed)
				}
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return h.flush()
		})
	})
}

// smHarness is the session core's host in the transcripts: it records
// every effect as a line.
type smHarness struct {
	now      int64
	core     smCore
	mon      peerMonitor
	stats    Stats
	cred     *Credential
	lastRx   map[uint16]int64
	failOpen bool
	out      strings.Builder
}

const transcriptSecret = "transcript-secret-0123456789"

func newSMHarness(t *testing.T, d *datadriven.TestData) *smHarness {
	h := &smHarness{lastRx: map[uint16]int64{}}
	if d.HasArg("cred") {
		h.cred = &Credential{Name: argStr(t, d, "cred", ""), Secret: []byte(transcriptSecret)}
	}
	h.core.init(h, smCoreConfig{
		ID: uint8(argInt(t, d, "id", 1)), Local: argAddr(t, d, "local"), Credential: h.cred, Incarnation: 1,
		SMTimeout: int64(argDur(t, d, "sm-timeout", 100*time.Millisecond)), ConnectTimeout: int64(argDur(t, d, "connect-timeout", 2*time.Second)),
		MaxSessions: argInt(t, d, "max-sessions", DefaultMaxSessions), MaxPerPeer: argInt(t, d, "per-peer", DefaultMaxSessionsPerPeer),
		IdleEvict: int64(argDur(t, d, "idle-evict", DefaultIdleEvict)),
	}, &h.stats)
	nonce := uint64(100)
	h.mon = newPeerMonitor(int64(argDur(t, d, "failure-timeout", 500*time.Millisecond)), int64(argDur(t, d, "probe-every", 100*time.Millisecond)),
		func() uint64 { nonce++; return nonce })
	return h
}

func (h *smHarness) printf(format string, args ...any) {
	fmt.Fprintf(&h.out, format, args...)
	h.out.WriteByte('\n')
}

func (h *smHarness) flush() string {
	s := h.out.String()
	h.out.Reset()
	return s
}

// recv is the Nexus's handleSM without the gate, followed by the
// endpoint's drainMail.
func (h *smHarness) recv(t *testing.T, d *datadriven.TestData) {
	from := argAddr(t, d, "from")
	p := smPkt{typ: parseSMType(t, d, argStr(t, d, "type", "")), err: smErr(argInt(t, d, "err", 0)),
		token: uint64(argInt(t, d, "token", 0)), incarnation: uint64(argInt(t, d, "inc", 0)),
		clientEp: uint8(argInt(t, d, "cep", 0)), serverEp: uint8(argInt(t, d, "sep", 0)),
		clientSess: uint16(argInt(t, d, "csess", 0)), serverSess: uint16(argInt(t, d, "ssess", 0))}
	if d.HasArg("data") {
		p.dataAddr = argAddr(t, d, "data")
	}
	if c := argStr(t, d, "cookie", ""); c != "" {
		b, err := hex.DecodeString(c)
		if err != nil || len(b) > cookieSize {
			d.Fatalf(t, "cookie %q: %v", c, err)
		}
		copy(p.cookie[:], b)
	}
	// As Nexus.handleSM: a pong echoes a nonce; a connect request here
	// has passed the gate, whose cookie proves its source address.
	var echo uint64
	if p.typ == smPong {
		echo = p.token
	}
	restarted, probe := h.mon.heard(from, p.incarnation, echo, p.typ == smConnectReq, h.now)
	if probe.addr.IsValid() {
		h.smSend(probe.addr, &smPkt{typ: smPing, token: probe.nonce})
	}
	if restarted {
		h.printf("peer-restarted %s", from)
		h.core.peerFailed(from)
	}
	switch p.typ {
	case smPing:
		h.smSend(from, &smPkt{typ: smPong, token: p.token})
	case smPong:
	default:
		h.core.step(h.now, from, &p, argStr(t, d, "key", ""), uint8(argInt(t, d, "role", 0)))
	}
}

func (h *smHarness) smSend(to netip.AddrPort, p *smPkt) {
	var b strings.Builder
	fmt.Fprintf(&b, "send %s %s", to, smTypeNames[p.typ])
	if p.typ != smPing && p.typ != smPong {
		fmt.Fprintf(&b, " token=%d cep=%d sep=%d csess=%d ssess=%d", p.token, p.clientEp, p.serverEp, p.clientSess, p.serverSess)
	} else {
		fmt.Fprintf(&b, " nonce=%d", p.token)
	}
	if p.err != smOK {
		fmt.Fprintf(&b, " err=%s", smErrNames[p.err])
	}
	if p.dataAddr.IsValid() {
		fmt.Fprintf(&b, " data=%s", p.dataAddr)
	}
	if p.cookie != ([cookieSize]byte{}) {
		fmt.Fprintf(&b, " cookie=%s", strings.TrimRight(hex.EncodeToString(p.cookie[:]), "0"))
	}
	if name := p.name(); name != "" {
		var buf [smPktSize]byte
		want := smMAC([]byte(transcriptSecret), p.encode(buf[:]))
		fmt.Fprintf(&b, " cred=%s mac-valid=%t", name, hmac.Equal(want[:], p.mac[:]))
	}
	h.printf("%s", b.String())
}

func (h *smHarness) smOpen(cfg proto.SessionConfig) error {
	if h.failOpen {
		h.failOpen = false
		h.printf("open sess=%d refused", cfg.Num)
		return errors.New("core refused")
	}
	side := "server"
	if cfg.Client {
		side = "client"
	}
	h.printf("open sess=%d %s remote=%d peer=%s", cfg.Num, side, cfg.Remote, cfg.Peer)
	return nil
}

func (h *smHarness) smClose(si *sessInfo, opened bool, err error) {
	h.printf("close sess=%d opened=%t err=%v", si.num, opened, err)
	delete(h.lastRx, si.num)
}

func (h *smHarness) smEvent(num uint16, ev SessionEvent, err error) {
	if err != nil {
		h.printf("event sess=%d %s: %v", num, ev, err)
		return
	}
	h.printf("event sess=%d %s", num, ev)
}

func (h *smHarness) smMonitor(addr netip.AddrPort, delta int, inc uint64) {
	h.printf("monitor %s %+d inc=%d", addr, delta, inc)
	h.mon.watch(addr, delta, inc, h.now)
}

func (h *smHarness) smLastRx(num uint16) int64 { return h.lastRx[num] }

func (h *smHarness) smProcess() { h.printf("process") }

var smTypeNames = map[smType]string{
	smConnectReq: "connect-req", smConnectResp: "connect-resp", smDisconnectReq: "disconnect-req",
	smDisconnectResp: "disconnect-resp", smPing: "ping", smPong: "pong", smChallenge: "challenge", smEvicted: "evicted",
}

var smErrNames = map[smErr]string{smOK: "ok", smErrNoEndpoint: "no-endpoint", smErrNoSessions: "no-sessions", smErrAuth: "auth"}

func parseSMType(t *testing.T, d *datadriven.TestData, s string) smType {
	for typ, name := range smTypeNames {
		if name == s {
			return typ
		}
	}
	d.Fatalf(t, "unknown packet type %q", s)
	return 0
}

func fmtSess(si *sessInfo) string {
	side, state := "server", "?"
	if si.client {
		side = "client"
	}
	switch si.state {
	case sessConnecting:
		state = "connecting"
	case sessConnected:
		state = "connected"
	case sessDisconnecting:
		state = "disconnecting"
	}
	s := fmt.Sprintf("sess=%d %s %s peer=%s ep=%d rsess=%d token=%d", si.num, side, state, si.remoteNexus, si.remoteEp, si.remoteSess, si.token)
	if si.pendingSM {
		s += fmt.Sprintf(" next=%s deadline=%s", time.Duration(si.nextSM), time.Duration(si.deadline))
	}
	if si.key != "" {
		s += fmt.Sprintf(" key=%s role=%d", si.key, si.role)
	}
	return s
}

func argStr(t *testing.T, d *datadriven.TestData, key, def string) string {
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	return s
}

func argInt(t *testing.T, d *datadriven.TestData, key string, def int) int {
	s := argStr(t, d, key, "")
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, s, err)
	}
	return int(v)
}

func argDur(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	s := argStr(t, d, key, "")
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, s, err)
	}
	return v
}

func argAddr(t *testing.T, d *datadriven.TestData, key string) netip.AddrPort {
	s := argStr(t, d, key, "")
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, s, err)
	}
	return a
}
