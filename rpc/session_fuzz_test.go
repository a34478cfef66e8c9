package rpc

import (
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// FuzzSessionCore drives the pure session core and failure detector with
// arbitrary sequences of connects, disconnects, control packets (any
// type, error code, token and session numbers from a few addresses) and
// ticks, and checks the books after every step: the server-session count,
// the per-address counts and the token index agree with the session table,
// and every effect the core asks of its host is consistent (a session is
// never closed twice, monitor watches balance).
func FuzzSessionCore(f *testing.F) {
	f.Add([]byte{0, 1, 3, 1, 0, 7, 0, 3, 0, 0, 0, 5, 2, 200})
	f.Add([]byte{3, 0, 1, 1, 1, 0, 3, 0, 1, 1, 1, 0, 3, 2, 1, 1, 1, 0, 4, 250, 4, 250, 4, 250})
	f.Add([]byte{0, 0, 3, 1, 0, 6, 0, 3, 1, 0, 5, 1, 3, 0, 2, 2, 0, 4, 255, 4, 255})
	addrs := []netip.AddrPort{
		netip.MustParseAddrPort("10.0.0.1:5000"), netip.MustParseAddrPort("10.0.0.1:5001"),
		netip.MustParseAddrPort("10.0.0.2:5000"), netip.MustParseAddrPort("[2001:db8::1]:5000"),
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			return
		}
		h := &fuzzHost{t: t, closed: map[*sessInfo]bool{}, lastRx: map[uint16]int64{}}
		nonce := uint64(0)
		h.mon = newPeerMonitor(int64(500*time.Millisecond), int64(100*time.Millisecond), func() uint64 { nonce++; return nonce })
		h.core.init(h, smCoreConfig{ID: 1, Local: netip.MustParseAddrPort("10.0.0.9:6000"), Incarnation: 1,
			SMTimeout: int64(100 * time.Millisecond), ConnectTimeout: int64(time.Second),
			MaxSessions: 6, MaxPerPeer: 3, IdleEvict: int64(time.Second)}, &h.stats)
		next := func() byte {
			if len(ops) == 0 {
				panic(io.EOF)
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		defer func() {
			if r := recover(); r != nil && r != io.EOF {
				panic(r)
			}
		}()
		var now int64
		for len(ops) > 0 {
			switch next() % 6 {
			case 0: // connect
				h.core.startConnect(now, addrs[next()%4], next()%3, uint64(next()%4))
			case 1: // disconnect
				if si := h.core.session(uint16(next() % 8)); si != nil && si.client {
					h.core.startDisconnect(now, si)
				}
			case 2, 3: // a control packet
				from := addrs[next()%4]
				p := smPkt{typ: smType(next()%uint8(smTypeEnd-1) + 1), err: smErr(next() % uint8(smErrEnd)),
					token: uint64(next() % 4), incarnation: uint64(next() % 3), clientEp: next() % 3, serverEp: 1,
					clientSess: uint16(next() % 8), serverSess: uint16(next() % 8), dataAddr: from}
				copy(p.cookie[:], []byte{next() % 2})
				restarted, _ := h.mon.heard(from, p.incarnation, p.token, p.typ == smConnectReq, now)
				if restarted {
					h.core.peerFailed(from)
				}
				if p.typ != smPing && p.typ != smPong {
					h.core.step(now, from, &p, "", 0)
				}
			case 4: // time passes: the session timers and the heartbeat
				now += int64(next()) * int64(5*time.Millisecond)
				h.core.smTimers(now)
				_, failed := h.mon.tick(now, nil, nil)
				for _, a := range failed {
					h.core.peerFailed(a)
				}
			case 5: // a session receives
				h.lastRx[uint16(next()%8)] = now + 1
			}
			h.check()
		}
	})
}

type fuzzHost struct {
	t      *testing.T
	core   smCore
	mon    peerMonitor
	stats  Stats
	closed map[*sessInfo]bool
	lastRx map[uint16]int64
	watch  map[netip.AddrPort]int
}

func (h *fuzzHost) smSend(netip.AddrPort, *smPkt) {}

func (h *fuzzHost) smOpen(cfg proto.SessionConfig) error { return nil }

func (h *fuzzHost) smClose(si *sessInfo, opened bool, err error) {
	if h.closed[si] {
		h.t.Fatalf("session %d closed twice", si.num)
	}
	h.closed[si] = true
	delete(h.lastRx, si.num)
}

func (h *fuzzHost) smEvent(uint16, SessionEvent, error) {}

func (h *fuzzHost) smMonitor(addr netip.AddrPort, delta int, inc uint64) {
	if h.watch == nil {
		h.watch = map[netip.AddrPort]int{}
	}
	h.watch[addr] += delta
	if h.watch[addr] < 0 {
		h.t.Fatalf("%s: more watches stopped than started", addr)
	}
	h.mon.watch(addr, delta, inc, 0)
}

func (h *fuzzHost) smLastRx(num uint16) int64 { return h.lastRx[num] }

func (h *fuzzHost) smProcess() {}

// check verifies the core's books against its session table.
func (h *fuzzHost) check() {
	c := &h.core
	counted := 0
	perPeer := map[peerKey]int{}
	watched := map[netip.AddrPort]int{}
	for num, si := range c.sessions {
		if si == nil {
			continue
		}
		if int(si.num) != num || h.closed[si] {
			h.t.Fatalf("session table slot %d holds session %d (closed %v)", num, si.num, h.closed[si])
		}
		if si.counted {
			counted++
			perPeer[peerKeyOf(si.remoteNexus)]++
		}
		if si.monitored {
			watched[si.remoteNexus]++
		}
	}
	if counted != c.srvSessions || counted > c.maxSessions {
		h.t.Fatalf("%d counted server sessions, books say %d (limit %d)", counted, c.srvSessions, c.maxSessions)
	}
	for k, ps := range c.peers {
		if ps.n != perPeer[k] || ps.n > c.maxPerPeer {
			h.t.Fatalf("peer %s: books say %d sessions, table %d (limit %d)", k, ps.n, perPeer[k], c.maxPerPeer)
		}
	}
	for tk, num := range c.tokens {
		si := c.session(num)
		if si == nil || si.client || si.token != tk.token || si.remoteNexus != tk.addr {
			h.t.Fatalf("token index %v -> session %d does not match", tk, num)
		}
	}
	for a := range h.watch {
		if n := watched[a]; h.watch[a] != n {
			h.t.Fatalf("%s: %d sessions watch it, %d watches started", a, n, h.watch[a])
		}
	}
}
