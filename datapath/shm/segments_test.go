package shm_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestSegmentedZeroCopy: a 2x2048 object sent with SendObject is received
// with RecvSegments and decoded in place: its values alias the sender's
// memory, which the sender keeps referenced until the receiver's arena is
// Reset; then the completion releases it.
func TestSegmentedZeroCopy(t *testing.T) {
	a, app := openTest(t, netip.AddrPort{})
	b, _ := openTest(t, netip.AddrPort{})
	v1 := memtest.Alloc(t, app, pattern(2048, 1))
	v2 := memtest.Alloc(t, app, pattern(2048, 2))
	sa := wire.NewArena()
	sa.Threshold = 512
	m := cf.NewListBuffers(sa)
	l := m.InitMessages(2)
	l.AppendBuf(v1)
	l.AppendBuf(v2)
	if err := a.SendObject(b.LocalAddr(), []byte("rpc-head"), m); err != nil {
		t.Fatal(err)
	}
	if err := sa.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.ZeroCopyEntries != 2 || st.ZeroCopyBytes != 4096 {
		t.Errorf("sender stats %+v: want 2 zero-copy entries of 4096 bytes", st)
	}
	p := recvSegs(t, b)
	ra := wire.NewArena()
	got := cf.NewListBuffers(ra)
	if string(p.Segs[0][:8]) != "rpc-head" {
		t.Fatalf("head %q", p.Segs[0])
	}
	if err := wire.DecodeSegments(got, p.Segs, 8, p.Hold); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, p.Hold)
	gl, err := got.GetMessages()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []mem.Buf{v1, v2} {
		g := gl.At(i)
		if !bytes.Equal(g, want.Bytes()) {
			t.Fatalf("value %d differs", i)
		}
		if mem.IsRegistered(g) || &g[0] == &want.Bytes()[0] {
			t.Errorf("value %d: want an alias of the sender's memory through the receiver's read-only mapping", i)
		}
	}
	if st := b.ShmStats(); st.RxZeroCopyBytes != 4096 || st.RxHeadBytes > 256 || st.RxCopiedBytes != 0 {
		t.Errorf("receiver stats: %d bytes in place, %d head bytes, %d copied; want 4096, <= 256, 0", st.RxZeroCopyBytes, st.RxHeadBytes, st.RxCopiedBytes)
	}
	// The sender holds its references while the receiver's arena does.
	for range 5 {
		_ = b.Flush()
		_ = a.Flush()
		time.Sleep(time.Millisecond)
	}
	if v1.Refs() != 2 || v2.Refs() != 2 {
		t.Fatalf("while the receiver holds the message: refs %d, %d; want 2 (application + datapath)", v1.Refs(), v2.Refs())
	}
	if err := ra.Reset(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for v1.Refs() != 1 || v2.Refs() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after the receiver's Reset: refs %d, %d; want 1", v1.Refs(), v2.Refs())
		}
		_ = b.Flush() // notices the release, posts the completion
		_ = a.Flush() // reaps it
		_ = a.Wait(time.Millisecond)
	}
	memtest.Release(t, v1)
	memtest.Release(t, v2)

	// Recv on the same kind of packet gathers it and completes at once.
	v3 := memtest.Alloc(t, app, pattern(4000, 3))
	if err := a.SendSegments(b.LocalAddr(), []byte("h"), []mem.Buf{v3}); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	pk := make([]datapath.Packet, 1)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if n, err := b.Recv(pk); err != nil {
			t.Fatal(err)
		} else if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no packet")
		}
		_ = b.Wait(time.Millisecond)
	}
	if !bytes.Equal(pk[0].Buf.Bytes(), append([]byte("h"), v3.Bytes()...)) || !mem.IsRegistered(pk[0].Buf.Bytes()) {
		t.Error("Recv: payload differs or is not in the receiver's registered memory")
	}
	memtest.Release(t, pk[0].Buf)
	for deadline := time.Now().Add(10 * time.Second); v3.Refs() != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("after Recv: refs %d, want 1", v3.Refs())
		}
		_ = b.Flush()
		_ = a.Flush()
		_ = a.Wait(time.Millisecond)
	}
	memtest.Release(t, v3)
}

// TestZeroCopyBudget: beyond MaxZeroCopyBytes held by one peer, entries are
// copied (and counted), so a peer cannot pin unbounded memory.
func TestZeroCopyBudget(t *testing.T) {
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app", Space: space})
	a, b := openBudget(t, space, 4096), openBudget(t, space, 0)
	segs := []mem.Buf{memtest.Alloc(t, app, pattern(3000, 1)), memtest.Alloc(t, app, pattern(3000, 2))}
	if err := a.SendSegments(b.LocalAddr(), nil, segs); err != nil {
		t.Fatal(err)
	}
	st := a.ShmStats()
	if st.ZeroCopyEntries != 1 || st.ZeroCopyFallbacks != 1 || st.CopiedBytes != 3000 {
		t.Errorf("stats %+v: want one entry zero-copy and one copied (budget 4096 bytes)", st)
	}
	_ = a.Flush()
	p := recvSegs(t, b)
	if !bytes.Equal(p.AppendTo(nil), append(segs[0].Bytes(), segs[1].Bytes()...)) {
		t.Error("payload differs")
	}
	memtest.Release(t, p.Hold)
	for _, s := range segs {
		memtest.Release(t, s)
	}
}

func openBudget(t *testing.T, space *mem.Space, budget int64) *shm.Endpoint {
	t.Helper()
	ep, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}, MaxZeroCopyBytes: budget}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	return ep
}

// TestTouchSegments: with Options.TouchSegments, RecvSegments reads the
// first, middle and last byte of every segment but the head of a batch of
// two or more packets (and nothing else: touchBatch is off here) before it
// returns
// them, and the packets are the same as without it; a batch of one packet
// is not touched.
func TestTouchSegments(t *testing.T) {
	defer shm.SetPrefetchRx(shm.SetPrefetchRx(false))
	for _, touch := range []bool{true, false} {
		a, app := openTest(t, netip.AddrPort{})
		space := testSpace(t)
		b, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}, TouchSegments: touch}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		sizes := [][]int{{3000}, {1, 700}, {5000, 2}, {4100}}
		send := func(sz [][]int) {
			for i, vs := range sz {
				var vals [][]byte
				for j, n := range vs {
					vals = append(vals, pattern(n, byte(7*i+j+1)))
				}
				sendObj(t, a, app, b.LocalAddr(), byte(i), vals)
			}
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		// One packet alone: nothing to overlap, not touched.
		send(sizes[:1])
		p := recvSegs(t, b)
		memtest.Release(t, p.Hold)
		if got := b.Touched(); got != 0 {
			t.Fatalf("touch=%v: one packet: touched sum %d, want 0", touch, got)
		}
		send(sizes)
		pk := make([]datapath.Segmented, 8)
		n, most := 0, 0
		deadline := time.Now().Add(10 * time.Second)
		for n < len(sizes) && time.Now().Before(deadline) {
			before := b.Touched()
			k, err := b.RecvSegments(pk[n:])
			if err != nil {
				t.Fatal(err)
			}
			var want byte
			for _, q := range pk[n : n+k] {
				if len(q.Segs) < 2 {
					continue
				}
				for _, s := range q.Segs[1:] { // the head is not touched
					if m := len(s); m > 0 {
						want += s[0] + s[m/2] + s[m-1]
					}
				}
			}
			if !touch || k < 2 {
				want = 0
			}
			if got := b.Touched() - before; got != want {
				t.Fatalf("touch=%v: batch of %d: touched sum %d, want %d", touch, k, got, want)
			}
			n += k
			most = max(most, k)
			if k == 0 {
				_ = b.Wait(5 * time.Millisecond)
			}
		}
		if n != len(sizes) || most < 2 {
			t.Fatalf("received %d of %d packets, at most %d at once (want a batch of 2 or more)", n, len(sizes), most)
		}
		for i, q := range pk[:n] {
			if len(q.Segs) == 0 || len(q.Segs[0]) == 0 || q.Segs[0][0] != byte(i) {
				t.Fatalf("packet %d: head %v", i, q.Segs)
			}
			ra := wire.NewArena()
			got := cf.NewListBuffers(ra)
			if err := wire.DecodeSegments(got, q.Segs, 1, q.Hold); err != nil {
				t.Fatal(err)
			}
			gl, err := got.GetMessages()
			if err != nil || gl.Len() != len(sizes[i]) {
				t.Fatalf("packet %d: %v, %d values", i, err, gl.Len())
			}
			for j, m := range sizes[i] {
				if !bytes.Equal(gl.At(j), pattern(m, byte(7*i+j+1))) {
					t.Fatalf("touch=%v: packet %d value %d differs", touch, i, j)
				}
			}
			if err := ra.Reset(); err != nil {
				t.Fatal(err)
			}
			memtest.Release(t, q.Hold)
		}
	}
}
