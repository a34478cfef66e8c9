package udp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// testObj is a wire.Object: a copied header followed by zero-copy entries.
type testObj struct {
	hdr  []byte
	ents []mem.Buf
}

func (o *testObj) Sizes() wire.Sizes {
	s := wire.Sizes{Header: len(o.hdr), Entries: len(o.ents)}
	for _, b := range o.ents {
		s.ZeroCopy += b.Len()
	}
	return s
}

func (o *testObj) Serialize(dst []byte, sink wire.EntrySink) error {
	copy(dst, o.hdr)
	for _, b := range o.ents {
		if err := sink.ZeroCopyEntry(b); err != nil {
			return err
		}
	}
	return nil
}

func (o *testObj) bytes() []byte {
	out := append([]byte(nil), o.hdr...)
	for _, b := range o.ents {
		out = append(out, b.Bytes()...)
	}
	return out
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
	return b
}

// open makes an endpoint on addr with its own checked pool; both are
// closed (and the pool checked for leaks) at the end of the test.
func open(t *testing.T, cfg datapath.Config) *Endpoint {
	t.Helper()
	if cfg.Pool == nil {
		cfg.Pool = memtest.NewPool(t, mem.PoolConfig{Name: t.Name() + " " + cfg.Local.String()})
	}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// loopback opens an endpoint on 127.0.0.1 with the defaults (see open).
func loopback(t *testing.T) *Endpoint {
	t.Helper()
	return open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
}

// recvN receives exactly n packets (bounded by a deadline), returning
// copies of their payloads; the Bufs are released.
func recvN(t *testing.T, e *Endpoint, n int) [][]byte {
	t.Helper()
	var out [][]byte
	pkts := make([]datapath.Packet, 16)
	deadline := time.Now().Add(5 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d packets before the deadline (stats %+v)", len(out), n, e.Stats())
		}
		k, err := e.Recv(pkts)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			if err := e.Wait(50 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, p := range pkts[:k] {
			out = append(out, append([]byte(nil), p.Buf.Bytes()...))
			if err := p.Buf.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// exchange sends a mix of Send, SendSegments and SendObject packets from a
// to b and checks them byte for byte.
func exchange(t *testing.T, a, b *Endpoint, sizes []int) {
	t.Helper()
	var want [][]byte
	dst := b.LocalAddr()
	for i, n := range sizes {
		data := pattern(n, i)
		switch i % 3 {
		case 0:
			if err := a.Send(dst, data); err != nil {
				t.Fatal(err)
			}
		case 1:
			h := min(16, n)
			seg := memtest.Alloc(t, a.Pool(), data[h:])
			if err := a.SendSegments(dst, data[:h], []mem.Buf{seg}); err != nil {
				t.Fatal(err)
			}
			memtest.Release(t, seg)
		case 2:
			h := min(8, n)
			o := &testObj{hdr: data[h:min(h+24, n)]}
			rest := data[min(h+24, n):]
			for len(rest) > 0 {
				c := min(len(rest), 700)
				o.ents = append(o.ents, memtest.Alloc(t, a.Pool(), rest[:c]))
				rest = rest[c:]
			}
			if err := a.SendObject(dst, data[:h], o); err != nil {
				t.Fatal(err)
			}
			for _, e := range o.ents {
				memtest.Release(t, e)
			}
		}
		want = append(want, data)
		if i%10 == 9 {
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	recvWant(t, b, want)
}

// recvWant receives len(want) packets on e and checks them against want
// in order (UDP on one path keeps order here: loopback or veth, one flow).
func recvWant(t *testing.T, e *Endpoint, want [][]byte) {
	t.Helper()
	got := recvN(t, e, len(want))
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("packet %d: got %d bytes, want %d (first diff at %d)", i, len(got[i]), len(want[i]), firstDiff(got[i], want[i]))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

var mixedSizes = []int{1, 64, 100, 1000, 1472, 1500, 4096, 9000, 30000, 65507, 0, 2048, 2048, 2048, 333}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		addr string
		cfg  datapath.Config
	}{
		{"v4", "127.0.0.1:0", datapath.Config{}},
		{"v6", "[::1]:0", datapath.Config{}},
		{"v4-noGSO-noGRO", "127.0.0.1:0", datapath.Config{Options: Options{DisableGSO: true, DisableGRO: true}}},
		{"v4-batch1", "127.0.0.1:0", datapath.Config{Batch: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca, cb := tc.cfg, tc.cfg
			ca.Local = netip.MustParseAddrPort(tc.addr)
			cb.Local = ca.Local
			a, b := open(t, ca), open(t, cb)
			exchange(t, a, b, mixedSizes)
			exchange(t, b, a, mixedSizes)
			s := a.Stats()
			if s.TxPackets != uint64(len(mixedSizes)) || s.RxPackets != uint64(len(mixedSizes)) {
				t.Fatalf("stats %+v", s)
			}
			if s.ZeroCopyEntries == 0 || s.CopiedEntries == 0 {
				t.Fatalf("entry counters not updated: %+v", s)
			}
		})
	}
}

// TestGSOGRO sends batches of equal-size packets (one GSO send each) and
// checks that GRO super-packets are split back into the original packets.
func TestGSOGRO(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			a := open(t, datapath.Config{Local: netip.MustParseAddrPort(addr)})
			b := open(t, datapath.Config{Local: netip.MustParseAddrPort(addr)})
			f := a.Features()
			if !f.GSO || !f.GRO {
				t.Skipf("kernel without UDP GSO/GRO: %+v", f)
			}
			for _, size := range []int{64, 1024, 4096} {
				var sizes []int
				for i := 0; i < 40; i++ {
					sizes = append(sizes, size)
				}
				sizes = append(sizes, size/2) // a short last segment
				exchange(t, a, b, sizes)
			}
		})
	}
}

func TestVeth(t *testing.T) {
	p := netns.ForTest(t, netns.Config{MTU: 1500})
	for _, fam := range []struct {
		name string
		a, b netip.Addr
	}{{"v4", p.A.Addr4, p.B.Addr4}, {"v6", p.A.Addr6, p.B.Addr6}} {
		t.Run(fam.name, func(t *testing.T) {
			var a, b *Endpoint
			if err := netns.Do(p.A.NS, func() error { a = open(t, datapath.Config{Local: netip.AddrPortFrom(fam.a, 0)}); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := netns.Do(p.B.NS, func() error { b = open(t, datapath.Config{Local: netip.AddrPortFrom(fam.b, 0)}); return nil }); err != nil {
				t.Fatal(err)
			}
			// Larger than the MTU: IP fragmentation; equal 2000 B packets:
			// GSO must learn the 1500 B MTU and fall back.
			exchange(t, a, b, mixedSizes)
			sizes := []int{}
			for i := 0; i < 20; i++ {
				sizes = append(sizes, 1000)
			}
			for i := 0; i < 20; i++ {
				sizes = append(sizes, 2000)
			}
			exchange(t, a, b, sizes)
			exchange(t, b, a, sizes)
			if f := a.Features(); f.GSO && f.GSOMaxSegment >= 2000 {
				t.Fatalf("GSO segment limit not learned: %+v", f)
			}
		})
	}
}

// TestZeroCopyDeferredRelease proves that with MSG_ZEROCOPY the endpoint
// keeps its reference to a zero-copy entry after Flush returns and drops it
// only when the completion notice has been reaped.
func TestZeroCopyDeferredRelease(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			a := open(t, datapath.Config{Local: netip.MustParseAddrPort(addr), Options: Options{ZeroCopyMin: 1024}})
			b := open(t, datapath.Config{Local: netip.MustParseAddrPort(addr)})
			data := pattern(8192, 3)
			seg := memtest.Alloc(t, a.Pool(), data)
			small := memtest.Alloc(t, a.Pool(), data[:100])
			if err := a.SendSegments(b.LocalAddr(), []byte("hdr"), []mem.Buf{seg}); err != nil {
				t.Fatal(err)
			}
			if err := a.SendSegments(b.LocalAddr(), nil, []mem.Buf{small}); err != nil {
				t.Fatal(err)
			}
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := seg.Refs(); got != 2 {
				t.Fatalf("after Flush the zero-copy entry has %d refs, want 2 (ours + pending send)", got)
			}
			if got := small.Refs(); got != 1 {
				t.Fatalf("a small entry (copying send) has %d refs after Flush, want 1", got)
			}
			if a.PendingZeroCopy() != 1 {
				t.Fatalf("pending = %d, want 1", a.PendingZeroCopy())
			}
			got := recvN(t, b, 2)
			if !bytes.Equal(got[0], append([]byte("hdr"), data...)) || !bytes.Equal(got[1], data[:100]) {
				t.Fatal("payload mismatch")
			}
			deadline := time.Now().Add(5 * time.Second)
			for a.PendingZeroCopy() > 0 && time.Now().Before(deadline) {
				if err := a.Wait(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				if err := a.Flush(); err != nil { // reaps notices
					t.Fatal(err)
				}
			}
			zs := a.ZeroCopyStats()
			if a.PendingZeroCopy() != 0 || zs.Completed != 1 || zs.Sends != 1 {
				t.Fatalf("notice not reaped: pending %d, %+v", a.PendingZeroCopy(), zs)
			}
			if zs.Copied+zs.NotCopied != 1 {
				t.Fatalf("copied/not-copied not counted: %+v", zs)
			}
			t.Logf("zerocopy stats on loopback: %+v", zs)
			if got := seg.Refs(); got != 1 {
				t.Fatalf("after the notice the entry has %d refs, want 1", got)
			}
			memtest.Release(t, seg)
			memtest.Release(t, small)
		})
	}
}

// TestZeroCopyMany pushes more zero-copy sends than may be pending, so
// Flush must wait for notices or fall back to copying, and Close must
// release everything.
func TestZeroCopyMany(t *testing.T) {
	a := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), Options: Options{ZeroCopyMin: 1, ZeroCopyPending: 4}})
	b := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	var sizes []int
	for i := 0; i < 60; i++ {
		sizes = append(sizes, 2000+i)
	}
	exchange(t, a, b, sizes)
	zs := a.ZeroCopyStats()
	if zs.Sends == 0 {
		t.Fatalf("no zero-copy sends: %+v", zs)
	}
	t.Logf("%+v", zs)
}

func TestSendObjectTooManyEntries(t *testing.T) {
	a := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), MaxSegments: 8})
	b := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	o := &testObj{hdr: []byte("header")}
	for i := 0; i < 40; i++ {
		n := 10 + (i*37)%300
		if i%13 == 0 {
			n = 2000
		}
		o.ents = append(o.ents, memtest.Alloc(t, a.Pool(), pattern(n, i)))
	}
	if err := a.SendObject(b.LocalAddr(), []byte("pkt"), o); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, b, 1)
	if want := append([]byte("pkt"), o.bytes()...); !bytes.Equal(got[0], want) {
		t.Fatalf("mismatch at %d", firstDiff(got[0], want))
	}
	s := a.Stats()
	if s.ZeroCopyEntries != 4 || s.CopiedEntries != 37 {
		t.Fatalf("copy/zero-copy split %+v", s)
	}
	for _, e := range o.ents {
		memtest.Release(t, e)
	}
}

// lyingObj reports fewer entries than it serializes.
type lyingObj struct{ testObj }

func (o *lyingObj) Sizes() wire.Sizes { s := o.testObj.Sizes(); s.Entries--; return s }

func TestErrors(t *testing.T) {
	a := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), MaxSegments: 4})
	v6 := netip.MustParseAddrPort("[2001:db8::1]:9")
	dst := netip.MustParseAddrPort("127.0.0.1:9")
	buf := memtest.Alloc(t, a.Pool(), make([]byte, 10))
	defer memtest.Release(t, buf)
	cases := []struct {
		name string
		err  error
		fn   func() error
	}{
		{"too large", datapath.ErrTooLarge, func() error { return a.Send(dst, make([]byte, 70000)) }},
		{"too many segs", datapath.ErrTooManySegments, func() error { return a.SendSegments(dst, nil, []mem.Buf{buf, buf, buf, buf}) }},
		{"family", ErrAddrFamily, func() error { return a.Send(v6, []byte("x")) }},
		{"lying object", ErrBadObject, func() error {
			return a.SendObject(dst, nil, &lyingObj{testObj{ents: []mem.Buf{buf, buf}}})
		}},
		{"concurrent", datapath.ErrConcurrentUse, func() error {
			a.guard.Enter()
			defer a.guard.Exit()
			return a.Send(dst, []byte("x"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.fn(); !errors.Is(err, c.err) {
				t.Fatalf("got %v, want %v", err, c.err)
			}
		})
	}
	if buf.Refs() != 1 {
		t.Fatalf("failed sends leaked references: refs=%d", buf.Refs())
	}
	if _, err := Open(datapath.Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Open without address: %v", err)
	}
	if _, err := Open(datapath.Config{Local: dst, MaxSegments: 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Open with MaxSegments 1: %v", err)
	}
	// Through the registry a failed open returns a nil interface, not a
	// typed nil that a caller's "ep != nil" cleanup would Close (and panic).
	if ep, err := datapath.Open("udp", datapath.Config{MaxSegments: 1 << 20}); err == nil || ep != nil {
		t.Fatalf(`datapath.Open("udp") with MaxSegments 1<<20 = %v, %v; want nil and an error`, ep, err)
	}
	c, err := Open(datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(dst, nil); !errors.Is(err, datapath.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestWait(t *testing.T) {
	a, b := loopback(t), loopback(t)
	start := time.Now()
	if err := b.Wait(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 10*time.Millisecond {
		t.Fatal("Wait returned early on an idle socket")
	}
	if err := a.Send(b.LocalAddr(), []byte("wake")); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := recvN(t, b, 1); string(got[0]) != "wake" {
		t.Fatalf("got %q", got[0])
	}
}

func TestReusePort(t *testing.T) {
	a := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), Options: Options{ReusePort: true}})
	b := open(t, datapath.Config{Local: a.LocalAddr(), Options: Options{ReusePort: true}})
	if a.LocalAddr() != b.LocalAddr() {
		t.Fatalf("%v != %v", a.LocalAddr(), b.LocalAddr())
	}
}

// TestNoAllocs checks that the steady-state send, receive, Wait and Wake
// paths allocate nothing.
func TestNoAllocs(t *testing.T) {
	a, b := loopback(t), loopback(t)
	seg := memtest.Alloc(t, a.Pool(), pattern(2048, 1))
	defer memtest.Release(t, seg)
	o := &testObj{hdr: []byte("0123456789"), ents: []mem.Buf{seg, seg}}
	pkts := make([]datapath.Packet, 8)
	segs := []mem.Buf{seg}
	dst := b.LocalAddr()
	run := func() {
		if err := a.SendObject(dst, []byte("h"), o); err != nil {
			panic(err)
		}
		if err := a.SendSegments(dst, []byte("h"), segs); err != nil {
			panic(err)
		}
		if err := a.Send(dst, []byte("payload")); err != nil {
			panic(err)
		}
		if err := a.Flush(); err != nil {
			panic(err)
		}
		if err := b.Wait(5 * time.Second); err != nil { // returns once readable
			panic(err)
		}
		got := 0
		for tries := 0; got < 3 && tries < 100000; tries++ {
			n, err := b.Recv(pkts)
			if err != nil {
				panic(err)
			}
			for _, p := range pkts[:n] {
				p.Buf.Release()
			}
			got += n
		}
		if got != 3 {
			panic(fmt.Sprintf("received %d of 3", got))
		}
		if err := b.Wait(time.Microsecond); err != nil { // times out
			panic(err)
		}
		if err := b.Wake(); err != nil {
			panic(err)
		}
		if err := b.Wait(5 * time.Second); err != nil { // returns at once, drains the wake
			panic(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%v allocations per send/recv round", n)
	}
}

// Open grows the pool for the receive ring (Batch items of the RX size), so
// that the first Recv does not commit memory inside the caller's loop; the
// first Recv then takes its buffers without growing the pool.
func TestOpenReservesReceiveRing(t *testing.T) {
	e := open(t, datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), Batch: 8})
	class := func() mem.ClassStats {
		for _, c := range e.Pool().Stats().Classes {
			if c.Size >= rxBufSize {
				return c
			}
		}
		t.Fatal("no class holds an RX buffer")
		return mem.ClassStats{}
	}
	before := class()
	if before.Free < 8 || before.InUse != 0 {
		t.Fatalf("after Open the RX class has %d free and %d in use items, want >= 8 free", before.Free, before.InUse)
	}
	pkts := make([]datapath.Packet, 8)
	if n, err := e.Recv(pkts); n != 0 || err != nil {
		t.Fatalf("Recv on an idle socket: %d, %v", n, err)
	}
	if after := class(); after.Regions != before.Regions || after.InUse != 8 {
		t.Fatalf("first Recv: %d regions (was %d), %d RX buffers in use (want 8)", after.Regions, before.Regions, after.InUse)
	}
}

// The link rate Timely starts from follows the bound interface: loopback
// has none and reports datapath.UnlimitedLinkRate, a wildcard address reports 0
// (the RPC then uses eRPC's default).
func TestTimelyLinkRate(t *testing.T) {
	if got := linkRate(netip.MustParseAddr("127.0.0.1")); got != datapath.UnlimitedLinkRate {
		t.Fatalf("loopback: %v", got)
	}
	if got := linkRate(netip.MustParseAddr("::1")); got != datapath.UnlimitedLinkRate {
		t.Fatalf("::1: %v", got)
	}
	if got := linkRate(netip.MustParseAddr("0.0.0.0")); got != 0 {
		t.Fatalf("wildcard: %v", got)
	}
	if got := linkRate(netip.MustParseAddr("192.0.2.1")); got != 0 { // TEST-NET-1, on no interface
		t.Fatalf("unassigned address: %v", got)
	}
	if got := ifaceSpeed("no-such-interface"); got != 0 {
		t.Fatalf("missing interface: %v", got)
	}
}
