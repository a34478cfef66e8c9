package shm

import (
	"testing"
	"unsafe"
)

func TestRxAlignSeg(t *testing.T) {
	for _, tc := range []struct {
		segs    []seg
		idx, at int
	}{
		{nil, -1, 0},
		{[]seg{{n: 16}, {n: 1023}}, -1, 0},
		{[]seg{{n: 16}, {space: 1, n: 4096}}, 1, 16},
		{[]seg{{n: 48}, {space: 1, n: 2048}, {space: 1, n: 4096}, {space: 1, n: 4096}}, 2, 2096},
	} {
		idx, at := rxAlignSeg(tc.segs)
		if idx != tc.idx || (idx >= 0 && at != tc.at) {
			t.Errorf("rxAlignSeg(%v) = %d, %d; want %d, %d", tc.segs, idx, at, tc.idx, tc.at)
		}
	}
}

func TestRxAlignPad(t *testing.T) {
	buf := make([]byte, 4*rxAlign)
	for s := range rxAlign {
		for d := range rxAlign {
			pad := rxAlignPad(&buf[s], &buf[2*rxAlign+d])
			if pad < 0 || pad >= rxAlign {
				t.Fatalf("pad %d out of range", pad)
			}
			src := uintptr(unsafe.Pointer(&buf[s]))
			dst := uintptr(unsafe.Pointer(&buf[2*rxAlign+d])) + uintptr(pad)
			if (src-dst)%rxAlign != 0 {
				t.Fatalf("src %d dst %d: pad %d leaves them %d apart mod %d", s, d, pad, (src-dst)%rxAlign, rxAlign)
			}
		}
	}
}

func TestSameClass(t *testing.T) {
	for _, tc := range []struct {
		a, b int
		want bool
	}{
		{4112, 4175, true}, {4096, 4159, false}, {1024, 1087, false}, {1100, 1163, true}, {8129, 8192, true}, {8130, 8193, false},
	} {
		if got := sameClass(tc.a, tc.b); got != tc.want {
			t.Errorf("sameClass(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
