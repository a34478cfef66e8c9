package dptest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// Timeout bounds every wait of the suite (receiving expected packets,
// waiting for a completion).
var Timeout = 10 * time.Second

// Pair is two endpoints that reach each other, made fresh for each subtest.
type Pair struct {
	// A and B send to each other's LocalAddr. The suite closes both at the
	// end of the subtest (closing an already closed endpoint is fine).
	A, B datapath.Endpoint
	// AppPool provides the application's zero-copy buffers sent from A and
	// B. It must be usable by the test goroutine and sendable by both
	// endpoints (e.g. a pool in the UMEM for xdp). Nil: the suite makes one
	// with memtest.NewPool.
	AppPool *mem.Pool
	// Pools are checked for InUse() == 0 after both endpoints were closed
	// (typically the Config.Pool of each endpoint).
	Pools []*mem.Pool
	// Pump, if set, is called while waiting for packets or completions
	// (e.g. to advance a virtual clock).
	Pump func()
}

// Factory makes a Pair for one subtest. It may register t.Cleanup for
// resources other than the endpoints (those run after the suite closed the
// endpoints).
type Factory func(t *testing.T) Pair

// Run runs the conformance suite against the datapath made by f.
func Run(t *testing.T, f Factory) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"Basics", testBasics},
		{"Send", testSend},
		{"SendTooLarge", testSendTooLarge},
		{"SendSegments", testSendSegments},
		{"SendSegmentsTooMany", testSendSegmentsTooMany},
		{"SendObject", testSendObject},
		{"SendObjectManyEntries", testSendObjectManyEntries},
		{"SendObjectErrors", testSendObjectErrors},
		{"SendReleasedBuffer", testSendReleasedBuffer},
		{"CompletionRelease", testCompletionRelease},
		{"NoEarlyRelease", testNoEarlyRelease},
		{"Batch", testBatch},
		{"Reply", testReply},
		{"RecvEdgeCases", testRecvEdgeCases},
		{"ConcurrentUse", testConcurrentUse},
		{"Close", testClose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, f)
			tc.fn(t, e)
		})
	}
}

type env struct {
	t    *testing.T
	p    Pair
	app  *mem.Pool
	pump func()
}

func newEnv(t *testing.T, f Factory) *env {
	app := memtest.NewPool(t, mem.PoolConfig{Name: "dptest app " + t.Name()})
	p := f(t)
	if p.A == nil || p.B == nil {
		t.Fatal("dptest: factory returned a nil endpoint")
	}
	e := &env{t: t, p: p, app: app, pump: p.Pump}
	if p.AppPool != nil {
		e.app = p.AppPool
	}
	t.Cleanup(func() {
		for _, ep := range []datapath.Endpoint{p.A, p.B} {
			if err := ep.Close(); err != nil && !errors.Is(err, datapath.ErrClosed) {
				t.Errorf("dptest: Close: %v", err)
			}
		}
		if n := e.app.InUse(); n != 0 {
			t.Errorf("dptest: application pool has %d items in use after both endpoints closed (a datapath kept or lost a reference)", n)
		}
		for _, pl := range p.Pools {
			if n := pl.InUse(); n != 0 {
				t.Errorf("dptest: pool %q has %d items in use after both endpoints closed", pl.Name(), n)
			}
		}
	})
	return e
}

// alloc returns an app buffer holding data.
func (e *env) alloc(data []byte) mem.Buf {
	e.t.Helper()
	return memtest.Alloc(e.t, e.app, data)
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>8)
	}
	return b
}

func mustNil(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// recvN receives exactly n packets at to (failing after Timeout), flushing
// from as needed so that completions and batched sends make progress.
func (e *env) recvN(to, from datapath.Endpoint, n int) []datapath.Packet {
	e.t.Helper()
	out := make([]datapath.Packet, 0, n)
	buf := make([]datapath.Packet, datapath.DefaultBatch)
	deadline := time.Now().Add(Timeout)
	for len(out) < n {
		k, err := to.Recv(buf[:min(len(buf), n-len(out))])
		if err != nil {
			releaseAll(out)
			e.t.Fatalf("Recv: %v", err)
		}
		out = append(out, buf[:k]...)
		if k > 0 {
			continue
		}
		if time.Now().After(deadline) {
			releaseAll(out)
			e.t.Fatalf("received %d of %d packets within %v", len(out), n, Timeout)
		}
		if err := from.Flush(); err != nil {
			releaseAll(out)
			e.t.Fatalf("Flush: %v", err)
		}
		if e.pump != nil {
			e.pump()
		}
		if err := to.Wait(time.Millisecond); err != nil {
			releaseAll(out)
			e.t.Fatalf("Wait: %v", err)
		}
	}
	return out
}

// expectNone checks that nothing more arrives at to within a short grace
// period (used after errors that must not have sent anything).
func (e *env) expectNone(to, from datapath.Endpoint) {
	e.t.Helper()
	buf := make([]datapath.Packet, 4)
	for range 20 {
		mustNil(e.t, "Flush", from.Flush())
		if e.pump != nil {
			e.pump()
		}
		k, err := to.Recv(buf)
		mustNil(e.t, "Recv", err)
		if k > 0 {
			releaseAll(buf[:k])
			e.t.Fatalf("got %d unexpected packet(s)", k)
		}
		mustNil(e.t, "Wait", to.Wait(time.Millisecond))
	}
}

func releaseAll(ps []datapath.Packet) {
	for _, p := range ps {
		_ = p.Buf.Release()
	}
}

// check verifies one packet's payload and source, then releases it.
func (e *env) check(p datapath.Packet, from netip.AddrPort, want []byte) {
	e.t.Helper()
	defer func() {
		if err := p.Buf.Release(); err != nil {
			e.t.Errorf("releasing a received packet: %v", err)
		}
	}()
	if p.From != from {
		e.t.Errorf("packet from %v, want %v", p.From, from)
	}
	got := p.Buf.Bytes()
	if len(want) > 0 && !mem.IsRegistered(got) {
		e.t.Errorf("received payload is not in registered memory")
	}
	if !bytes.Equal(got, want) {
		e.t.Errorf("payload mismatch: got %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
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

func testBasics(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	if !a.LocalAddr().IsValid() || !b.LocalAddr().IsValid() || a.LocalAddr() == b.LocalAddr() {
		t.Fatalf("LocalAddr: A %v, B %v: want two distinct valid addresses", a.LocalAddr(), b.LocalAddr())
	}
	if a.MaxPayload() < 64 {
		t.Errorf("MaxPayload() = %d, want >= 64", a.MaxPayload())
	}
	if a.MaxSegments() < 2 {
		t.Errorf("MaxSegments() = %d, want >= 2 (head + one zero-copy segment)", a.MaxSegments())
	}
}

func testSend(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	before := a.Stats()
	sizes := []int{0, 1, 100, 1000, a.MaxPayload()}
	var want [][]byte
	for i, n := range sizes {
		p := pattern(n, byte(i))
		want = append(want, append([]byte(nil), p...))
		mustNil(t, "Send", a.Send(b.LocalAddr(), p))
		for j := range p {
			p[j] = 0xEE // the payload was copied: the caller may reuse p at once
		}
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, len(sizes))
	for i, p := range got {
		e.check(p, a.LocalAddr(), want[i])
	}
	st := a.Stats()
	if st.TxPackets-before.TxPackets != uint64(len(sizes)) {
		t.Errorf("Stats().TxPackets grew by %d, want %d", st.TxPackets-before.TxPackets, len(sizes))
	}
	if rs := b.Stats(); rs.RxPackets < uint64(len(sizes)) {
		t.Errorf("receiver Stats().RxPackets = %d, want >= %d", rs.RxPackets, len(sizes))
	}
}

func testSendTooLarge(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	big := make([]byte, a.MaxPayload()+1)
	if err := a.Send(b.LocalAddr(), big); !errors.Is(err, datapath.ErrTooLarge) {
		t.Errorf("Send of MaxPayload+1 bytes: %v, want ErrTooLarge", err)
	}
	seg := e.alloc(make([]byte, a.MaxPayload()))
	defer memtest.Release(t, seg)
	if err := a.SendSegments(b.LocalAddr(), []byte{1}, []mem.Buf{seg}); !errors.Is(err, datapath.ErrTooLarge) {
		t.Errorf("SendSegments of MaxPayload+1 bytes: %v, want ErrTooLarge", err)
	}
	obj := &Object{Header: []byte{1, 2}, Entries: []mem.Buf{seg}}
	if err := a.SendObject(b.LocalAddr(), nil, obj); !errors.Is(err, datapath.ErrTooLarge) {
		t.Errorf("SendObject of MaxPayload+2 bytes: %v, want ErrTooLarge", err)
	}
	if r := seg.Refs(); r != 1 {
		t.Errorf("after rejected sends the segment has %d references, want 1", r)
	}
	e.expectNone(b, a)
}

func testSendSegments(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	nseg := min(3, a.MaxSegments()-1)
	head := pattern(42, 1)
	want := append([]byte(nil), head...)
	segs := make([]mem.Buf, nseg)
	// Segments of unit, 2*unit, ... bytes: 300, 600, 900 unless the
	// datapath's packets are smaller (e.g. AF_XDP at MTU 1500).
	unit := min(300, (a.MaxPayload()-len(head))/(nseg*(nseg+1)/2))
	for i := range segs {
		segs[i] = e.alloc(pattern(unit*(i+1), byte(10+i)))
		want = append(want, segs[i].Bytes()...)
	}
	before := a.Stats()
	mustNil(t, "SendSegments", a.SendSegments(b.LocalAddr(), head, segs))
	for i := range head {
		head[i] = 0xEE // the head was copied
	}
	for _, s := range segs {
		memtest.Release(t, s) // the datapath holds its own references
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	e.check(got[0], a.LocalAddr(), want)
	st := a.Stats()
	if d := st.ZeroCopyEntries - before.ZeroCopyEntries; d != uint64(nseg) {
		t.Errorf("Stats().ZeroCopyEntries grew by %d, want %d", d, nseg)
	}
	// A head without segments, and segments without a head.
	mustNil(t, "SendSegments(head only)", a.SendSegments(b.LocalAddr(), []byte("only-head"), nil))
	seg := e.alloc([]byte("only-segment"))
	mustNil(t, "SendSegments(no head)", a.SendSegments(b.LocalAddr(), nil, []mem.Buf{seg}))
	memtest.Release(t, seg)
	mustNil(t, "Flush", a.Flush())
	got = e.recvN(b, a, 2)
	e.check(got[0], a.LocalAddr(), []byte("only-head"))
	e.check(got[1], a.LocalAddr(), []byte("only-segment"))
}

func testSendSegmentsTooMany(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	n := a.MaxSegments() // + head = one too many
	if n > 4096 {
		t.Skipf("MaxSegments %d too large to test", n)
	}
	segs := make([]mem.Buf, n)
	for i := range segs {
		segs[i] = e.alloc([]byte{byte(i)})
	}
	defer func() {
		for _, s := range segs {
			memtest.Release(t, s)
		}
	}()
	if err := a.SendSegments(b.LocalAddr(), []byte{0xAA}, segs); !errors.Is(err, datapath.ErrTooManySegments) {
		t.Errorf("SendSegments with MaxSegments zero-copy segments: %v, want ErrTooManySegments", err)
	}
	for i, s := range segs {
		if r := s.Refs(); r != 1 {
			t.Fatalf("segment %d has %d references after a rejected send, want 1", i, r)
		}
	}
	e.expectNone(b, a)
}

func testSendObject(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	n := min(3, a.MaxSegments()-1)
	obj := &Object{Header: pattern(24, 3), Copied: pattern(50, 4)}
	head := []byte("pkt-header")
	// Entries of 512, 612, 712 bytes, or what fits in one packet.
	perEntry := (a.MaxPayload() - len(head) - len(obj.Header) - len(obj.Copied)) / max(n, 1)
	for i := range n {
		obj.Entries = append(obj.Entries, e.alloc(pattern(min(512+i*100, perEntry), byte(20+i))))
	}
	want := append(append([]byte(nil), head...), obj.WireBytes()...)
	before := a.Stats()
	mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), head, obj))
	for _, s := range obj.Entries {
		if s.Refs() < 2 {
			t.Errorf("after SendObject an entry has %d references, want >= 2 (the datapath holds one until completion)", s.Refs())
		}
		memtest.Release(t, s)
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	e.check(got[0], a.LocalAddr(), want)
	st := a.Stats()
	if d := st.ZeroCopyEntries - before.ZeroCopyEntries; d != uint64(n) {
		t.Errorf("Stats().ZeroCopyEntries grew by %d, want %d", d, n)
	}
	if d := st.ZeroCopyBytes - before.ZeroCopyBytes; d != uint64(obj.Sizes().ZeroCopy) {
		t.Errorf("Stats().ZeroCopyBytes grew by %d, want %d", d, obj.Sizes().ZeroCopy)
	}

	// An object without zero-copy entries, and an empty one.
	for _, o := range []*Object{{Header: pattern(8, 5), Copied: pattern(100, 6)}, {}} {
		mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), nil, o))
		mustNil(t, "Flush", a.Flush())
		got := e.recvN(b, a, 1)
		e.check(got[0], a.LocalAddr(), o.WireBytes())
	}
}

func testSendObjectManyEntries(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	maxSeg := a.MaxSegments()
	n := maxSeg + 5
	// Varying sizes, so that which entries get copied matters; all fit.
	budget := a.MaxPayload() - 64
	if n*2 > budget || n > 4096 {
		t.Skipf("MaxSegments %d too large for MaxPayload %d", maxSeg, a.MaxPayload())
	}
	per := min(budget/n, 2000)
	obj := &Object{Header: pattern(16, 7), Copied: pattern(10, 8)}
	for i := range n {
		size := 1 + (i*37)%per
		obj.Entries = append(obj.Entries, e.alloc(pattern(size, byte(i))))
	}
	want := obj.WireBytes()
	before := a.Stats()
	mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), nil, obj))
	for _, s := range obj.Entries {
		memtest.Release(t, s)
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	e.check(got[0], a.LocalAddr(), want)
	st := a.Stats()
	zc := st.ZeroCopyEntries - before.ZeroCopyEntries
	if zc > uint64(maxSeg-1) {
		t.Errorf("%d entries went zero-copy in one packet, more than MaxSegments-1 = %d", zc, maxSeg-1)
	}
	if ce := st.CopiedEntries - before.CopiedEntries; ce < uint64(n)-zc {
		t.Errorf("Stats().CopiedEntries grew by %d, want >= %d (entries that did not go zero-copy)", ce, uint64(n)-zc)
	}
}

var errSerialize = errors.New("dptest: injected Serialize failure")

func testSendObjectErrors(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	entries := []mem.Buf{e.alloc(pattern(600, 1)), e.alloc(pattern(700, 2))}
	defer func() {
		for _, s := range entries {
			memtest.Release(t, s)
		}
	}()
	cases := []struct {
		name string
		obj  *Object
		want error
	}{
		{"SerializeErrorFirst", &Object{Header: []byte{1}, Entries: entries, Err: errSerialize}, errSerialize},
		{"SerializeErrorMiddle", &Object{Header: []byte{1}, Entries: entries, Err: errSerialize, FailAfter: 1}, errSerialize},
		{"SerializeErrorAfterAll", &Object{Header: []byte{1}, Entries: entries, Err: errSerialize, FailAfter: 2}, errSerialize},
		{"ExtraEntries", &Object{Header: []byte{1}, Entries: entries, ExtraEntries: 1}, datapath.ErrBadObject},
		{"MissingEntries", &Object{Header: []byte{1}, Entries: entries, MissingEntries: 1}, datapath.ErrBadObject},
	}
	for _, c := range cases {
		err := a.SendObject(b.LocalAddr(), []byte("h"), c.obj)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: SendObject = %v, want %v", c.name, err, c.want)
		}
		for i, s := range entries {
			if r := s.Refs(); r != 1 {
				t.Fatalf("%s: entry %d has %d references after a failed SendObject, want 1", c.name, i, r)
			}
		}
	}
	e.expectNone(b, a)
	// The endpoint still works.
	ok := &Object{Header: []byte{9}, Entries: entries}
	mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), nil, ok))
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	e.check(got[0], a.LocalAddr(), ok.WireBytes())
}

// testSendReleasedBuffer: a segment or entry the application already
// released is bad input: the send fails with an error (mem.Buf.Check
// detects it in every build), it does not panic, and nothing leaks.
func testSendReleasedBuffer(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	good := e.alloc([]byte("good"))
	defer memtest.Release(t, good)
	stale := e.alloc([]byte("stale"))
	memtest.Release(t, stale)
	try := func(name string, f func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s with a released buffer panicked: %v (want an error)", name, r)
			}
		}()
		if err := f(); err == nil {
			t.Errorf("%s with a released buffer succeeded, want an error", name)
		}
	}
	try("SendSegments", func() error { return a.SendSegments(b.LocalAddr(), nil, []mem.Buf{good, stale}) })
	try("SendObject", func() error {
		return a.SendObject(b.LocalAddr(), nil, &Object{Entries: []mem.Buf{good, stale}})
	})
	if r := good.Refs(); r != 1 {
		t.Errorf("the valid buffer has %d references after the failed sends, want 1", r)
	}
	e.expectNone(b, a)
}

// waitRefs flushes A until buf has want references (the datapath released
// its own after completion).
func (e *env) waitRefs(a datapath.Endpoint, buf mem.Buf, want int) {
	e.t.Helper()
	deadline := time.Now().Add(Timeout)
	pk := make([]datapath.Packet, 8)
	for buf.Refs() != want {
		if time.Now().After(deadline) {
			e.t.Fatalf("segment still has %d references after %v, want %d (completion never released it)", buf.Refs(), Timeout, want)
		}
		mustNil(e.t, "Flush", a.Flush())
		k, err := a.Recv(pk)
		mustNil(e.t, "Recv", err)
		releaseAll(pk[:k])
		if e.pump != nil {
			e.pump()
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func testCompletionRelease(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	seg := e.alloc(pattern(min(2048, a.MaxPayload()-10), 9))
	defer memtest.Release(t, seg)
	obj := &Object{Header: pattern(10, 1), Entries: []mem.Buf{seg}}
	mustNil(t, "SendSegments", a.SendSegments(b.LocalAddr(), []byte("x"), []mem.Buf{seg}))
	mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), nil, obj))
	if r := seg.Refs(); r < 3 {
		t.Fatalf("after two queued sends the segment has %d references, want >= 3 (one per pending send)", r)
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 2)
	e.check(got[0], a.LocalAddr(), append([]byte("x"), seg.Bytes()...))
	e.check(got[1], a.LocalAddr(), obj.WireBytes())
	e.waitRefs(a, seg, 1)
}

// testNoEarlyRelease: the application drops its references right after the
// send and reuses the memory for something else (which is allowed: the
// datapath holds its own). Whatever arrives must be the original bytes.
func testNoEarlyRelease(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	n := min(4, a.MaxSegments()-1)
	size := min(1500, (a.MaxPayload()-1)/n) // a one-byte head and n segments in one packet
	var want [][]byte
	for round := range 8 {
		segs := make([]mem.Buf, n)
		w := []byte{byte(round)}
		for i := range segs {
			segs[i] = e.alloc(pattern(size, byte(round*16+i)))
			w = append(w, segs[i].Bytes()...)
		}
		if round%2 == 0 {
			mustNil(t, "SendSegments", a.SendSegments(b.LocalAddr(), []byte{byte(round)}, segs))
		} else {
			mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), nil, &Object{Header: []byte{byte(round)}, Entries: segs}))
		}
		want = append(want, w)
		for _, s := range segs {
			memtest.Release(t, s)
		}
	}
	// Reuse: drain the free list of that size class and scribble over every
	// item, so that any item released too early is overwritten.
	var scribbled []mem.Buf
	for range 4096 {
		var free int
		for _, c := range e.app.Stats().Classes {
			if c.Size >= size && c.Size < 2*size {
				free = c.Free
			}
		}
		if free == 0 {
			break
		}
		s, err := e.app.Alloc(size)
		mustNil(t, "Alloc", err)
		for i, bs := 0, s.Bytes(); i < len(bs); i++ {
			bs[i] = 0xEE
		}
		scribbled = append(scribbled, s)
	}
	defer func() {
		for _, s := range scribbled {
			memtest.Release(t, s)
		}
	}()
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, len(want))
	for i, p := range got {
		e.check(p, a.LocalAddr(), want[i])
	}
}

func testBatch(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	const n = 3*datapath.DefaultBatch + 1
	seen := make(map[uint32]bool)
	for i := range n {
		p := pattern(200, byte(i))
		binary.LittleEndian.PutUint32(p, uint32(i))
		mustNil(t, "Send", a.Send(b.LocalAddr(), p))
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, n)
	for _, p := range got {
		bs := p.Buf.Bytes()
		if len(bs) != 200 {
			e.check(p, a.LocalAddr(), nil)
			continue
		}
		i := binary.LittleEndian.Uint32(bs)
		if i >= n || seen[i] {
			t.Errorf("unexpected or duplicate packet %d", i)
			memtest.Release(t, p.Buf)
			continue
		}
		seen[i] = true
		want := pattern(200, byte(i))
		binary.LittleEndian.PutUint32(want, i)
		e.check(p, a.LocalAddr(), want)
	}
}

func testReply(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	mustNil(t, "Send", a.Send(b.LocalAddr(), []byte("ping")))
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	from := got[0].From
	// Echo the received buffer back zero-copy, as a server does.
	mustNil(t, "SendSegments", b.SendSegments(from, []byte("re:"), []mem.Buf{got[0].Buf}))
	memtest.Release(t, got[0].Buf)
	mustNil(t, "Flush", b.Flush())
	back := e.recvN(a, b, 1)
	e.check(back[0], b.LocalAddr(), []byte("re:ping"))
}

func testRecvEdgeCases(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	if k, err := b.Recv(nil); k != 0 || err != nil {
		t.Errorf("Recv(nil) = %d, %v; want 0, nil", k, err)
	}
	pk := make([]datapath.Packet, 4)
	if k, err := b.Recv(pk); k != 0 || err != nil {
		t.Errorf("Recv with nothing sent = %d, %v; want 0, nil", k, err)
	}
	mustNil(t, "Wait", b.Wait(time.Millisecond))
	mustNil(t, "Wait(0)", b.Wait(0))
	// Recv fills at most len(pkts).
	for i := range 3 {
		mustNil(t, "Send", a.Send(b.LocalAddr(), []byte{byte(i)}))
	}
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	got = append(got, e.recvN(b, a, 2)...)
	for i, p := range got {
		e.check(p, a.LocalAddr(), []byte{byte(i)})
	}
}

func testConcurrentUse(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	seen := false
	for attempt := 0; attempt < 20 && !seen; attempt++ {
		var wg sync.WaitGroup
		started := make(chan struct{})
		done := make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			close(started)
			done <- a.Wait(200 * time.Millisecond) // nothing arrives: blocks inside the endpoint
		}()
		<-started
	spin:
		for range 1 << 20 {
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, datapath.ErrConcurrentUse) {
					t.Fatalf("Wait on the other goroutine: %v", err)
				}
				break spin
			default:
			}
			err := a.Flush()
			if errors.Is(err, datapath.ErrConcurrentUse) {
				seen = true
				continue
			}
			if err != nil {
				t.Fatalf("Flush while another goroutine is in Wait: %v, want nil or ErrConcurrentUse", err)
			}
			time.Sleep(10 * time.Microsecond)
		}
		wg.Wait()
	}
	if !seen {
		t.Fatal("a call overlapping another goroutine's Wait never returned ErrConcurrentUse")
	}
	// Still usable by its owner afterwards.
	mustNil(t, "Send", a.Send(b.LocalAddr(), []byte("after")))
	mustNil(t, "Flush", a.Flush())
	got := e.recvN(b, a, 1)
	e.check(got[0], a.LocalAddr(), []byte("after"))
}

func testClose(t *testing.T, e *env) {
	a, b := e.p.A, e.p.B
	seg := e.alloc(pattern(1000, 1))
	obj := &Object{Header: []byte{1}, Entries: []mem.Buf{seg}}
	// Flushed sends, then queued ones, then Close with both outstanding.
	mustNil(t, "SendSegments", a.SendSegments(b.LocalAddr(), []byte{2}, []mem.Buf{seg}))
	mustNil(t, "Flush", a.Flush())
	mustNil(t, "SendObject", a.SendObject(b.LocalAddr(), nil, obj))
	mustNil(t, "Send", a.Send(b.LocalAddr(), []byte{3}))
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := seg.Refs(); r != 1 {
		t.Errorf("after Close the segment has %d references, want 1 (Close releases what the endpoint held)", r)
	}
	memtest.Release(t, seg)
	if n := e.app.InUse(); n != 0 {
		t.Errorf("application pool: %d items in use after Close and the application's releases", n)
	}
	pk := make([]datapath.Packet, 1)
	for name, err := range map[string]error{
		"Send":         a.Send(b.LocalAddr(), []byte{1}),
		"SendSegments": a.SendSegments(b.LocalAddr(), nil, nil),
		"SendObject":   a.SendObject(b.LocalAddr(), nil, &Object{}),
		"Flush":        a.Flush(),
		"Wait":         a.Wait(time.Millisecond),
		"Recv":         func() error { _, err := a.Recv(pk); return err }(),
	} {
		if !errors.Is(err, datapath.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := a.Close(); err != nil && !errors.Is(err, datapath.ErrClosed) {
		t.Errorf("second Close: %v, want nil or ErrClosed", err)
	}
	// B may or may not have received the packets; drain whatever arrived.
	buf := make([]datapath.Packet, 8)
	for range 10 {
		k, err := b.Recv(buf)
		mustNil(t, "Recv", err)
		for _, p := range buf[:k] {
			if len(p.Buf.Bytes()) == 0 || (p.Buf.Bytes()[0] != 1 && p.Buf.Bytes()[0] != 2 && p.Buf.Bytes()[0] != 3) {
				t.Errorf("unexpected packet % x", p.Buf.Bytes())
			}
		}
		releaseAll(buf[:k])
		if e.pump != nil {
			e.pump()
		}
		mustNil(t, "Wait", b.Wait(time.Millisecond))
	}
	mustNil(t, "Close B", b.Close())
}
