package kv

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Roles of a credential (rpc.Key.Role) on a server with keys
// (ServerConfig.Keys).
const (
	// RoleRead may read: get, getm, getlist, getfromlist.
	RoleRead uint8 = 1
	// RoleReadWrite may also put, delete and append.
	RoleReadWrite uint8 = 2
)

// ErrCredentials reports a malformed credentials file.
var ErrCredentials = errors.New("kv: bad credentials file")

// maxCredentialLines bounds a credentials file.
const maxCredentialLines = 4096

// ParseCredentials reads a credentials file: one credential per line,
//
//	name role secret
//
// where role is "read" or "readwrite" and secret is hex (at least
// rpc.MinSecretSize bytes, so 32 hex digits); blank lines and lines
// starting with '#' are ignored. The same file serves the server (every
// line is a key it accepts) and a client (Credential picks its line).
func ParseCredentials(r io.Reader) ([]rpc.Key, error) {
	var keys []rpc.Key
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	for n := 1; sc.Scan(); n++ {
		if n > maxCredentialLines {
			return nil, fmt.Errorf("%w: more than %d lines", ErrCredentials, maxCredentialLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: line %d: want \"name role secret\"", ErrCredentials, n)
		}
		var role uint8
		switch f[1] {
		case "read":
			role = RoleRead
		case "readwrite":
			role = RoleReadWrite
		default:
			return nil, fmt.Errorf("%w: line %d: role %q (read or readwrite)", ErrCredentials, n, f[1])
		}
		secret, err := hex.DecodeString(f[2])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: secret is not hex", ErrCredentials, n)
		}
		k := rpc.Key{Credential: rpc.Credential{Name: f[0], Secret: secret}, Role: role}
		if _, err := rpc.NewKeyring(k); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrCredentials, n, err)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	return keys, nil
}

// Credential picks the credential called name from keys (the only one
// when name is empty).
func Credential(keys []rpc.Key, name string) (*rpc.Credential, error) {
	if name == "" {
		if len(keys) != 1 {
			return nil, fmt.Errorf("%w: %d credentials, name one", ErrCredentials, len(keys))
		}
		return &keys[0].Credential, nil
	}
	for i := range keys {
		if keys[i].Name == name {
			return &keys[i].Credential, nil
		}
	}
	return nil, fmt.Errorf("%w: no credential %q", ErrCredentials, name)
}

// writes reports whether op changes the store (needs RoleReadWrite).
func writes(op workload.Op) bool { return !op.IsRead() }

// SecurityStats is what a server refused and dropped, for its counters and
// `kv serve`'s exit line (docs/SECURITY.md).
type SecurityStats struct {
	// Denied is the requests refused for their credential's role.
	Denied uint64
	// Handshakes refused before any session existed (rpc.NexusStats).
	Challenges, HandshakesDropped, AuthFailures, BadControlPackets uint64
	// Sessions evicted for new ones and connects refused at the limits.
	SessionsEvicted, SessionsRefused uint64
	// Requests refused by the reassembly budget, or reclaimed after
	// stalling in reassembly.
	ReasmRefused, ReasmTimeouts uint64
	// Data packets dropped as malformed or from a stranger (rpc core's
	// DropBad), and as out of order or duplicate (DropOrder).
	DroppedBad, DroppedOrder uint64
	// Bytes of pool memory returned to the OS after bursts (endpoints'
	// pools; the store's pool: StoreTrimmed).
	PoolTrimmed, StoreTrimmed int64
}

// String is the counters as one line.
func (s SecurityStats) String() string {
	return fmt.Sprintf("%d denied; handshakes: %d challenged, %d dropped, %d auth failures, %d bad control packets; "+
		"sessions: %d evicted, %d refused; reassembly: %d refused, %d timed out; packets dropped: %d bad, %d out of order; "+
		"memory returned: %d MiB",
		s.Denied, s.Challenges, s.HandshakesDropped, s.AuthFailures, s.BadControlPackets,
		s.SessionsEvicted, s.SessionsRefused, s.ReasmRefused, s.ReasmTimeouts, s.DroppedBad, s.DroppedOrder,
		(s.PoolTrimmed+s.StoreTrimmed)>>20)
}

// Security sums the server's refusal and drop counters. Safe from any
// goroutine (the endpoints' counters are those they last published).
func (s *Server) Security() SecurityStats {
	var st SecurityStats
	ns := s.nx.Stats()
	st.Challenges, st.HandshakesDropped, st.AuthFailures, st.BadControlPackets =
		ns.Challenges, ns.HandshakesDropped, ns.AuthFailures, ns.BadPackets
	for _, e := range s.eps {
		st.Denied += e.denied.Load()
		es := e.ep.Stats()
		st.SessionsEvicted += es.SessionsEvicted
		st.SessionsRefused += es.SessionsRefused
		st.ReasmRefused += es.Proto.ReasmRefused
		st.ReasmTimeouts += es.Proto.ReasmTimeouts
		st.DroppedBad += es.Proto.DropBad
		st.DroppedOrder += es.Proto.DropOrder
		st.PoolTrimmed += es.PoolTrimmed
	}
	st.StoreTrimmed = s.storeTrimmed.Load()
	return st
}
