package rpc

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/maphash"
	"net/netip"
	"sync/atomic"
	"time"
)

// Handshake defaults (NexusConfig).
const (
	// DefaultCookieLifetime is how long a handshake cookie stays valid
	// (NexusConfig.CookieLifetime); the secret it is made with rotates
	// every lifetime, and cookies of the previous secret are accepted.
	DefaultCookieLifetime = 10 * time.Second
	// DefaultHandshakeRate is the connect requests per second one source
	// address (IPv4 address or IPv6 /64, any port) may make before the
	// rest are dropped unanswered
	// (NexusConfig.HandshakeRate).
	DefaultHandshakeRate = 100_000
	// MinSecretSize is the shortest credential secret (Key.Secret,
	// Credential.Secret) accepted.
	MinSecretSize = 16
)

// Handshake errors.
var (
	// ErrAuth: the server refused the handshake's credential (unknown
	// name or wrong secret), or requires one and none was given.
	ErrAuth = errors.New("rpc: authentication failed")
	// ErrEvicted: the server dropped the session to make room for another
	// (EndpointConfig.MaxSessions, MaxSessionsPerPeer).
	ErrEvicted = errors.New("rpc: session evicted by the server")
	// ErrBadKey: a credential with an empty or too long name or a secret
	// shorter than MinSecretSize.
	ErrBadKey = errors.New("rpc: invalid credential")
)

// Credential is what a client presents in its connect handshakes
// (NexusConfig.Credential): a name the server knows and the secret shared
// with it.
type Credential struct {
	Name   string // at most 16 bytes, no NUL
	Secret []byte // at least MinSecretSize bytes
}

func (c *Credential) valid() error {
	if c.Name == "" || len(c.Name) > maxCredName || containsNUL(c.Name) {
		return fmt.Errorf("%w: name %q (1 to %d bytes, no NUL)", ErrBadKey, c.Name, maxCredName)
	}
	if len(c.Secret) < MinSecretSize {
		return fmt.Errorf("%w: %q: secret of %d bytes (at least %d)", ErrBadKey, c.Name, len(c.Secret), MinSecretSize)
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// Key is one credential a server accepts, with the role its sessions get
// (Request.Role; its meaning is the application's).
type Key struct {
	Credential
	Role uint8
}

// Keyring is the set of credentials a server accepts
// (NexusConfig.Keys). It is safe for concurrent use: Set replaces the
// whole set at once, so keys rotate without a restart (give the new
// secret a new name, let clients move over, then remove the old one).
// Sessions already established keep their role when their key goes.
type Keyring struct {
	keys atomic.Pointer[map[string]Key]
}

// NewKeyring returns a keyring holding keys (see Set).
func NewKeyring(keys ...Key) (*Keyring, error) {
	k := &Keyring{}
	if err := k.Set(keys...); err != nil {
		return nil, err
	}
	return k, nil
}

// Set replaces the keyring's keys. It returns ErrBadKey (and changes
// nothing) for an invalid key or a name given twice. An empty set refuses
// every handshake.
func (k *Keyring) Set(keys ...Key) error {
	m := make(map[string]Key, len(keys))
	for _, key := range keys {
		if err := key.valid(); err != nil {
			return err
		}
		if _, dup := m[key.Name]; dup {
			return fmt.Errorf("%w: name %q given twice", ErrBadKey, key.Name)
		}
		key.Secret = append([]byte(nil), key.Secret...)
		m[key.Name] = key
	}
	k.keys.Store(&m)
	return nil
}

// Names lists the keyring's credential names (in no particular order).
func (k *Keyring) Names() []string {
	m := k.keys.Load()
	if m == nil {
		return nil
	}
	names := make([]string, 0, len(*m))
	for n := range *m {
		names = append(names, n)
	}
	return names
}

func (k *Keyring) lookup(name string) (Key, bool) {
	m := k.keys.Load()
	if m == nil {
		return Key{}, false
	}
	key, ok := (*m)[name]
	return key, ok
}

// smMAC computes the MAC of an encoded SM packet (bytes before
// smAuthStart) with secret.
func smMAC(secret, pkt []byte) [smMACSize]byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("cornflakes-sm-v2"))
	h.Write(pkt[:smAuthStart])
	var out [smMACSize]byte
	h.Sum(out[:0])
	return out
}

// sign fills p's credential name and MAC for cred.
func (p *smPkt) sign(cred *Credential) {
	p.credName = [maxCredName]byte{}
	copy(p.credName[:], cred.Name)
	var b [smPktSize]byte
	p.mac = smMAC(cred.Secret, p.encode(b[:]))
}

// gateVerdict is what the Nexus does with a connect request.
type gateVerdict uint8

const (
	gateAdmit     gateVerdict = iota + 1 // pass it to the endpoint
	gateChallenge                        // answer with an smChallenge carrying a fresh cookie
	gateDrop                             // rate limit: drop unanswered
	gateAuthFail                         // answer smConnectResp with smErrAuth
)

// gate is the Nexus's stateless admission of connect requests: the cookie
// challenge, the per-source rate limit and the credential check. It holds
// no per-client state beyond a fixed table of rate counters, so a flood
// costs a hash, a MAC and (for a challenge) one reply per packet. It runs
// on the Nexus's receive goroutine; the secret rotates there, lazily.
type gate struct {
	lifetime int64 // ns
	rate     int   // connect requests per source per window
	keys     *Keyring

	secrets   [2][32]byte // [0] current, [1] previous
	macs      [2]hash.Hash
	rotatedAt int64
	seed      maphash.Seed
	buckets   [1024]rateBucket
}

type rateBucket struct {
	window int64
	n      int
}

// rateWindow is the window of the per-source rate limit.
const rateWindow = 100 * time.Millisecond

func newGate(lifetime time.Duration, perSecond int, keys *Keyring, now int64) *gate {
	g := &gate{lifetime: int64(lifetime), keys: keys, seed: maphash.MakeSeed()}
	g.rate = max(1, int(int64(perSecond)*int64(rateWindow)/int64(time.Second)))
	g.rotate(now)
	g.rotate(now)
	return g
}

func (g *gate) rotate(now int64) {
	g.secrets[1] = g.secrets[0]
	if _, err := rand.Read(g.secrets[0][:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	g.macs[1] = g.macs[0]
	g.macs[0] = hmac.New(sha256.New, g.secrets[0][:])
	g.rotatedAt = now
}

// cookie computes the cookie for a request from addr with issue time t
// (seconds of the gate's clock) with secret i.
func (g *gate) cookie(i int, from netip.AddrPort, p *smPkt, t uint32) [cookieSize]byte {
	var in [40]byte
	a := from.Addr().As16()
	copy(in[:16], a[:])
	binary.LittleEndian.PutUint16(in[16:], from.Port())
	binary.LittleEndian.PutUint64(in[18:], p.token)
	in[26], in[27] = p.clientEp, p.serverEp
	binary.LittleEndian.PutUint32(in[28:], t)
	binary.LittleEndian.PutUint64(in[32:], p.incarnation)
	h := g.macs[i]
	h.Reset()
	h.Write(in[:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	var c [cookieSize]byte
	binary.LittleEndian.PutUint32(c[:4], t)
	copy(c[4:], sum[:cookieSize-4])
	return c
}

// check decides what to do with connect request p from the address from
// at time now (ns, monotonic). For gateChallenge it puts the cookie to
// send into p.cookie; for gateAdmit it returns the key that authenticated
// the request (zero without a keyring).
func (g *gate) check(from netip.AddrPort, p *smPkt, now int64) (gateVerdict, Key) {
	if now-g.rotatedAt >= g.lifetime {
		g.rotate(now)
	}
	b := &g.buckets[maphash.Comparable(g.seed, peerKeyOf(from))%uint64(len(g.buckets))]
	if w := now / int64(rateWindow); b.window != w {
		b.window, b.n = w, 0
	}
	b.n++
	if b.n > g.rate {
		return gateDrop, Key{}
	}
	sec := uint32(now / int64(time.Second))
	if !g.validCookie(from, p, sec) {
		p.cookie = g.cookie(0, from, p, sec)
		return gateChallenge, Key{}
	}
	if g.keys == nil {
		return gateAdmit, Key{}
	}
	key, ok := g.keys.lookup(p.name())
	if !ok {
		return gateAuthFail, Key{}
	}
	var buf [smPktSize]byte
	want := smMAC(key.Secret, p.encode(buf[:]))
	if !hmac.Equal(want[:], p.mac[:]) {
		return gateAuthFail, Key{}
	}
	return gateAdmit, key
}

func (g *gate) validCookie(from netip.AddrPort, p *smPkt, now uint32) bool {
	t := binary.LittleEndian.Uint32(p.cookie[:4])
	if t > now || int64(now-t)*int64(time.Second) > 2*g.lifetime {
		return false
	}
	for i := range g.macs {
		if c := g.cookie(i, from, p, t); hmac.Equal(c[:], p.cookie[:]) {
			return true
		}
	}
	return false
}

// NexusStats counts what a Nexus's session management refused and
// dropped (Nexus.Stats).
type NexusStats struct {
	// Challenges is the connect requests answered with a cookie challenge
	// (the first packet of every handshake, and any with a stale or
	// forged cookie).
	Challenges uint64
	// HandshakesDropped is the connect requests dropped unanswered by the
	// per-source rate limit (NexusConfig.HandshakeRate).
	HandshakesDropped uint64
	// AuthFailures is the connect requests refused for their credential.
	AuthFailures uint64
	// BadPackets is the datagrams on the control socket that were not
	// session-management packets of this version.
	BadPackets uint64
	// NoEndpoint is the connect requests for an endpoint id nobody has.
	NoEndpoint uint64
}

type nexusCounters struct {
	challenges, dropped, authFail, bad, noEndpoint atomic.Uint64
}

// Stats returns the Nexus's handshake counters. Session limits and
// evictions are counted per endpoint (Endpoint.Stats). Safe from any
// goroutine.
func (n *Nexus) Stats() NexusStats {
	c := &n.counters
	return NexusStats{
		Challenges:        c.challenges.Load(),
		HandshakesDropped: c.dropped.Load(),
		AuthFailures:      c.authFail.Load(),
		BadPackets:        c.bad.Load(),
		NoEndpoint:        c.noEndpoint.Load(),
	}
}
