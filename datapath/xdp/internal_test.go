package xdp

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// waitPacket waits (bounded: 5 s) for one packet at ep.
func waitPacket(t *testing.T, ep *Endpoint) datapath.Packet {
	t.Helper()
	pk := make([]datapath.Packet, 1)
	for deadline := time.Now().Add(5 * time.Second); ; {
		n, err := ep.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return pk[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no packet within 5 s")
		}
		_ = ep.Wait(time.Millisecond)
	}
}

// openIn opens an endpoint on end's interface and address (in its
// namespace), closed in t.Cleanup.
func openIn(t *testing.T, end netns.End, cfg datapath.Config) *Endpoint {
	t.Helper()
	o, _ := cfg.Options.(Options)
	o.Interface = end.If
	cfg.Options = o
	cfg.Local = netip.AddrPortFrom(end.Addr4, 0)
	var ep *Endpoint
	if err := netns.Do(end.NS, func() (err error) { ep, err = Open(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	return ep
}

// pair creates two namespaces joined by a veth pair of the given MTU (0:
// the default), with static neighbour entries both ways when neighbours is
// set; it skips when AF_XDP is unavailable and is removed in t.Cleanup.
func pair(t *testing.T, mtu int, neighbours bool) *netns.Pair {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	_ = netns.Cleanup("cfxdpi")
	p := netns.ForTest(t, netns.Config{Prefix: "cfxdpi", MTU: mtu})
	if neighbours {
		if err := p.AddNeighbours(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestCompletionDrivesRelease: after the kernel has consumed a packet's
// descriptors (and even after it posted their completions), the endpoint
// still holds its references; only reaping the completion ring releases
// them.
func TestCompletionDrivesRelease(t *testing.T) {
	p := pair(t, 0, true)
	a := openIn(t, p.A, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	b := openIn(t, p.B, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app", Space: a.Space()})
	seg := memtest.Alloc(t, app, make([]byte, 1000))
	if err := a.SendSegments(b.LocalAddr(), []byte("head"), []mem.Buf{seg}); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, seg) // only the endpoint's reference is left
	if seg.Refs() != 1 {
		t.Fatalf("queued segment has %d refs, want 1 (the endpoint's)", seg.Refs())
	}
	// Publish and kick by hand, without reaping.
	a.tx.publish()
	deadline := time.Now().Add(5 * time.Second)
	for a.tx.pending() != 0 || a.comp.consAvail() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("kernel did not consume/complete: pending %d, completions %d", a.tx.pending(), a.comp.consAvail())
		}
		_ = kick(a.fd)
		time.Sleep(time.Millisecond)
		if seg.Refs() != 1 {
			t.Fatalf("segment released before its completion was reaped")
		}
	}
	if seg.Refs() != 1 {
		t.Fatal("segment released before its completion was reaped")
	}
	a.reap()
	if seg.Refs() != 0 {
		t.Fatalf("after reaping the completions the segment has %d refs, want 0", seg.Refs())
	}
	if a.ifLen != 0 {
		t.Fatalf("%d descriptors still in flight", a.ifLen)
	}
	// The packet arrived intact.
	pk := waitPacket(t, b)
	if got := pk.Buf.Bytes(); len(got) != 1004 || string(got[:4]) != "head" {
		t.Errorf("got %d bytes", len(got))
	}
	memtest.Release(t, pk.Buf)
}

// TestNeighbours: without neighbour entries a send fails with
// ErrNoNeighbour; a configured PeerMAC works; the receiver learns the
// sender's MAC and can reply.
func TestNeighbours(t *testing.T) {
	p := pair(t, 0, false)
	macB, err := p.B.MAC()
	if err != nil {
		t.Fatal(err)
	}
	a := openIn(t, p.A, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	if err := a.Send(netip.AddrPortFrom(p.B.Addr4, 9), []byte("x")); !errors.Is(err, ErrNoNeighbour) {
		t.Fatalf("send without a neighbour entry: %v, want ErrNoNeighbour", err)
	}
	if err := a.Send(netip.MustParseAddrPort("[fd00::1]:9"), []byte("x")); !errors.Is(err, ErrAddrFamily) {
		t.Fatalf("IPv6 destination: %v, want ErrAddrFamily", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openIn(t, p.A, datapath.Config{Options: Options{UMEMSize: 16 << 20, PeerMAC: macB}})
	b := openIn(t, p.B, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	if err := a.Send(b.LocalAddr(), []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	got := waitPacket(t, b)
	memtest.Release(t, got.Buf)
	if err := b.Send(got.From, []byte("pong")); err != nil { // learned from the ping
		t.Fatalf("reply to a learned source: %v", err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	back := waitPacket(t, a)
	if string(back.Buf.Bytes()) != "pong" {
		t.Errorf("got %q", back.Buf.Bytes())
	}
	memtest.Release(t, back.Buf)
}

// TestRxZeroCopyBoundary: a datagram that fits one RX frame is delivered as
// a window of the frame the kernel wrote (zero-copy); one byte more spans
// two frames and is copied into one buffer.
func TestRxZeroCopyBoundary(t *testing.T) {
	p := pair(t, 9000, true)
	a := openIn(t, p.A, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	b := openIn(t, p.B, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	maxOne := ChunkSize - rxHeadroom - HeaderLen
	for _, c := range []struct {
		n        int
		zeroCopy bool
	}{{1, true}, {maxOne, true}, {maxOne + 1, false}, {8000, false}} {
		msg := make([]byte, c.n)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		if err := a.Send(b.LocalAddr(), msg); err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		pk := waitPacket(t, b)
		got := pk.Buf.Bytes()
		off, ok := b.Space().Offset(got)
		inFrame := ok && off%ChunkSize == rxHeadroom+HeaderLen
		if string(got) != string(msg) || inFrame != c.zeroCopy {
			t.Errorf("%d bytes: equal %v, delivered in the RX frame %v (offset %d in chunk), want %v", c.n, string(got) == string(msg), inFrame, off%ChunkSize, c.zeroCopy)
		}
		memtest.Release(t, pk.Buf)
	}
}

// TestSecondEndpointOnInterface: one socket per interface queue (and one
// XDP program per interface), so a second endpoint on the same interface
// fails with ErrBusy after the bounded bind retries, the failed Open leaves
// nothing behind, and the first keeps working.
func TestSecondEndpointOnInterface(t *testing.T) {
	p := pair(t, 0, true)
	a := openIn(t, p.A, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	var second *Endpoint
	err := netns.Do(p.A.NS, func() (err error) {
		second, err = Open(datapath.Config{Local: netip.AddrPortFrom(p.A.Addr4, 0), Options: Options{Interface: p.A.If, UMEMSize: 16 << 20}})
		return err
	})
	if err == nil {
		_ = second.Close()
		t.Fatal("second endpoint on the same interface opened")
	}
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second endpoint: %v, want ErrBusy", err)
	}
	t.Logf("error: %v", err)
	b := openIn(t, p.B, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	if err := a.Send(b.LocalAddr(), []byte("still works")); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	pk := waitPacket(t, b)
	memtest.Release(t, pk.Buf)
}

// TestLinearize: with descriptors split at 4 KiB pages (what a zero-copy
// bind without hugetlb needs), a packet whose segments cross many pages
// needs more than MaxDescs descriptors and is sent from one copied buffer,
// intact.
func TestLinearize(t *testing.T) {
	p := pair(t, 9000, true)
	a := openIn(t, p.A, datapath.Config{MaxSegments: 16, Options: Options{UMEMSize: 16 << 20}})
	b := openIn(t, p.B, datapath.Config{Options: Options{UMEMSize: 16 << 20}})
	a.pageSplit = true
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app", Space: a.Space()})
	big := memtest.Alloc(t, app, make([]byte, 16384))
	for i, bs := 0, big.Bytes(); i < len(bs); i++ {
		bs[i] = byte(i * 31)
	}
	var segs []mem.Buf
	want := []byte("H")
	for i := range a.MaxSegments() - 1 { // each crosses a page boundary: 2 descriptors
		s := big.Slice((i%3+1)*4096-300, 600)
		segs = append(segs, s)
		want = append(want, s.Bytes()...)
	}
	if len(segs)*2+1 <= MaxDescs {
		t.Fatalf("test needs more than %d descriptors, has %d", MaxDescs, len(segs)*2+1)
	}
	if err := a.SendSegments(b.LocalAddr(), []byte("H"), segs); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, big)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.Counters().Linearized != 1 {
		t.Errorf("linearized %d packets, want 1", a.Counters().Linearized)
	}
	pk := waitPacket(t, b)
	if string(pk.Buf.Bytes()) != string(want) {
		t.Errorf("payload mismatch: %d bytes, want %d", pk.Buf.Len(), len(want))
	}
	memtest.Release(t, pk.Buf)
}

// TestCompleteOrder drives the in-flight FIFO without a socket: completions
// in submission order match the head at once and pop it (no record is
// scanned twice, so a batch of n completions costs O(n), which
// CompletionSkips == 0 shows); out-of-order completions release the
// matching record's reference, and the head is popped once it completes.
func TestCompleteOrder(t *testing.T) {
	for _, c := range []struct {
		name      string
		order     []int // indices of the submitted records, in completion order
		wantSkips uint64
	}{
		{"in-order", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0},
		{"reversed", []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 45},
		{"head-last", []int{1, 2, 3, 0, 4, 5, 6, 7, 8, 9}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := memtest.NewPool(t, mem.PoolConfig{Name: "inflight"})
			e := &Endpoint{inflight: make([]txRec, 16), ifHead: 13} // wraps around
			bufs := make([]mem.Buf, len(c.order))
			for i := range bufs {
				bufs[i] = memtest.Alloc(t, pl, []byte{byte(i)})
				e.inflight[(e.ifHead+e.ifLen)&15] = txRec{addr: uint64(1000 + i), buf: bufs[i].Clone()}
				e.ifLen++
			}
			for k, i := range c.order {
				e.complete(uint64(1000 + i))
				if r := bufs[i].Refs(); r != 1 {
					t.Fatalf("completion %d (record %d): %d references, want 1 (the datapath's released)", k, i, r)
				}
			}
			if e.ifLen != 0 || e.st.Errors != 0 {
				t.Errorf("after all completions: %d records in flight, %d errors; want 0, 0", e.ifLen, e.st.Errors)
			}
			if e.ct.CompletionSkips != c.wantSkips {
				t.Errorf("CompletionSkips = %d, want %d", e.ct.CompletionSkips, c.wantSkips)
			}
			e.complete(4242) // never submitted
			if e.st.Errors != 1 {
				t.Errorf("unknown completion: Errors = %d, want 1", e.st.Errors)
			}
			for _, b := range bufs {
				memtest.Release(t, b)
			}
		})
	}
}
