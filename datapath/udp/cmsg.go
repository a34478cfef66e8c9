package udp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Control-message parsing for the two kinds of ancillary data this datapath
// reads: the UDP_GRO segment size on receive and MSG_ZEROCOPY completion
// notices (struct sock_extended_err) on the error queue. The kernel is the
// only writer, but the parsers still check every length so that a bug or a
// surprise (an unexpected cmsg, a truncated buffer) is an error, never a
// panic or an out-of-range read.

const (
	cmsgHdrLen = unix.SizeofCmsghdr // 16 on 64-bit Linux: len u64, level i32, type i32
	// sockExtErrLen is sizeof(struct sock_extended_err).
	sockExtErrLen = 16
)

// ErrBadControl reports malformed ancillary data.
var ErrBadControl = errors.New("udp: malformed control message")

func cmsgAlign(n int) int { return (n + 7) &^ 7 }

// nextCmsg splits the first control message off b. rest is empty at the end.
func nextCmsg(b []byte) (level, typ int32, data, rest []byte, err error) {
	if len(b) < cmsgHdrLen {
		return 0, 0, nil, nil, fmt.Errorf("%w: %d trailing bytes", ErrBadControl, len(b))
	}
	l := binary.NativeEndian.Uint64(b)
	if l < cmsgHdrLen || l > uint64(len(b)) {
		return 0, 0, nil, nil, fmt.Errorf("%w: cmsg length %d of %d", ErrBadControl, l, len(b))
	}
	level = int32(binary.NativeEndian.Uint32(b[8:]))
	typ = int32(binary.NativeEndian.Uint32(b[12:]))
	data = b[cmsgHdrLen:l]
	adv := cmsgAlign(int(l))
	if adv > len(b) {
		adv = len(b)
	}
	return level, typ, data, b[adv:], nil
}

// parseGRO returns the GRO segment size carried in the control bytes of a
// received message (0 when the message was not coalesced). Other control
// messages are skipped.
func parseGRO(b []byte) (int, error) {
	seg := 0
	for len(b) > 0 {
		level, typ, data, rest, err := nextCmsg(b)
		if err != nil {
			return 0, err
		}
		if level == unix.SOL_UDP && typ == unix.UDP_GRO {
			if len(data) < 4 && len(data) != 2 {
				return 0, fmt.Errorf("%w: UDP_GRO payload of %d bytes", ErrBadControl, len(data))
			}
			var v int
			if len(data) >= 4 {
				v = int(int32(binary.NativeEndian.Uint32(data)))
			} else {
				v = int(binary.NativeEndian.Uint16(data))
			}
			if v <= 0 || v > maxUDPPayload {
				return 0, fmt.Errorf("%w: UDP_GRO segment size %d", ErrBadControl, v)
			}
			seg = v
		}
		b = rest
	}
	return seg, nil
}

// zcNotice is one MSG_ZEROCOPY completion: sends with ids lo..hi (inclusive,
// modulo 2^32) completed; copied reports SO_EE_CODE_ZEROCOPY_COPIED (the
// kernel copied the data instead of sending it from our pages).
type zcNotice struct {
	lo, hi uint32
	copied bool
}

// parseErrQueue parses the control bytes of one recvmsg(MSG_ERRQUEUE) and
// returns the zero-copy notice it carries. ok is false for error-queue
// messages of another origin (e.g. ICMP), which the caller ignores.
func parseErrQueue(b []byte) (n zcNotice, ok bool, err error) {
	for len(b) > 0 {
		level, typ, data, rest, err := nextCmsg(b)
		if err != nil {
			return zcNotice{}, false, err
		}
		b = rest
		if !(level == unix.SOL_IP && typ == unix.IP_RECVERR) && !(level == unix.SOL_IPV6 && typ == unix.IPV6_RECVERR) {
			continue
		}
		if len(data) < sockExtErrLen {
			return zcNotice{}, false, fmt.Errorf("%w: sock_extended_err of %d bytes", ErrBadControl, len(data))
		}
		errno := binary.NativeEndian.Uint32(data[0:])
		origin := data[4]
		code := data[6]
		info := binary.NativeEndian.Uint32(data[8:])
		hi := binary.NativeEndian.Uint32(data[12:])
		if origin != unix.SO_EE_ORIGIN_ZEROCOPY {
			continue
		}
		if errno != 0 {
			return zcNotice{}, false, fmt.Errorf("%w: zerocopy notice with errno %d", ErrBadControl, errno)
		}
		if hi-info >= maxZCRange {
			return zcNotice{}, false, fmt.Errorf("%w: zerocopy range [%d,%d]", ErrBadControl, info, hi)
		}
		return zcNotice{lo: info, hi: hi, copied: code&unix.SO_EE_CODE_ZEROCOPY_COPIED != 0}, true, nil
	}
	return zcNotice{}, false, nil
}

// maxZCRange bounds the number of sends one notice may complete; the kernel
// coalesces at most the sends outstanding on the socket, which this
// endpoint limits far below this.
const maxZCRange = 1 << 20

// putSegmentCmsg writes a UDP_SEGMENT control message for GSO segment size
// seg into b (len(b) >= segCmsgSpace) and returns its length.
func putSegmentCmsg(b []byte, seg uint16) int {
	binary.NativeEndian.PutUint64(b[0:], uint64(cmsgHdrLen+2))
	binary.NativeEndian.PutUint32(b[8:], uint32(unix.SOL_UDP))
	binary.NativeEndian.PutUint32(b[12:], uint32(unix.UDP_SEGMENT))
	binary.NativeEndian.PutUint16(b[16:], seg)
	for i := cmsgHdrLen + 2; i < segCmsgSpace; i++ {
		b[i] = 0
	}
	return segCmsgSpace
}

// segCmsgSpace is CMSG_SPACE(sizeof(uint16)).
const segCmsgSpace = cmsgHdrLen + 8
