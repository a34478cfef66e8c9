package rpc

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Session-management (SM) packets travel between Nexus control sockets.
// They have a fixed size and an explicit little-endian layout (version 2;
// version 1 was the first 48 bytes without cookie, credential and MAC, and
// the two do not interoperate: a version-1 packet is dropped and counted):
//
//	bytes  0..3   magic "CFSM"
//	byte   4      version (2)
//	byte   5      type (smConnectReq .. smEvicted)
//	byte   6      error code (smErr*)
//	byte   7      reserved (0)
//	bytes  8..15  token: random per connect attempt, echoed by the server;
//	              in a ping, a nonce of the sender's that the pong echoes
//	bytes 16..23  incarnation of the sender's Nexus (random per process start)
//	byte  24      client endpoint id
//	byte  25      server endpoint id
//	bytes 26..27  client session number
//	bytes 28..29  server session number
//	bytes 30..45  sender's datapath IP address (16 bytes, IPv4 mapped)
//	bytes 46..47  sender's datapath UDP port
//	bytes 48..63  cookie: the server's challenge (smChallenge), echoed in
//	              the next smConnectReq; zero when there is none
//	bytes 64..79  credential name (ASCII, zero padded; empty: none)
//	bytes 80..111 HMAC-SHA256 with the credential's secret over bytes 0..79
//	              (connect requests with a credential; zero otherwise)
const smPktSize = 112

const (
	smVersion   = 2
	smAuthStart = 80 // the MAC covers bytes [0, smAuthStart)
	cookieSize  = 16
	maxCredName = 16
	smMACSize   = 32
)

type smType uint8

const (
	smConnectReq smType = iota + 1
	smConnectResp
	smDisconnectReq
	smDisconnectResp
	smPing
	smPong
	// smChallenge (server → client) carries a cookie the client must echo
	// in its next smConnectReq: a session costs the server nothing until
	// the client has shown that it receives at the address it sends from.
	smChallenge
	// smEvicted (server → client) says that the server dropped the
	// session (limits: EndpointConfig.MaxSessions, MaxSessionsPerPeer).
	smEvicted
	smTypeEnd
)

type smErr uint8

const (
	smOK smErr = iota
	smErrNoEndpoint
	smErrNoSessions
	smErrAuth // the credential is unknown or its MAC is wrong
	smErrEnd
)

type smPkt struct {
	typ         smType
	err         smErr
	token       uint64
	incarnation uint64
	clientEp    uint8
	serverEp    uint8
	clientSess  uint16
	serverSess  uint16
	dataAddr    netip.AddrPort
	cookie      [cookieSize]byte
	credName    [maxCredName]byte
	mac         [smMACSize]byte
}

func (p *smPkt) encode(b []byte) []byte {
	b = b[:smPktSize]
	copy(b, "CFSM")
	b[4] = smVersion
	b[5] = byte(p.typ)
	b[6] = byte(p.err)
	b[7] = 0
	binary.LittleEndian.PutUint64(b[8:], p.token)
	binary.LittleEndian.PutUint64(b[16:], p.incarnation)
	b[24] = p.clientEp
	b[25] = p.serverEp
	binary.LittleEndian.PutUint16(b[26:], p.clientSess)
	binary.LittleEndian.PutUint16(b[28:], p.serverSess)
	ip := p.dataAddr.Addr().As16()
	copy(b[30:46], ip[:])
	binary.LittleEndian.PutUint16(b[46:], p.dataAddr.Port())
	copy(b[48:64], p.cookie[:])
	copy(b[64:80], p.credName[:])
	copy(b[80:112], p.mac[:])
	return b
}

func (p *smPkt) decode(b []byte) error {
	if len(b) != smPktSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrBadSMPacket, len(b), smPktSize)
	}
	if string(b[:4]) != "CFSM" || b[4] != smVersion || b[7] != 0 {
		return fmt.Errorf("%w: bad magic, version or reserved byte", ErrBadSMPacket)
	}
	if t := smType(b[5]); t == 0 || t >= smTypeEnd {
		return fmt.Errorf("%w: type %d", ErrBadSMPacket, b[5])
	}
	if smErr(b[6]) >= smErrEnd {
		return fmt.Errorf("%w: error code %d", ErrBadSMPacket, b[6])
	}
	p.typ = smType(b[5])
	p.err = smErr(b[6])
	p.token = binary.LittleEndian.Uint64(b[8:])
	p.incarnation = binary.LittleEndian.Uint64(b[16:])
	p.clientEp = b[24]
	p.serverEp = b[25]
	p.clientSess = binary.LittleEndian.Uint16(b[26:])
	p.serverSess = binary.LittleEndian.Uint16(b[28:])
	ip := netip.AddrFrom16([16]byte(b[30:46])).Unmap()
	p.dataAddr = netip.AddrPortFrom(ip, binary.LittleEndian.Uint16(b[46:]))
	p.cookie = [cookieSize]byte(b[48:64])
	p.credName = [maxCredName]byte(b[64:80])
	p.mac = [smMACSize]byte(b[80:112])
	return nil
}

// name is the credential name the packet carries ("" for none).
func (p *smPkt) name() string {
	n := 0
	for n < len(p.credName) && p.credName[n] != 0 {
		n++
	}
	return string(p.credName[:n])
}
