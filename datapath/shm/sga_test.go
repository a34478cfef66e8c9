package shm_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// listOf builds a ListBuffers of vals in a (zero-copy from pool when the
// arena's threshold allows); the arena holds the only references.
func listOf(t *testing.T, a *wire.Arena, pool *mem.Pool, vals [][]byte) *cf.ListBuffers {
	t.Helper()
	m := cf.NewListBuffers(a)
	l := m.InitMessages(len(vals))
	for _, v := range vals {
		b := memtest.Alloc(t, pool, v)
		l.AppendBuf(b)
		memtest.Release(t, b)
	}
	return m
}

// TestSendObjectGenerated: SendObject of a generated message (the
// wire.SerializeSGA path): the head is serialized in the TX slot, entries
// in a registered space become descriptors (the largest ones when there
// are more than MaxSegments-1), others are copied; the receiver gets
// exactly wire.Flatten's bytes after the head; stats count each entry
// once; after the arena's Reset and the completion every reference is
// back.
func TestSendObjectGenerated(t *testing.T) {
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
	private := memtest.NewPool(t, mem.PoolConfig{Name: "private " + t.Name()}) // not shared: copied
	open := func(maxSegs int) *shm.Endpoint {
		ep, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), MaxSegments: maxSegs,
			Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ep.Close() })
		return ep
	}
	for _, tc := range []struct {
		name     string
		maxSegs  int
		pools    []*mem.Pool
		sizes    []int
		wantZC   int // entries sent as descriptors
		wantZCBy int
	}{
		{"TwoZeroCopy", 32, []*mem.Pool{app, app}, []int{2048, 2048}, 2, 4096},
		{"Private", 32, []*mem.Pool{app, private, app}, []int{1000, 3000, 600}, 2, 1600},
		{"Small", 32, []*mem.Pool{app, app}, []int{100, 2000}, 1, 2000}, // 100 B is below the threshold: copied by the arena
		// Head + 2 segments: keeping 2500 too would split the copied
		// bytes around it into more segments, so the Selector keeps 3000.
		{"Select", 3, []*mem.Pool{app, app, app, app, app}, []int{700, 3000, 900, 2500, 800}, 1, 3000},
		{"SelectAdjacent", 4, []*mem.Pool{app, app, app, app}, []int{600, 3000, 2500, 700}, 3, 6200}, // the first is copied after the head
		{"Empty", 32, nil, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := open(tc.maxSegs), open(32)
			vals := make([][]byte, len(tc.sizes))
			for i, n := range tc.sizes {
				vals[i] = pattern(n, byte(i+1))
			}
			ar := wire.NewArena()
			ar.Threshold = 512
			m := cf.NewListBuffers(ar)
			l := m.InitMessages(len(vals))
			held := make([]mem.Buf, len(vals))
			for i, v := range vals {
				held[i] = memtest.Alloc(t, tc.pools[i], v)
				l.AppendBuf(held[i])
			}
			want, err := wire.Flatten(m, []byte("hd"))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.SendObject(b.LocalAddr(), []byte("hd"), m); err != nil {
				t.Fatal(err)
			}
			if err := ar.Reset(); err != nil { // the datapath holds its own references
				t.Fatal(err)
			}
			_ = a.Flush()
			st := a.Stats()
			if int(st.ZeroCopyEntries) != tc.wantZC || int(st.ZeroCopyBytes) != tc.wantZCBy ||
				st.CopiedBytes+st.ZeroCopyBytes != uint64(len(want)) || int(st.CopiedEntries+st.ZeroCopyEntries) < 1+len(vals)-1 {
				t.Errorf("stats %+v: want %d entries / %d bytes zero-copy, %d bytes in all", st, tc.wantZC, tc.wantZCBy, len(want))
			}
			p := recvSegs(t, b)
			if got := p.AppendTo(nil); !bytes.Equal(got, want) {
				t.Fatalf("received %d bytes, want wire.Flatten's %d", len(got), len(want))
			}
			if len(p.Segs) > tc.maxSegs {
				t.Errorf("%d segments > MaxSegments %d", len(p.Segs), tc.maxSegs)
			}
			// While the receiver holds the packet, the sender holds one
			// reference per descriptor and none per copied value.
			extra := 0
			for _, h := range held {
				extra += h.Refs() - 1
			}
			if extra != tc.wantZC {
				t.Errorf("sender holds %d references while the packet is received, want %d", extra, tc.wantZC)
			}
			memtest.Release(t, p.Hold)
			for i, h := range held {
				waitRefs(t, a, b, h, 1, i)
				memtest.Release(t, h)
			}
			if e := a.Stats().Errors; e != 0 {
				t.Errorf("%d sender errors", e)
			}
		})
	}
}

// waitRefs flushes both endpoints until h has refs references.
func waitRefs(t *testing.T, a, b *shm.Endpoint, h mem.Buf, refs, i int) {
	t.Helper()
	for range 10000 {
		if h.Refs() == refs {
			return
		}
		_ = b.Flush()
		_ = a.Flush()
		_ = a.Wait(100_000) // 100 µs
	}
	t.Fatalf("value %d: %d references, want %d", i, h.Refs(), refs)
}

// TestSendObjectGeneratedErrors: a generated message that is too large,
// a head over MaxPayload, or a message whose arena was Reset is refused
// with the datapath's errors; nothing is posted, no reference is kept,
// and the endpoint keeps sending.
func TestSendObjectGeneratedErrors(t *testing.T) {
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
	a, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), MaxPayload: 4000, Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}, Slots: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, _ := openTest(t, netip.AddrPort{})
	dst := b.LocalAddr()
	ar := wire.NewArena()
	ar.Threshold = 512
	v := memtest.Alloc(t, app, pattern(3000, 7))
	for _, tc := range []struct {
		name string
		head []byte
		vals [][]byte
		want error
	}{
		{"TooLargeZeroCopy", nil, [][]byte{pattern(3000, 1), pattern(1500, 2)}, datapath.ErrTooLarge},
		{"TooLargeCopied", nil, [][]byte{pattern(300, 1), pattern(300, 2), pattern(300, 3), pattern(300, 4), pattern(300, 5),
			pattern(300, 6), pattern(300, 7), pattern(300, 8), pattern(300, 9), pattern(300, 10), pattern(300, 11), pattern(300, 12),
			pattern(300, 13), pattern(300, 14)}, datapath.ErrTooLarge},
		{"HeadTooLarge", make([]byte, 4001), nil, datapath.ErrTooLarge},
	} {
		m := listOf(t, ar, app, tc.vals)
		l, _ := m.GetMessages()
		l.AppendBuf(v) // one entry the test still holds: its count must come back
		if err := a.SendObject(dst, tc.head, m); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if err := ar.Reset(); err != nil {
			t.Fatal(err)
		}
		if v.Refs() != 1 {
			t.Errorf("%s: %d references after the refused send, want 1", tc.name, v.Refs())
		}
	}
	// A message of a Reset arena.
	stale := listOf(t, ar, app, [][]byte{pattern(2048, 1)})
	if err := ar.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := a.SendObject(dst, nil, stale); !errors.Is(err, wire.ErrArenaReset) {
		t.Errorf("message of a Reset arena: %v, want wire.ErrArenaReset", err)
	}
	if a.Stats().TxPackets != 0 {
		t.Errorf("%d packets posted by refused sends", a.Stats().TxPackets)
	}
	// The only slot was freed every time: a good message goes through.
	m := listOf(t, ar, app, [][]byte{pattern(2048, 3)})
	want, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SendObject(dst, nil, m); err != nil {
		t.Fatal(err)
	}
	if err := ar.Reset(); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	p := recvSegs(t, b)
	if !bytes.Equal(p.AppendTo(nil), want) {
		t.Error("payload differs")
	}
	memtest.Release(t, p.Hold)
	memtest.Release(t, v)
}

// TestSendObjectAdjacentEntries: zero-copy entries that follow each other
// in memory (two values of one buffer, as in a decoded request) go out as
// one descriptor, and entries of one item share one reference (the third,
// a separate descriptor of the same item, too); the receiver decodes
// both values in place.
func TestSendObjectAdjacentEntries(t *testing.T) {
	a, app := openTest(t, netip.AddrPort{})
	b, _ := openTest(t, netip.AddrPort{})
	whole := memtest.Alloc(t, app, append(pattern(2048, 1), pattern(3000, 2)...))
	ar := wire.NewArena()
	ar.Threshold = 512
	m := cf.NewListBuffers(ar)
	l := m.InitMessages(3)
	l.AppendBuf(whole.Slice(0, 2048))
	l.AppendBuf(whole.Slice(2048, 3000))
	l.AppendBuf(whole.Slice(0, 2048)) // not adjacent to the previous one: a second descriptor
	if err := a.SendObject(b.LocalAddr(), []byte("h"), m); err != nil {
		t.Fatal(err)
	}
	if err := ar.Reset(); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	if st := a.Stats(); st.ZeroCopyEntries != 3 || st.ZeroCopyBytes != 2*2048+3000 {
		t.Errorf("stats %+v: want 3 zero-copy entries", st)
	}
	p := recvSegs(t, b)
	if len(p.Segs) != 3 || len(p.Segs[1]) != 2048+3000 || len(p.Segs[2]) != 2048 {
		lens := []int{}
		for _, s := range p.Segs {
			lens = append(lens, len(s))
		}
		t.Errorf("segments of %v bytes, want head, 5048, 2048", lens)
	}
	if whole.Refs() != 2 {
		t.Errorf("%d references while received, want 2 (the test's and the packet's one per item)", whole.Refs())
	}
	ra := wire.NewArena()
	got := cf.NewListBuffers(ra)
	if err := wire.DecodeSegments(got, p.Segs, 1, p.Hold); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, p.Hold)
	gl, err := got.GetMessages()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{pattern(2048, 1), pattern(3000, 2), pattern(2048, 1)} {
		if g := gl.At(i); !bytes.Equal(g, want) || mem.IsRegistered(g) {
			t.Errorf("value %d differs or was copied", i)
		}
	}
	if err := ra.Reset(); err != nil {
		t.Fatal(err)
	}
	waitRefs(t, a, b, whole, 1, 0)
	memtest.Release(t, whole)
	if e := a.Stats().Errors; e != 0 {
		t.Errorf("%d sender errors", e)
	}
}
