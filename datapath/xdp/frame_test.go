package xdp

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

var (
	macA = [6]byte{2, 0, 0, 0, 0, 1}
	macB = [6]byte{2, 0, 0, 0, 0, 2}
	srcA = netip.MustParseAddrPort("10.1.2.3:4000")
	dstB = netip.MustParseAddrPort("10.1.2.4:5000")
)

func buildFrame(payload []byte, csum bool) []byte {
	f := make([]byte, HeaderLen+len(payload))
	copy(f[HeaderLen:], payload)
	writeHeader(f, macA, macB, srcA, dstB, len(payload), 77)
	if csum {
		udpChecksum(f, [][]byte{f[HeaderLen:]})
	}
	return f
}

func TestParseFrame(t *testing.T) {
	good := buildFrame([]byte("hello, world"), true)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, c := range []struct {
		name  string
		frame []byte
		total int // 0: len(frame)
		err   error
	}{
		{"ok", good, 0, nil},
		{"padded", append(append([]byte(nil), good...), 0, 0, 0, 0), 0, nil},
		{"short", good[:HeaderLen-1], 0, errShort},
		{"vlan", mod(func(b []byte) []byte { b[12], b[13] = 0x81, 0x00; return b }), 0, errEtherType},
		{"ipv6", mod(func(b []byte) []byte { b[14] = 0x65; return b }), 0, errVersion},
		{"ihl4", mod(func(b []byte) []byte { b[14] = 0x44; return b }), 0, errVersion},
		{"ihl15", mod(func(b []byte) []byte { b[14] = 0x4f; return b }), 0, errShort},
		{"totlen-big", mod(func(b []byte) []byte { b[16] = 0xff; return b }), 0, errIPLen},
		{"totlen-small", mod(func(b []byte) []byte { b[16], b[17] = 0, 27; return b }), 0, errIPLen},
		{"fragment", mod(func(b []byte) []byte { b[20] |= 0x20; return b }), 0, errFragment},
		{"tcp", mod(func(b []byte) []byte { b[23] = 6; return b }), 0, errProto},
		{"ipsum", mod(func(b []byte) []byte { b[24] ^= 1; return b }), 0, errIPSum},
		{"udplen-big", mod(func(b []byte) []byte { b[38], b[39] = 0, 200; return b }), 0, errUDPLen},
		{"udplen-small", mod(func(b []byte) []byte { b[38], b[39] = 0, 7; return b }), 0, errUDPLen},
		{"total<first", good, 10, errShort},
	} {
		t.Run(c.name, func(t *testing.T) {
			total := c.total
			if total == 0 {
				total = len(c.frame)
			}
			fi, err := parseFrame(c.frame, total)
			if !errors.Is(err, c.err) || (c.err != nil && !errors.Is(err, ErrMalformed)) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if fi.Src != srcA || fi.Dst != dstB || fi.SrcMAC != macA {
				t.Errorf("parsed %+v", fi)
			}
			if got := c.frame[fi.PayloadOff : fi.PayloadOff+fi.PayloadLen]; string(got) != "hello, world" {
				t.Errorf("payload %q", got)
			}
		})
	}
}

func TestUDPChecksum(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 17, 1000, 1001} {
		p := bytes.Repeat([]byte{0xab, 0x01, 0xff}, n)[:n]
		f := buildFrame(p, true)
		fi, err := parseFrame(f, len(f))
		if err != nil {
			t.Fatal(err)
		}
		// The checksum is the same however the payload is split.
		whole := [][]byte{f[HeaderLen:]}
		var split [][]byte
		for i := 0; i < n; i += 7 {
			split = append(split, f[HeaderLen+i:HeaderLen+min(i+7, n)])
		}
		if !verifyUDPChecksum(f, fi, whole) || !verifyUDPChecksum(f, fi, split) {
			t.Errorf("n=%d: checksum does not verify", n)
		}
		if n > 0 {
			f[HeaderLen] ^= 0x10
			if verifyUDPChecksum(f, fi, whole) {
				t.Errorf("n=%d: corrupted payload verifies", n)
			}
		}
	}
}

// FuzzParseFrame: any input either fails with ErrMalformed or yields a
// payload window inside the frame; a frame rebuilt from the parsed fields
// parses to the same fields.
func FuzzParseFrame(f *testing.F) {
	f.Add(buildFrame([]byte("hello"), true), uint16(0), false)
	f.Add(buildFrame(nil, false), uint16(0), true)
	f.Add(buildFrame(bytes.Repeat([]byte{7}, 300), false)[:100], uint16(200), true)
	f.Fuzz(func(t *testing.T, frame []byte, extra uint16, fixSum bool) {
		total := len(frame) + int(extra)
		// fixSum repairs the IPv4 header checksum so that mutations reach
		// the checks behind it.
		if fixSum && len(frame) >= ethLen+ipLen {
			ihl := int(frame[ethLen]&0x0f) * 4
			if ihl >= ipLen && len(frame) >= ethLen+ihl {
				ip := frame[ethLen : ethLen+ihl]
				ip[10], ip[11] = 0, 0
				s := checksum(ip, 0)
				ip[10], ip[11] = byte(s>>8), byte(s)
			}
		}
		fi, err := parseFrame(frame, total)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if fi.PayloadOff > len(frame) || fi.PayloadOff+fi.PayloadLen > total || fi.PayloadLen < 0 {
			t.Fatalf("payload window [%d, +%d) outside a %d-byte frame", fi.PayloadOff, fi.PayloadLen, total)
		}
		re := make([]byte, HeaderLen+fi.PayloadLen)
		writeHeader(re, fi.SrcMAC, macB, fi.Src, fi.Dst, fi.PayloadLen, 1)
		fj, err := parseFrame(re, len(re))
		if err != nil || fj.Src != fi.Src || fj.Dst != fi.Dst || fj.PayloadLen != fi.PayloadLen || fj.SrcMAC != fi.SrcMAC {
			t.Fatalf("rebuilt frame parses to %+v, %v; want %+v", fj, err, fi)
		}
	})
}
