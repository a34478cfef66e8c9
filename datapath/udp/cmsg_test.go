package udp

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, cmsgAlign(cmsgHdrLen+len(data)))
	binary.NativeEndian.PutUint64(b, uint64(cmsgHdrLen+len(data)))
	binary.NativeEndian.PutUint32(b[8:], uint32(level))
	binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	copy(b[cmsgHdrLen:], data)
	return b
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func extErr(errno uint32, origin, code uint8, lo, hi uint32) []byte {
	b := make([]byte, sockExtErrLen)
	binary.NativeEndian.PutUint32(b, errno)
	b[4], b[6] = origin, code
	binary.NativeEndian.PutUint32(b[8:], lo)
	binary.NativeEndian.PutUint32(b[12:], hi)
	return b
}

func TestParseGRO(t *testing.T) {
	other := cmsg(unix.SOL_IP, unix.IP_TOS, []byte{1})
	for _, tc := range []struct {
		name string
		in   []byte
		want int
		err  bool
	}{
		{"empty", nil, 0, false},
		{"gro", cmsg(unix.SOL_UDP, unix.UDP_GRO, u32(1400)), 1400, false},
		{"after other", append(other, cmsg(unix.SOL_UDP, unix.UDP_GRO, u32(64))...), 64, false},
		{"zero size", cmsg(unix.SOL_UDP, unix.UDP_GRO, u32(0)), 0, true},
		{"huge size", cmsg(unix.SOL_UDP, unix.UDP_GRO, u32(1<<20)), 0, true},
		{"short payload", cmsg(unix.SOL_UDP, unix.UDP_GRO, []byte{1}), 0, true},
		{"truncated header", []byte{1, 2, 3}, 0, true},
		{"length past end", cmsg(unix.SOL_UDP, unix.UDP_GRO, u32(64))[:18], 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGRO(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parseGRO = %d, %v; want %d, err=%v", got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, ErrBadControl) {
				t.Fatalf("error %v is not ErrBadControl", err)
			}
		})
	}
}

func TestParseErrQueue(t *testing.T) {
	zc := func(code uint8, lo, hi uint32) []byte {
		return cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(0, unix.SO_EE_ORIGIN_ZEROCOPY, code, lo, hi))
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want zcNotice
		ok   bool
		err  bool
	}{
		{"copied", zc(1, 3, 7), zcNotice{3, 7, true}, true, false},
		{"not copied v6", cmsg(unix.SOL_IPV6, unix.IPV6_RECVERR, extErr(0, unix.SO_EE_ORIGIN_ZEROCOPY, 0, 0, 0)), zcNotice{0, 0, false}, true, false},
		{"wraps", zc(0, 0xfffffffe, 1), zcNotice{0xfffffffe, 1, false}, true, false},
		{"icmp ignored", cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(111, unix.SO_EE_ORIGIN_ICMP, 3, 0, 0)), zcNotice{}, false, false},
		{"errno", cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(5, unix.SO_EE_ORIGIN_ZEROCOPY, 0, 0, 0)), zcNotice{}, false, true},
		{"short", cmsg(unix.SOL_IP, unix.IP_RECVERR, make([]byte, 8)), zcNotice{}, false, true},
		{"range too wide", zc(0, 5, 4), zcNotice{}, false, true},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, zcNotice{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := parseErrQueue(tc.in)
			if (err != nil) != tc.err || ok != tc.ok || got != tc.want {
				t.Fatalf("got %+v ok=%v err=%v; want %+v ok=%v err=%v", got, ok, err, tc.want, tc.ok, tc.err)
			}
		})
	}
}

func TestZCTrackerOutOfOrder(t *testing.T) {
	z := newZCTracker(4, 2)
	for range 4 {
		z.add(nil)
	}
	if z.free() != 0 {
		t.Fatal("tracker not full")
	}
	if err := z.complete(zcNotice{lo: 2, hi: 3}); err != nil {
		t.Fatal(err)
	}
	if z.n != 4 {
		t.Fatalf("completed out of order before the head: n=%d", z.n)
	}
	if err := z.complete(zcNotice{lo: 0, hi: 1, copied: true}); err != nil {
		t.Fatal(err)
	}
	if z.n != 0 || z.stats.Completed != 4 || z.stats.Copied != 2 || z.stats.NotCopied != 2 {
		t.Fatalf("n=%d stats=%+v", z.n, z.stats)
	}
}

// FuzzParseControl feeds arbitrary control bytes to both parsers: they must
// return an error or a value within limits, never panic.
func FuzzParseControl(f *testing.F) {
	f.Add(cmsg(unix.SOL_UDP, unix.UDP_GRO, u32(1400)))
	f.Add(cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(0, unix.SO_EE_ORIGIN_ZEROCOPY, 1, 0, 9)))
	f.Add(append(cmsg(unix.SOL_IP, unix.IP_TOS, []byte{1}), cmsg(unix.SOL_IPV6, unix.IPV6_RECVERR, extErr(0, unix.SO_EE_ORIGIN_ZEROCOPY, 0, 4, 4))...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		seg, err := parseGRO(b)
		if err == nil && (seg < 0 || seg > maxUDPPayload) {
			t.Fatalf("segment size %d", seg)
		}
		n, ok, err := parseErrQueue(b)
		if err == nil && ok && n.hi-n.lo >= maxZCRange {
			t.Fatalf("range %+v", n)
		}
		if err != nil && ok {
			t.Fatal("ok with error")
		}
	})
}
