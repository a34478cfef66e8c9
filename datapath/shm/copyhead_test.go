package shm

import (
	"bytes"
	"testing"
)

// TestCopyHead: copyHead is copy for every length (the 8-16 byte moves
// included), and writes nothing past len(src).
func TestCopyHead(t *testing.T) {
	for n := 0; n <= 40; n++ {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i + 1)
		}
		for _, extra := range []int{0, 1, 8} {
			dst := bytes.Repeat([]byte{0xee}, n+extra)
			if got := copyHead(dst, src); got != n {
				t.Fatalf("n=%d: copied %d", n, got)
			}
			want := append(append([]byte{}, src...), bytes.Repeat([]byte{0xee}, extra)...)
			if !bytes.Equal(dst, want) {
				t.Fatalf("n=%d extra=%d: %v, want %v", n, extra, dst, want)
			}
		}
	}
	// A dst shorter than src: copy's semantics (what fits).
	dst := make([]byte, 10)
	if got := copyHead(dst, bytes.Repeat([]byte{7}, 12)); got != 10 || !bytes.Equal(dst, bytes.Repeat([]byte{7}, 10)) {
		t.Fatalf("short dst: copied %d, %v", got, dst)
	}
}
