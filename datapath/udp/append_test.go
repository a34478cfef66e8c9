package udp

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// AppendPacket queues packets whose payload the caller fills in place;
// they arrive intact and in order with Send's, bad sizes are errors and
// the TX buffers return to the pool (memtest checks InUse at cleanup).
func TestAppendPacket(t *testing.T) {
	a, b := loopback(t), loopback(t)
	dst := b.LocalAddr()
	var want [][]byte
	for i, n := range []int{1, 48, 300, a.MaxPayload()} {
		p, err := a.AppendPacket(dst, n)
		if err != nil {
			t.Fatalf("AppendPacket(%d): %v", n, err)
		}
		if len(p) != n {
			t.Fatalf("AppendPacket(%d) returned %d bytes", n, len(p))
		}
		copy(p, pattern(n, i))
		want = append(want, pattern(n, i))
		if i == 1 {
			if err := a.Send(dst, []byte("between")); err != nil {
				t.Fatal(err)
			}
			want = append(want, []byte("between"))
		}
	}
	for _, tc := range []struct {
		name string
		dst  netip.AddrPort
		n    int
		want error
	}{
		{"zero", dst, 0, nil},
		{"negative", dst, -1, nil},
		{"too large", dst, a.MaxPayload() + 1, datapath.ErrTooLarge},
		{"invalid destination", netip.AddrPort{}, 8, nil},
	} {
		p, err := a.AppendPacket(tc.dst, tc.n)
		if err == nil || p != nil {
			t.Errorf("%s: AppendPacket = %d bytes, %v; want an error", tc.name, len(p), err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	recvWant(t, b, want)
	if st := a.Stats(); st.CopiedEntries != uint64(len(want)) {
		t.Errorf("CopiedEntries = %d, want %d", st.CopiedEntries, len(want))
	}
}
