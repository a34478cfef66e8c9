package xdp

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Frame layout: Ethernet II (no VLAN tag), IPv4, UDP.
const (
	ethLen = 14
	ipLen  = 20 // IPv4 header without options (what this datapath sends)
	udpLen = 8
	// HeaderLen is the bytes of Ethernet, IPv4 and UDP headers in front of
	// every payload this datapath sends.
	HeaderLen = ethLen + ipLen + udpLen

	etherTypeIPv4 = 0x0800
	protoUDP      = 17
	defaultTTL    = 64
)

// ErrMalformed is wrapped by every frame-parsing error: the frame is not a
// well-formed, unfragmented Ethernet/IPv4/UDP datagram.
var ErrMalformed = errors.New("xdp: malformed frame")

// Parse errors, preallocated so that dropping a bad frame allocates nothing.
var (
	errShort     = wrapMalformed("truncated headers")
	errEtherType = wrapMalformed("not IPv4")
	errVersion   = wrapMalformed("bad IPv4 version or header length")
	errIPLen     = wrapMalformed("bad IPv4 total length")
	errFragment  = wrapMalformed("IPv4 fragment")
	errProto     = wrapMalformed("not UDP")
	errIPSum     = wrapMalformed("bad IPv4 header checksum")
	errUDPLen    = wrapMalformed("bad UDP length")
)

type malformed struct{ why string }

func (m *malformed) Error() string        { return "xdp: malformed frame: " + m.why }
func (m *malformed) Is(target error) bool { return target == ErrMalformed }

func wrapMalformed(why string) error { return &malformed{why} }

// frameInfo is what parseFrame extracts from a received frame.
type frameInfo struct {
	Src, Dst     netip.AddrPort
	SrcMAC       [6]byte
	PayloadOff   int // offset of the UDP payload in the frame
	PayloadLen   int // UDP payload bytes (from the UDP length field)
	UDPChecksum  uint16
	IPHeaderSize int
}

// parseFrame parses the headers of a received frame. first is the first
// buffer of the frame (it must hold all headers); total is the length of
// the whole frame across all its buffers (>= len(first)). Trailing bytes
// after the IPv4 total length (Ethernet padding) are ignored. It never
// reads outside first and never allocates.
func parseFrame(first []byte, total int) (frameInfo, error) {
	var fi frameInfo
	if len(first) < ethLen+ipLen+udpLen || total < len(first) {
		return fi, errShort
	}
	if binary.BigEndian.Uint16(first[12:14]) != etherTypeIPv4 {
		return fi, errEtherType
	}
	ip := first[ethLen:]
	vihl := ip[0]
	ihl := int(vihl&0x0f) * 4
	if vihl>>4 != 4 || ihl < ipLen {
		return fi, errVersion
	}
	if len(ip) < ihl+udpLen {
		return fi, errShort
	}
	totLen := int(binary.BigEndian.Uint16(ip[2:4]))
	if totLen < ihl+udpLen || totLen > total-ethLen {
		return fi, errIPLen
	}
	if binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0 { // MF flag or fragment offset
		return fi, errFragment
	}
	if ip[9] != protoUDP {
		return fi, errProto
	}
	if checksum(ip[:ihl], 0) != 0 {
		return fi, errIPSum
	}
	udp := ip[ihl:]
	ulen := int(binary.BigEndian.Uint16(udp[4:6]))
	if ulen < udpLen || ulen > totLen-ihl {
		return fi, errUDPLen
	}
	copy(fi.SrcMAC[:], first[6:12])
	fi.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(udp[0:2]))
	fi.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(udp[2:4]))
	fi.PayloadOff = ethLen + ihl + udpLen
	fi.PayloadLen = ulen - udpLen
	fi.UDPChecksum = binary.BigEndian.Uint16(udp[6:8])
	fi.IPHeaderSize = ihl
	return fi, nil
}

// writeHeader writes the Ethernet, IPv4 and UDP headers of a datagram with
// payloadLen payload bytes into h[:HeaderLen]. The UDP checksum is 0 (none,
// allowed for IPv4); see udpChecksum to fill it in.
func writeHeader(h []byte, srcMAC, dstMAC [6]byte, src, dst netip.AddrPort, payloadLen int, id uint16) {
	_ = h[HeaderLen-1]
	copy(h[0:6], dstMAC[:])
	copy(h[6:12], srcMAC[:])
	binary.BigEndian.PutUint16(h[12:14], etherTypeIPv4)
	ip := h[ethLen : ethLen+ipLen]
	ip[0] = 0x45
	ip[1] = 0
	binary.BigEndian.PutUint16(ip[2:4], uint16(ipLen+udpLen+payloadLen))
	binary.BigEndian.PutUint16(ip[4:6], id)
	binary.BigEndian.PutUint16(ip[6:8], 0x4000) // DF
	ip[8] = defaultTTL
	ip[9] = protoUDP
	ip[10], ip[11] = 0, 0
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:12], checksum(ip, 0))
	udp := h[ethLen+ipLen : HeaderLen]
	binary.BigEndian.PutUint16(udp[0:2], src.Port())
	binary.BigEndian.PutUint16(udp[2:4], dst.Port())
	binary.BigEndian.PutUint16(udp[4:6], uint16(udpLen+payloadLen))
	udp[6], udp[7] = 0, 0
}

// csum accumulates a ones'-complement Internet checksum over a byte stream
// that may be split at odd offsets.
type csum struct {
	sum uint64
	odd bool // the next byte is the low byte of a 16-bit word
}

func (c *csum) add(b []byte) {
	if len(b) == 0 {
		return
	}
	if c.odd {
		c.sum += uint64(b[0])
		b = b[1:]
		c.odd = false
	}
	for len(b) >= 8 {
		c.sum += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		c.sum += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		c.sum += uint64(b[0]) << 8
		c.odd = true
	}
}

func (c *csum) fold() uint16 {
	s := c.sum
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// checksum is the Internet checksum of b with an initial partial sum.
func checksum(b []byte, initial uint64) uint16 {
	c := csum{sum: initial}
	c.add(b)
	return ^c.fold()
}

// udpChecksum computes the UDP checksum of the datagram whose headers are
// in h[:HeaderLen] and whose payload is the concatenation of parts, and
// stores it in the header (0 is sent as 0xffff, RFC 768).
func udpChecksum(h []byte, parts [][]byte) {
	ip := h[ethLen : ethLen+ipLen]
	udp := h[ethLen+ipLen : HeaderLen]
	udp[6], udp[7] = 0, 0
	var c csum
	c.add(ip[12:20]) // source and destination addresses
	c.sum += protoUDP + uint64(binary.BigEndian.Uint16(udp[4:6]))
	c.add(udp)
	for _, p := range parts {
		c.add(p)
	}
	v := ^c.fold()
	if v == 0 {
		v = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:8], v)
}

// verifyUDPChecksum reports whether the UDP checksum of a parsed frame is
// absent (0) or correct. parts are the UDP payload pieces.
func verifyUDPChecksum(frame []byte, fi frameInfo, parts [][]byte) bool {
	if fi.UDPChecksum == 0 {
		return true
	}
	ip := frame[ethLen : ethLen+fi.IPHeaderSize]
	udp := frame[ethLen+fi.IPHeaderSize : fi.PayloadOff]
	var c csum
	c.add(ip[12:20])
	c.sum += protoUDP + uint64(fi.PayloadLen+udpLen)
	c.add(udp)
	for _, p := range parts {
		c.add(p)
	}
	return c.fold() == 0xffff
}
