package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderSize is the size of the RPC header that starts every packet payload.
const HeaderSize = 16

// Magic is the 4-bit value every valid header carries (eRPC's kPktHdrMagic).
const Magic = 11

// Field limits of the header (eRPC's widths).
const (
	MaxMsgSizeField = 1<<24 - 1 // msg_size is 24 bits
	MaxPktNum       = 1<<14 - 1 // pkt_num is 14 bits
	MaxReqNum       = 1<<44 - 1 // req_num is 44 bits
	InvalidSession  = 0xFFFF    // dest_session value that addresses no session
)

// PktType is the 2-bit packet type.
type PktType uint8

// Packet types, with eRPC's numeric values.
const (
	PktReq  PktType = 0 // a request packet (data)
	PktRFR  PktType = 1 // request-for-response: asks the server for one more response packet
	PktCR   PktType = 2 // explicit credit return: acknowledges one non-final request packet (or, sent by Core.Ack, a whole request whose response comes later)
	PktResp PktType = 3 // a response packet (data)
)

func (t PktType) String() string {
	switch t {
	case PktReq:
		return "req"
	case PktRFR:
		return "rfr"
	case PktCR:
		return "cr"
	case PktResp:
		return "resp"
	}
	return fmt.Sprintf("pkttype(%d)", uint8(t))
}

// Header is the decoded 16-byte RPC packet header.
//
// Wire layout (all multi-byte fields little-endian, written byte by byte):
//
//	byte  0      req_type (8 bits)
//	bytes 1..3   msg_size (24 bits): size of the whole message, headers excluded
//	bytes 4..5   dest_session (16 bits): the receiver's session number
//	byte  6      status (responses: 0 ok, else a Status code; 0 in other packets)
//	byte  7      flags (FlagAck on request packets); other bits must be zero
//	bytes 8..15  one 64-bit word, least significant bits first:
//	             pkt_type (2) | pkt_num (14) | req_num (44) | magic (4)
type Header struct {
	ReqType     uint8
	MsgSize     uint32 // < 1<<24
	DestSession uint16
	Type        PktType
	PktNum      uint16 // < 1<<14
	ReqNum      uint64 // < 1<<44
	Status      Status // response status (0 = ok)
	Flags       uint8  // FlagAck; no other bit is defined
}

// Header flags (byte 7).
const (
	// FlagAck on a request packet asks the server to acknowledge the
	// request as soon as it has it all when the response will come later
	// (Core.Ack): the client runs congestion control and takes an RTT
	// sample from the acknowledgement instead of counting the handler's
	// time as network delay. Clients without congestion control leave it
	// off and get no acknowledgements they would drop unused.
	FlagAck uint8 = 1 << 0

	knownFlags = FlagAck
)

// Status is the outcome a server reports in a response header.
type Status uint8

// Response statuses.
const (
	StatusOK        Status = 0
	StatusNoHandler Status = 1 // no handler is registered for the request type
	StatusRejected  Status = 2 // the server could not run the handler (worker pool full, handler panicked)
	// StatusNoMemory: the server refused the request before its handler
	// ran: its reassembly budget (per session or per endpoint) was
	// exhausted, its allocator failed, or the request stalled in
	// reassembly past the server's timeout. Retrying later may succeed.
	StatusNoMemory Status = 3
	// StatusDenied: the application refused the request (its session's
	// credential lacks the permission).
	StatusDenied Status = 4
)

// Header decoding errors.
var (
	ErrShortPacket = errors.New("rpc/proto: packet shorter than the header")
	ErrBadMagic    = errors.New("rpc/proto: bad header magic")
	ErrReserved    = errors.New("rpc/proto: undefined header flag bits set")
	ErrFieldRange  = errors.New("rpc/proto: header field out of range")
)

// Encode writes h into b[:HeaderSize]. It returns ErrFieldRange if a field
// does not fit its width and panics only if len(b) < HeaderSize (a caller bug).
func (h *Header) Encode(b []byte) error {
	if h.MsgSize > MaxMsgSizeField || h.PktNum > MaxPktNum || h.ReqNum > MaxReqNum || h.Type > 3 || h.Flags&^knownFlags != 0 {
		return ErrFieldRange
	}
	_ = b[HeaderSize-1]
	// Bytes 0-7: req type, msg size (24 bits), dest session (16 bits),
	// status, flags; bytes 8-15: type, pkt num, req num, magic. Both
	// words are little-endian (one store each).
	lo := uint64(h.ReqType) | uint64(h.MsgSize)<<8 | uint64(h.DestSession)<<32 | uint64(h.Status)<<48 | uint64(h.Flags)<<56
	hi := uint64(h.Type) | uint64(h.PktNum)<<2 | h.ReqNum<<16 | uint64(Magic)<<60
	binary.LittleEndian.PutUint64(b[0:8], lo)
	binary.LittleEndian.PutUint64(b[8:16], hi)
	return nil
}

// Decode parses the header at the start of b. It never panics.
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShortPacket
	}
	lo := binary.LittleEndian.Uint64(b[0:8])
	w := binary.LittleEndian.Uint64(b[8:16])
	if w>>60 != Magic {
		return ErrBadMagic
	}
	if uint8(lo>>56)&^knownFlags != 0 {
		return ErrReserved
	}
	h.Flags = uint8(lo >> 56)
	h.Status = Status(lo >> 48)
	h.ReqType = uint8(lo)
	h.MsgSize = uint32(lo>>8) & (1<<24 - 1)
	h.DestSession = uint16(lo >> 32)
	h.Type = PktType(w & 3)
	h.PktNum = uint16(w>>2) & MaxPktNum
	h.ReqNum = (w >> 16) & MaxReqNum
	return nil
}

func (h Header) String() string {
	return fmt.Sprintf("%s req=%d pkt=%d size=%d sess=%d type=%d", h.Type, h.ReqNum, h.PktNum, h.MsgSize, h.DestSession, h.ReqType)
}
