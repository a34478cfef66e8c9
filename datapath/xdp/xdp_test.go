package xdp_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*13) + byte(i>>7)
	}
	return b
}

// recvOne waits (bounded) for one packet at to, flushing from.
func recvOne(t *testing.T, to, from datapath.Endpoint) datapath.Packet {
	t.Helper()
	pk := make([]datapath.Packet, 1)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := to.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return pk[0]
		}
		if err := from.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := to.Wait(time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no packet within 5s")
	return datapath.Packet{}
}

func expect(t *testing.T, p datapath.Packet, want []byte, what string) {
	t.Helper()
	got := p.Buf.Bytes()
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %d bytes, want %d (payload mismatch)", what, len(got), len(want))
	}
	if !mem.IsRegistered(got) && len(got) > 0 {
		t.Errorf("%s: payload not in registered memory", what)
	}
	memtest.Release(t, p.Buf)
}

// TestExchange sends single- and multi-buffer packets both ways between two
// namespaces, checking payloads byte for byte and that zero-copy segments
// are held until their completion.
func TestExchange(t *testing.T) {
	for _, mtu := range []int{1500, 9000} {
		t.Run(map[int]string{1500: "mtu1500", 9000: "mtu9000"}[mtu], func(t *testing.T) {
			tp := newTopo(t, mtu)
			pa, pb, app := tp.pool(t, "A"), tp.pool(t, "B"), tp.pool(t, "app")
			a := tp.open(t, tp.pair.A, pa, xdp.Options{})
			defer a.Close()
			b := tp.open(t, tp.pair.B, pb, xdp.Options{})
			defer b.Close()
			t.Logf("A %v %+v", a.LocalAddr(), a.Info())
			max := a.MaxPayload()

			// Plain sends of several sizes, A -> B and back.
			for _, n := range []int{0, 1, 64, 1000, 3797, 3798, 3799, 3800, max} {
				n = min(n, max)
				p := pattern(n, byte(n))
				if err := a.Send(b.LocalAddr(), p); err != nil {
					t.Fatal(err)
				}
				if err := a.Flush(); err != nil {
					t.Fatal(err)
				}
				got := recvOne(t, b, a)
				if got.From != a.LocalAddr() {
					t.Errorf("from %v, want %v", got.From, a.LocalAddr())
				}
				expect(t, got, p, "Send")
			}

			// Scatter-gather: head + zero-copy segments from the UMEM.
			head := pattern(30, 1)
			segs := []mem.Buf{memtest.Alloc(t, app, pattern(700, 2)), memtest.Alloc(t, app, pattern(max-30-700-100, 3)), memtest.Alloc(t, app, pattern(100, 4))}
			want := append([]byte(nil), head...)
			for _, s := range segs {
				want = append(want, s.Bytes()...)
			}
			if err := a.SendSegments(b.LocalAddr(), head, segs); err != nil {
				t.Fatal(err)
			}
			for i, s := range segs {
				if s.Refs() < 2 { // one per descriptor: a segment above ChunkSize is split
					t.Errorf("segment %d: %d refs before completion, want >= 2", i, s.Refs())
				}
			}
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			expect(t, recvOne(t, b, a), want, "SendSegments")
			deadline := time.Now().Add(5 * time.Second)
			for segs[1].Refs() != 1 && time.Now().Before(deadline) {
				_ = a.Flush()
				time.Sleep(time.Millisecond)
			}
			for i, s := range segs {
				if s.Refs() != 1 {
					t.Errorf("segment %d: %d refs after completion, want 1", i, s.Refs())
				}
				memtest.Release(t, s)
			}
			st := a.Stats()
			if st.ZeroCopyEntries < 3 {
				t.Errorf("ZeroCopyEntries = %d, want >= 3", st.ZeroCopyEntries)
			}

			// Object with zero-copy entries, B -> A (reply direction).
			obj := &dptest.Object{Header: pattern(12, 5), Copied: pattern(40, 6)}
			for i := range 4 {
				obj.Entries = append(obj.Entries, memtest.Alloc(t, app, pattern((max-200)/4, byte(10+i))))
			}
			wantObj := append([]byte("hdr"), obj.WireBytes()...)
			if err := b.SendObject(a.LocalAddr(), []byte("hdr"), obj); err != nil {
				t.Fatal(err)
			}
			for _, s := range obj.Entries {
				memtest.Release(t, s)
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			expect(t, recvOne(t, a, b), wantObj, "SendObject")
			ks, err := b.KernelStats()
			if err != nil {
				t.Fatal(err)
			}
			if ks.Tx_invalid_descs != 0 || ks.Rx_invalid_descs != 0 {
				t.Errorf("kernel reports invalid descriptors: %+v", ks)
			}
		})
	}
}
