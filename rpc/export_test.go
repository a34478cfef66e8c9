package rpc

import "net/netip"

// Sleeping reports whether ep's Run is in (or about to enter) the
// datapath's Wait with a Wake pending for hand-overs (for tests that need
// a hand-over to reach a sleeping endpoint).
func Sleeping(ep *Endpoint) bool { return ep.sleeping.Load() }

// CCConfigOf returns the congestion-control configuration ep's core runs
// with (defaults applied).
func CCConfigOf(ep *Endpoint) CCConfig { return ep.core.Config().CC }

// SMForTest is a session-management packet as a test (playing a hostile
// client) crafts and reads it.
type SMForTest struct {
	Type       uint8 // SMConnectReq, ...
	Err        uint8
	Token      uint64
	ClientEp   uint8
	ServerEp   uint8
	ClientSess uint16
	ServerSess uint16
	Data       netip.AddrPort
	Cookie     [16]byte
}

// Session-management packet types for SMForTest.
const (
	SMConnectReq  = uint8(smConnectReq)
	SMConnectResp = uint8(smConnectResp)
	SMChallenge   = uint8(smChallenge)
	SMEvicted     = uint8(smEvicted)
	SMPing        = uint8(smPing)
	SMPong        = uint8(smPong)
)

// EncodeSM encodes p as the wire packet.
func EncodeSM(p SMForTest) []byte {
	q := smPkt{typ: smType(p.Type), err: smErr(p.Err), token: p.Token, incarnation: 1, clientEp: p.ClientEp,
		serverEp: p.ServerEp, clientSess: p.ClientSess, serverSess: p.ServerSess, dataAddr: p.Data, cookie: p.Cookie}
	var b [smPktSize]byte
	return append([]byte(nil), q.encode(b[:])...)
}

// DecodeSM decodes a wire packet.
func DecodeSM(b []byte) (SMForTest, error) {
	var q smPkt
	if err := q.decode(b); err != nil {
		return SMForTest{}, err
	}
	return SMForTest{Type: uint8(q.typ), Err: uint8(q.err), Token: q.token, ClientEp: q.clientEp, ServerEp: q.serverEp,
		ClientSess: q.clientSess, ServerSess: q.serverSess, Data: q.dataAddr, Cookie: q.cookie}, nil
}
