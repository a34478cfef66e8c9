package service

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The service header: every request and response of this package starts
// with one, inside the RPC payload (the transport's packet header is not
// touched). Layouts (little endian):
//
//	request:  magic 0xCF | kind u8 | flags u8 | 0 u8 | method handle u32 | method fingerprint u64
//	          [flagDeadline: timeout ns i64] [flagCallID: call id u64]
//	          [flagMetadata: length u16, then per pair: key length u8, key, value length u16, value]
//	          zero padding to a multiple of 8, then the request message
//	response: magic 0xCF | code u8 | 0 u16 | status length u32
//	          [code != OK: message length u16, message, details] padding to 8, then the response message
//
// Parsing never trusts a length: every one is checked against the bytes
// present and the limits below before it is used, and nothing is
// allocated from an untrusted size.
const (
	magic = 0xCF

	kindCall   = 1
	kindBind   = 2
	kindCancel = 3

	flagDeadline = 1
	flagCallID   = 2
	flagMetadata = 4

	reqFixed  = 16
	respFixed = 8
)

// Limits of the service header, enforced on both sides.
const (
	// MaxMetadataPairs is the most metadata pairs one call may carry.
	MaxMetadataPairs = 16
	// MaxMetadataKey is the longest metadata key (bytes; at least 1).
	MaxMetadataKey = 64
	// MaxMetadataValue is the longest metadata value (bytes).
	MaxMetadataValue = 1024
	// MaxMetadataSize bounds the encoded metadata of one call (bytes).
	MaxMetadataSize = 4096
	// MaxStatusMessage is the longest status message sent; longer ones are truncated.
	MaxStatusMessage = 1024
	// MaxStatusDetails is the most detail bytes a status carries; a
	// handler error with more is sent as Internal.
	MaxStatusDetails = 8192
)

// ErrBadHeader: a request or response whose service header is malformed
// (wrong magic, a length beyond the bytes present or beyond a limit).
var ErrBadHeader = errors.New("service: malformed service header")

// Pair is one metadata entry.
type Pair struct {
	Key   string
	Value string
}

// Metadata is the per-call metadata (auth tokens, trace ids): a short list
// of key/value pairs, at most MaxMetadataPairs, keys of 1..MaxMetadataKey
// bytes, values of at most MaxMetadataValue bytes, MaxMetadataSize bytes
// encoded in all.
type Metadata []Pair

// Get returns the value of the first pair with key k, and whether there is one.
func (md Metadata) Get(k string) (string, bool) {
	for _, p := range md {
		if p.Key == k {
			return p.Value, true
		}
	}
	return "", false
}

// check reports whether md is within the limits.
func (md Metadata) check() error {
	if len(md) > MaxMetadataPairs {
		return fmt.Errorf("%w: %d metadata pairs (at most %d)", ErrBadHeader, len(md), MaxMetadataPairs)
	}
	n := 0
	for _, p := range md {
		if len(p.Key) == 0 || len(p.Key) > MaxMetadataKey || len(p.Value) > MaxMetadataValue {
			return fmt.Errorf("%w: metadata key %q: key of 1..%d bytes, value of at most %d", ErrBadHeader, p.Key, MaxMetadataKey, MaxMetadataValue)
		}
		n += 3 + len(p.Key) + len(p.Value)
	}
	if n > MaxMetadataSize {
		return fmt.Errorf("%w: %d bytes of metadata (at most %d)", ErrBadHeader, n, MaxMetadataSize)
	}
	return nil
}

// reqHeader is a parsed request header.
type reqHeader struct {
	kind    uint8
	flags   uint8
	handle  uint32
	fp      uint64
	timeout time.Duration // > 0 with flagDeadline
	callID  uint64
	md      []byte // the encoded metadata pairs (aliasing the request)
}

// appendReqHeader appends h (with md encoded, already checked) and the
// padding to dst.
func appendReqHeader(dst []byte, h *reqHeader, md Metadata) []byte {
	flags := h.flags &^ flagMetadata
	if len(md) > 0 {
		flags |= flagMetadata
	}
	if flags == 0 {
		// The common call: the fixed part only, a multiple of 8.
		var b [reqFixed]byte
		b[0], b[1] = magic, h.kind
		binary.LittleEndian.PutUint32(b[4:], h.handle)
		binary.LittleEndian.PutUint64(b[8:], h.fp)
		return append(dst, b[:]...)
	}
	start := len(dst)
	dst = append(dst, magic, h.kind, flags, 0)
	dst = binary.LittleEndian.AppendUint32(dst, h.handle)
	dst = binary.LittleEndian.AppendUint64(dst, h.fp)
	if flags&flagDeadline != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h.timeout))
	}
	if flags&flagCallID != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, h.callID)
	}
	if flags&flagMetadata != 0 {
		n := 0
		for _, p := range md {
			n += 3 + len(p.Key) + len(p.Value)
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(n))
		for _, p := range md {
			dst = append(dst, byte(len(p.Key)))
			dst = append(dst, p.Key...)
			dst = binary.LittleEndian.AppendUint16(dst, uint16(len(p.Value)))
			dst = append(dst, p.Value...)
		}
	}
	for (len(dst)-start)%8 != 0 {
		dst = append(dst, 0)
	}
	return dst
}

// parseReqHeader parses the header at the start of p and returns it with
// the offset of the message behind it.
func parseReqHeader(p []byte, h *reqHeader) (int, error) {
	if len(p) < reqFixed || p[0] != magic || p[3] != 0 {
		return 0, ErrBadHeader
	}
	*h = reqHeader{kind: p[1], flags: p[2],
		handle: binary.LittleEndian.Uint32(p[4:]), fp: binary.LittleEndian.Uint64(p[8:])}
	if h.kind < kindCall || h.kind > kindCancel || h.flags&^(flagDeadline|flagCallID|flagMetadata) != 0 {
		return 0, ErrBadHeader
	}
	if h.flags == 0 {
		return reqFixed, nil // no optional part, no padding
	}
	off := reqFixed
	if h.flags&flagDeadline != 0 {
		if len(p)-off < 8 {
			return 0, ErrBadHeader
		}
		t := int64(binary.LittleEndian.Uint64(p[off:]))
		if t <= 0 {
			return 0, fmt.Errorf("%w: timeout %d", ErrBadHeader, t)
		}
		h.timeout = time.Duration(t)
		off += 8
	}
	if h.flags&flagCallID != 0 {
		if len(p)-off < 8 {
			return 0, ErrBadHeader
		}
		h.callID = binary.LittleEndian.Uint64(p[off:])
		off += 8
	}
	if h.flags&flagMetadata != 0 {
		if len(p)-off < 2 {
			return 0, ErrBadHeader
		}
		n := int(binary.LittleEndian.Uint16(p[off:]))
		off += 2
		if n == 0 || n > MaxMetadataSize || len(p)-off < n {
			return 0, ErrBadHeader
		}
		h.md = p[off : off+n]
		if _, err := walkMetadata(h.md, nil); err != nil {
			return 0, err
		}
		off += n
	}
	return skipPadding(p, off)
}

// parseFixedCall parses the most common request header, a call with the
// fixed part only, and reports whether p starts with one: then the message
// is at reqFixed and h is what parseReqHeader makes of it
// (FuzzRequestHeader checks that), with fewer checks.
func parseFixedCall(p []byte, h *reqHeader) bool {
	handle, fp, ok := fixedCall(p)
	if !ok {
		return false
	}
	*h = reqHeader{kind: kindCall, handle: handle, fp: fp}
	return true
}

// fixedCall is parseFixedCall returning the header's two fields instead
// of filling a reqHeader (Server.handle's common path).
func fixedCall(p []byte) (handle uint32, fp uint64, ok bool) {
	if len(p) < reqFixed || binary.LittleEndian.Uint32(p) != fixedCallWord {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(p[4:]), binary.LittleEndian.Uint64(p[8:]), true
}

// skipPadding checks the zero padding after a header ending at off and
// returns the offset of the message.
func skipPadding(p []byte, off int) (int, error) {
	pad := (8 - off%8) % 8
	if len(p)-off < pad {
		return 0, ErrBadHeader
	}
	for _, b := range p[off : off+pad] {
		if b != 0 {
			return 0, ErrBadHeader
		}
	}
	return off + pad, nil
}

// walkMetadata checks encoded metadata against the limits and, with fn,
// passes every pair to it (aliasing b). It returns the number of pairs.
func walkMetadata(b []byte, fn func(k, v []byte)) (int, error) {
	n := 0
	for len(b) > 0 {
		if n == MaxMetadataPairs {
			return 0, fmt.Errorf("%w: more than %d metadata pairs", ErrBadHeader, MaxMetadataPairs)
		}
		kl := int(b[0])
		if kl == 0 || kl > MaxMetadataKey || len(b) < 1+kl+2 {
			return 0, fmt.Errorf("%w: metadata key", ErrBadHeader)
		}
		k := b[1 : 1+kl]
		b = b[1+kl:]
		vl := int(binary.LittleEndian.Uint16(b))
		if vl > MaxMetadataValue || len(b)-2 < vl {
			return 0, fmt.Errorf("%w: metadata value", ErrBadHeader)
		}
		if fn != nil {
			fn(k, b[2:2+vl])
		}
		b = b[2+vl:]
		n++
	}
	return n, nil
}

// decodeMetadata turns encoded (already checked) metadata into pairs.
func decodeMetadata(b []byte) Metadata {
	if len(b) == 0 {
		return nil
	}
	n, _ := walkMetadata(b, nil)
	md := make(Metadata, 0, n)
	_, _ = walkMetadata(b, func(k, v []byte) { md = append(md, Pair{string(k), string(v)}) })
	return md
}

// appendRespOK appends the header of a successful response.
// respOKWord is the OK response header (appendRespOK) read as a
// little-endian uint64: the whole header in one comparison.
const respOKWord = uint64(magic)

// StatusOKLen is the length of the OK response header (PutStatusOK).
const StatusOKLen = respFixed

// PutStatusOK writes the OK response header (StatusOKLen bytes: a
// successful call's status, no metadata) at the start of dst, which must
// be at least that long: the generated in-place response writers
// (DirectKeep.W) write it before the response that follows it.
func PutStatusOK(dst []byte) {
	binary.LittleEndian.PutUint64(dst, respOKWord)
}

// fixedCallWord is the first four bytes of a call's fixed header without
// flags (parseFixedCall's test: magic, kindCall, no flags, no padding)
// read as a little-endian uint32.
const fixedCallWord = uint32(magic) | uint32(kindCall)<<8

// isRespOK reports whether p starts with the OK header without status
// (parseResp's common answer, offset respFixed), in one comparison.
func isRespOK(p []byte) bool {
	return len(p) >= respFixed && binary.LittleEndian.Uint64(p) == respOKWord
}

func appendRespOK(dst []byte) []byte {
	return append(dst, magic, byte(OK), 0, 0, 0, 0, 0, 0)
}

// appendRespStatus appends the header of a failed response carrying e
// (its message truncated to MaxStatusMessage; details beyond
// MaxStatusDetails are dropped and the code becomes Internal).
func appendRespStatus(dst []byte, e *Error) []byte {
	code, msg, det := e.Code, e.Message, e.Details
	if code == OK || int(code) >= NumCodes {
		code, msg = Unknown, fmt.Sprintf("invalid status code %d: %s", e.Code, msg)
	}
	if len(det) > MaxStatusDetails {
		code, msg, det = Internal, fmt.Sprintf("status details of %d bytes (at most %d): %s", len(det), MaxStatusDetails, msg), nil
	}
	if len(msg) > MaxStatusMessage {
		msg = msg[:MaxStatusMessage]
	}
	start := len(dst)
	dst = append(dst, magic, byte(code), 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(2+len(msg)+len(det)))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(msg)))
	dst = append(dst, msg...)
	dst = append(dst, det...)
	for (len(dst)-start)%8 != 0 {
		dst = append(dst, 0)
	}
	return dst
}

// parseResp parses a response: for OK the offset of the message; for any
// other code the *Error it carries (message and details copied).
func parseResp(p []byte) (int, *Error, error) {
	if len(p) < respFixed || p[0] != magic || p[2] != 0 || p[3] != 0 {
		return 0, nil, ErrBadHeader
	}
	code := Code(p[1])
	sl := int(binary.LittleEndian.Uint32(p[4:]))
	if code == OK && sl == 0 {
		return respFixed, nil, nil // the common answer: no status, no padding
	}
	if sl > 2+MaxStatusMessage+MaxStatusDetails || len(p)-respFixed < sl {
		return 0, nil, ErrBadHeader
	}
	off, err := skipPadding(p, respFixed+sl)
	if err != nil {
		return 0, nil, err
	}
	if code == OK {
		if sl != 0 {
			return 0, nil, ErrBadHeader
		}
		return off, nil, nil
	}
	st := p[respFixed : respFixed+sl]
	if len(st) < 2 {
		return 0, nil, ErrBadHeader
	}
	ml := int(binary.LittleEndian.Uint16(st))
	if ml > MaxStatusMessage || len(st)-2 < ml {
		return 0, nil, ErrBadHeader
	}
	e := &Error{Code: code, Message: string(st[2 : 2+ml])}
	if int(code) >= NumCodes {
		e = &Error{Code: Unknown, Message: fmt.Sprintf("invalid status code %d: %s", code, e.Message)}
	}
	if d := st[2+ml:]; len(d) > 0 {
		e.Details = append([]byte(nil), d...)
	}
	return off, e, nil
}
