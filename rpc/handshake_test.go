package rpc

import (
	"bytes"
	"hash/maphash"
	"net/netip"
	"testing"
	"time"
)

var (
	gateFrom  = netip.MustParseAddrPort("10.0.0.7:4000")
	gateOther = netip.MustParseAddrPort("10.0.0.8:4000")
)

func connectReq(token uint64) smPkt {
	return smPkt{typ: smConnectReq, token: token, incarnation: 5, clientEp: 2, serverEp: 1, clientSess: 3,
		dataAddr: netip.MustParseAddrPort("10.0.0.7:5000")}
}

// TestGateCookie: the first request is challenged; the echoed cookie is
// admitted from the address it was issued to only, for the request it was
// issued for only, and until two lifetimes have passed.
func TestGateCookie(t *testing.T) {
	for _, c := range []struct {
		name string
		from netip.AddrPort
		mod  func(*smPkt)
		at   time.Duration
		want gateVerdict
	}{
		{"echoed", gateFrom, nil, 0, gateAdmit},
		{"echoed after a rotation", gateFrom, nil, 1500 * time.Millisecond, gateAdmit},
		{"other address", gateOther, nil, 0, gateChallenge},
		{"other token", gateFrom, func(p *smPkt) { p.token++ }, 0, gateChallenge},
		{"other endpoint", gateFrom, func(p *smPkt) { p.serverEp++ }, 0, gateChallenge},
		{"other incarnation", gateFrom, func(p *smPkt) { p.incarnation++ }, 0, gateChallenge},
		{"forged MAC", gateFrom, func(p *smPkt) { p.cookie[9] ^= 1 }, 0, gateChallenge},
		{"forged time", gateFrom, func(p *smPkt) { p.cookie[0]++ }, 0, gateChallenge},
		{"zero", gateFrom, func(p *smPkt) { p.cookie = [cookieSize]byte{} }, 0, gateChallenge},
		{"expired", gateFrom, nil, 3 * time.Second, gateChallenge},
	} {
		g := newGate(time.Second, 1_000_000, nil, 0)
		p := connectReq(1)
		if v, _ := g.check(gateFrom, &p, 0); v != gateChallenge || p.cookie == ([cookieSize]byte{}) {
			t.Fatalf("first request: verdict %d cookie %x", v, p.cookie)
		}
		q := connectReq(1)
		q.cookie = p.cookie
		if c.mod != nil {
			c.mod(&q)
		}
		if v, _ := g.check(c.from, &q, int64(c.at)); v != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, v, c.want)
		}
	}
}

// TestGateRateLimit: a source over its rate is dropped for the rest of the
// window; other sources are not; the next window starts afresh.
func TestGateRateLimit(t *testing.T) {
	g := newGate(time.Second, 100, nil, 0) // 10 per 100 ms window
	other := gateOther
	for i := 0; maphash.Comparable(g.seed, other)%1024 == maphash.Comparable(g.seed, gateFrom)%1024; i++ {
		other = netip.AddrPortFrom(other.Addr(), other.Port()+1) // another bucket
	}
	for i := 0; i < 15; i++ {
		p := connectReq(uint64(i))
		v, _ := g.check(gateFrom, &p, int64(time.Millisecond))
		if want := map[bool]gateVerdict{true: gateChallenge, false: gateDrop}[i < 10]; v != want {
			t.Fatalf("request %d: verdict %d, want %d", i, v, want)
		}
	}
	p := connectReq(99)
	if v, _ := g.check(other, &p, int64(time.Millisecond)); v != gateChallenge {
		t.Fatalf("another source: verdict %d", v)
	}
	p = connectReq(100)
	if v, _ := g.check(gateFrom, &p, int64(150*time.Millisecond)); v != gateChallenge {
		t.Fatalf("next window: verdict %d", v)
	}
}

// TestGateCredentials: with a keyring, a request with a valid cookie is
// admitted only with a known name and the right MAC, which covers the
// whole handshake (cookie included).
func TestGateCredentials(t *testing.T) {
	kr, err := NewKeyring(Key{Credential: Credential{Name: "ro", Secret: bytes.Repeat([]byte{7}, 32)}, Role: 1})
	if err != nil {
		t.Fatal(err)
	}
	good := Credential{Name: "ro", Secret: bytes.Repeat([]byte{7}, 32)}
	for _, c := range []struct {
		name string
		cred *Credential
		mod  func(*smPkt)
		want gateVerdict
	}{
		{"valid", &good, nil, gateAdmit},
		{"none", nil, nil, gateAuthFail},
		{"unknown", &Credential{Name: "rw", Secret: good.Secret}, nil, gateAuthFail},
		{"wrong secret", &Credential{Name: "ro", Secret: bytes.Repeat([]byte{8}, 32)}, nil, gateAuthFail},
		{"tampered after signing", &good, func(p *smPkt) { p.dataAddr = netip.MustParseAddrPort("10.9.9.9:1") }, gateAuthFail},
	} {
		g := newGate(time.Second, 1_000_000, kr, 0)
		p := connectReq(1)
		g.check(gateFrom, &p, 0)
		q := connectReq(1)
		q.cookie = p.cookie
		if c.cred != nil {
			q.sign(c.cred)
		}
		if c.mod != nil {
			c.mod(&q)
		}
		v, key := g.check(gateFrom, &q, 0)
		if v != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, v, c.want)
		}
		if v == gateAdmit && (key.Name != "ro" || key.Role != 1) {
			t.Errorf("%s: key %+v", c.name, key)
		}
	}
}

func TestKeyringRejectsBadKeys(t *testing.T) {
	long := Credential{Name: "a-name-longer-than-16", Secret: make([]byte, 16)}
	for _, k := range [][]Key{
		{{Credential: Credential{Name: "", Secret: make([]byte, 16)}}},
		{{Credential: long}},
		{{Credential: Credential{Name: "x\x00y", Secret: make([]byte, 16)}}},
		{{Credential: Credential{Name: "short", Secret: make([]byte, 15)}}},
		{{Credential: Credential{Name: "dup", Secret: make([]byte, 16)}}, {Credential: Credential{Name: "dup", Secret: make([]byte, 16)}}},
	} {
		if _, err := NewKeyring(k...); err == nil {
			t.Errorf("%+v accepted", k)
		}
	}
	if _, err := NewNexus(NexusConfig{Credential: &long}); err == nil {
		t.Error("NewNexus accepted an invalid credential")
	}
}

// FuzzHandshake feeds arbitrary control datagrams through the parser and
// the gate (with and without a keyring, with the gate's own cookie spliced
// in so that the credential check is reached): no panic, and nothing is
// admitted without a valid cookie, or without the MAC when keys are set.
func FuzzHandshake(f *testing.F) {
	smSeeds(f)
	kr, err := NewKeyring(Key{Credential: Credential{Name: "k", Secret: bytes.Repeat([]byte{1}, 16)}})
	if err != nil {
		f.Fatal(err)
	}
	signed := connectReq(3)
	signed.sign(&Credential{Name: "k", Secret: bytes.Repeat([]byte{1}, 16)})
	var b [smPktSize]byte
	f.Add(append([]byte(nil), signed.encode(b[:])...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var p smPkt
		if p.decode(raw) != nil {
			return
		}
		for _, keys := range []*Keyring{nil, kr} {
			g := newGate(time.Second, 1_000_000, keys, 0)
			q := p
			if v, _ := g.check(gateFrom, &q, 0); v == gateAdmit {
				t.Fatal("admitted without a challenge")
			}
			// Echo the cookie: admitted only with a valid MAC (keys) or at once.
			r := p
			r.cookie = q.cookie
			v, _ := g.check(gateFrom, &r, int64(time.Millisecond))
			if keys == nil && v != gateAdmit {
				t.Fatalf("echoed cookie: verdict %d", v)
			}
			if keys != nil && v == gateAdmit {
				want := smMAC(bytes.Repeat([]byte{1}, 16), r.encode(b[:]))
				if r.name() != "k" || want != r.mac {
					t.Fatal("admitted with a wrong credential")
				}
			}
		}
	})
}
